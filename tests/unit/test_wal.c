/*  drv_wal, the write-ahead log of an instance's inputs (issue 25), on real
    files: it is a queue (what is appended is read back in order, also
    while more is appended, and an entry the caller fed at once is not read
    again); what was not read comes back after a reopen; settled segments
    go; a torn tail is cut; a flipped byte or a cut in an older segment
    ends that segment there, the cut bytes kept in quarantine; CRC32C is
    the Castagnoli checksum (RFC 3720's check value). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "wal_fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int64_t s_append(drv_wal_t *wal, int64_t number, bool read)
{
    char payload[64], err[300];
    int len = snprintf(payload, sizeof payload, "input %lld", (long long)number);
    int64_t got = drv_wal_append(wal, 1000 + number, (uint32_t)number % 7, payload, (size_t)len, read, err, sizeof err);
    if (got < 0) {
        fail_msg("append: %s", err);
    }
    assert_int_equal(got, number);
    return got;
}

//  Reads everything left and checks it is inputs first..last in order.
static void s_expect_read(drv_wal_t *wal, int64_t first, int64_t last)
{
    int64_t want = first;
    drv_wal_entry_t entry;
    char err[300];
    int rc;
    while ((rc = drv_wal_next(wal, &entry, err, sizeof err)) == 1) {
        char expect[64];
        int n = snprintf(expect, sizeof expect, "input %lld", (long long)want);
        assert_int_equal(entry.number, want);
        assert_int_equal(entry.time_ms, 1000 + want);
        assert_int_equal(entry.records, (uint32_t)want % 7);
        assert_int_equal(entry.len, (size_t)n);
        assert_memory_equal(entry.data, expect, entry.len);
        want++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(want, last + 1);
    assert_false(drv_wal_unread(wal));
}

//  Segments in dir (spares: the recycled ones waiting, when spares is set).
static int s_count(const char *dir, bool spares)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        bool spare = strncmp(e->d_name, "spare-", 6) == 0;
        n += (strstr(e->d_name, ".log") || strstr(e->d_name, ".wal")) && spare == spares;
    }
    if (d) {
        closedir(d);
    }
    return n;
}

static int s_files(const char *dir)
{
    return s_count(dir, false);
}

static int s_ended_synced;

static void s_count_ended_synced(const char *step)
{
    s_ended_synced += strcmp(step, "ended synced") == 0;
}

//  sync: none: a segment that fills is closed, not synced on the loop when
//  the next one ends (as a log with a sync thread leaves it to the thread).
static void test_a_log_nothing_syncs_syncs_no_full_segment(void **state)
{
    (void)state;
    drv_wal_crash_hook = s_count_ended_synced;
    for (int never = 0; never < 2; never++) {
        drv_wal_t *wal = wal_open(100);
        if (never) {
            drv_wal_never_synced(wal);
        }
        s_ended_synced = 0;
        int64_t first = drv_wal_last(wal) + 1;
        for (int64_t i = first; i < first + 20; i++) {
            s_append(wal, i, true);
        }
        assert_true(s_files(s_dir) > 3); // segments filled one after another
        assert_int_equal(s_ended_synced > 0, !never);
        drv_wal_close(&wal);
    }
    drv_wal_crash_hook = NULL;
}

static void test_crc32c_is_castagnoli(void **state)
{
    (void)state;
    assert_int_equal(drv_crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(drv_crc32c(drv_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u); // continued
}

static void test_unread_inputs_come_back_in_order_across_segments(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(100); // a few entries per segment
    assert_int_equal(drv_wal_last(wal), 0);
    for (int64_t i = 1; i <= 20; i++) {
        s_append(wal, i, false);
    }
    char err[300];
    assert_true(drv_wal_dirty(wal));
    assert_int_equal(drv_wal_sync(wal, err, sizeof err), 0);
    assert_false(drv_wal_dirty(wal));
    assert_true(s_files(s_dir) > 3);
    assert_int_equal(drv_wal_unread_since(wal), 1001);
    drv_wal_close(&wal);
    wal = wal_open(100);
    assert_int_equal(drv_wal_last(wal), 20);
    int64_t records = 0;
    for (int64_t i = 1; i <= 20; i++) {
        records += i % 7;
    }
    assert_int_equal(drv_wal_found_records(wal), records); // from the headers, before anything is read
    assert_true(drv_wal_unread(wal));
    s_expect_read(wal, 1, 20);
    assert_int_equal(drv_wal_unread_since(wal), -1);
    s_append(wal, 21, false); // numbering goes on after what was found
    s_expect_read(wal, 21, 21);
    drv_wal_close(&wal);
}

static void test_it_is_a_queue_and_what_was_fed_at_once_is_not_read(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(100);
    s_append(wal, 1, true); // nothing unread: fed at once
    assert_false(drv_wal_unread(wal));
    s_append(wal, 2, false); // held back (the pipeline was busy)
    s_append(wal, 3, true);  // behind 2: it must wait its turn
    assert_true(drv_wal_unread(wal));
    s_expect_read(wal, 2, 3);
    for (int64_t i = 4; i <= 12; i++) { // across segments, read as they come
        s_append(wal, i, false);
        s_expect_read(wal, i, i);
    }
    s_append(wal, 13, true);
    assert_false(drv_wal_unread(wal));
    drv_wal_settled(wal, 13);
    char err[300];
    drv_wal_sync(wal, err, sizeof err);
    drv_wal_settled(wal, 13);
    assert_int_equal(drv_wal_bytes(wal), 0);
    assert_int_equal(s_files(s_dir), 1);                                 // the one appended to is kept, written on
    assert_true(s_count(s_dir, true) >= 1 && s_count(s_dir, true) <= 4); // the others wait to be written over
    s_append(wal, 14, false);
    s_expect_read(wal, 14, 14);
    drv_wal_close(&wal);
    wal = wal_open(100); // the settled mark: only 14 comes back
    s_expect_read(wal, 14, 14);
    drv_wal_close(&wal);
}

static void test_settled_segments_are_recycled(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(100);
    for (int64_t i = 1; i <= 20; i++) {
        s_append(wal, i, true);
    }
    char err[300];
    drv_wal_sync(wal, err, sizeof err);
    int64_t before = drv_wal_bytes(wal);
    drv_wal_settled(wal, 10);
    assert_true(drv_wal_bytes(wal) < before);
    drv_wal_close(&wal);
    wal = wal_open(100);
    //  After a reopen what was settled is not read again (the settled
    //  mark), though the segment holding 10 and 11 is still there.
    s_expect_read(wal, 11, 20);
    drv_wal_settled(wal, 20);
    assert_int_equal(drv_wal_bytes(wal), 0);
    assert_int_equal(s_files(s_dir), 0);       // found at open, never appended to: spares
    assert_int_equal(s_count(s_dir, true), 4); // four kept, the others deleted
    drv_wal_close(&wal);
}

static void test_nothing_unread_is_deleted(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(100);
    for (int64_t i = 1; i <= 20; i++) {
        s_append(wal, i, false);
    }
    char err[300];
    drv_wal_sync(wal, err, sizeof err);
    drv_wal_settled(wal, 20); // a caller's mistake: still nothing is lost
    s_expect_read(wal, 1, 20);
    drv_wal_close(&wal);
}

static char *s_only_segment(char *path, size_t cap)
{
    DIR *d = opendir(s_dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strstr(e->d_name, ".log") && strncmp(e->d_name, "spare-", 6) != 0) {
            snprintf(path, cap, "%s/%s", s_dir, e->d_name);
        }
    }
    closedir(d);
    return path;
}

static void test_a_torn_tail_is_cut_and_the_rest_read(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(1 << 20);
    for (int64_t i = 1; i <= 5; i++) {
        s_append(wal, i, false);
    }
    drv_wal_close(&wal);
    char path[256];
    s_only_segment(path, sizeof path);
    wal_flip(path, 4 * 35 + 33); // the crash came in the middle of entry 5 (35 bytes each): its end not written
    wal = wal_open(1 << 20);
    assert_int_equal(drv_wal_last(wal), 4);
    assert_true(drv_wal_damage(wal).torn_bytes > 0);
    assert_int_equal(drv_wal_damage(wal).corrupt_segments, 0);
    s_expect_read(wal, 1, 4);
    s_append(wal, 5, false); // and the log goes on
    drv_wal_close(&wal);
    assert_int_equal(s_files(s_quarantine), 1); // the cut bytes are kept, not discarded unseen
    wal = wal_open(1 << 20);
    assert_int_equal(drv_wal_last(wal), 5);
    assert_int_equal(drv_wal_damage(wal).torn_bytes, 0);
    s_expect_read(wal, 1, 5);
    drv_wal_close(&wal);
}

static void test_a_flipped_byte_ends_the_segment_there(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(1 << 20);
    for (int64_t i = 1; i <= 5; i++) {
        s_append(wal, i, false);
    }
    drv_wal_close(&wal);
    char path[256];
    s_only_segment(path, sizeof path);
    wal_flip(path, 3 * 35 + 30); // in entry 4's payload; entry 5 follows it whole: no crash did this
    wal = wal_open(1 << 20);
    assert_int_equal(drv_wal_damage(wal).corrupt_segments, 1);
    s_expect_read(wal, 1, 3); // what came before the bad entry
    assert_int_equal(s_files(s_quarantine), 1);
    drv_wal_close(&wal);
    wal = wal_open(1 << 20); // the damage is not read again
    assert_int_equal(drv_wal_damage(wal).corrupt_segments, 0);
    s_expect_read(wal, 1, 3);
    drv_wal_close(&wal);
}

static void test_damage_in_an_older_segment_is_found_when_read(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(60); // two entries per segment
    for (int64_t i = 1; i <= 6; i++) {
        s_append(wal, i, false);
    }
    drv_wal_close(&wal);
    char oldest[256], middle[256];
    snprintf(oldest, sizeof oldest, "%s/%020d.log", s_dir, 1);
    snprintf(middle, sizeof middle, "%s/%020d.log", s_dir, 3);
    struct stat st;
    assert_int_equal(stat(oldest, &st), 0);
    assert_int_equal(truncate(oldest, st.st_size - 5), 0); // no crash does this to a finished segment
    assert_int_equal(stat(middle, &st), 0);
    wal_flip(middle, 10); // entry 3's checksum
    wal = wal_open(60);
    assert_int_equal(drv_wal_damage(wal).corrupt_segments, 0); // only the newest is checked at open
    int64_t want[] = {1, 5, 6};
    drv_wal_entry_t entry;
    size_t n = 0;
    char err[300];
    while (drv_wal_next(wal, &entry, err, sizeof err) == 1) {
        assert_true(n < 3);
        assert_int_equal(entry.number, want[n++]);
    }
    assert_int_equal(n, 3);
    assert_int_equal(drv_wal_damage(wal).corrupt_segments, 2);
    assert_int_equal(s_files(s_quarantine), 2);
    drv_wal_settled(wal, 6);
    assert_int_equal(s_files(s_dir), 0);
    drv_wal_close(&wal);
}

static void test_a_flipped_byte_mid_segment_keeps_what_came_before(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(64 << 10);
    char payload[4700], err[300];
    memset(payload, 'p', sizeof payload);
    for (int i = 0; i < 60; i++) {
        assert_true(drv_wal_append(wal, 1, 20, payload, sizeof payload, false, err, sizeof err) > 0);
    }
    drv_wal_close(&wal);
    char middle[256];
    snprintf(middle, sizeof middle, "%s/%020d.log", s_dir, 15); // the second segment: 14 entries each
    struct stat st;
    assert_int_equal(stat(middle, &st), 0);
    wal_flip(middle, st.st_size / 2);
    wal = wal_open(64 << 10);
    drv_wal_entry_t entry;
    int64_t read = 0;
    while (drv_wal_next(wal, &entry, err, sizeof err) == 1) {
        read++;
    }
    assert_int_equal(drv_wal_damage(wal).corrupt_segments, 1);
    assert_true(drv_wal_damage(wal).corrupt_bytes <= st.st_size / 2 + (int64_t)sizeof payload + 28);
    assert_true(read >= 60 - 8);
    drv_wal_close(&wal);
}

static void test_a_full_log_drops_its_oldest_unread_segment(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(100); // three entries per segment (1-3, 4-6, 7-9, 10)
    for (int64_t i = 1; i <= 10; i++) {
        s_append(wal, i, false);
    }
    drv_wal_entry_t entry;
    char err[300];
    assert_int_equal(drv_wal_next(wal, &entry, err, sizeof err), 1); // 1 is being run
    int64_t before = drv_wal_bytes(wal);
    assert_int_equal(drv_wal_drop_oldest_unread(wal), 4 + 5 + 6); // 4-6: 1-3 was read from
    assert_true(drv_wal_bytes(wal) < before);
    assert_int_equal(drv_wal_drop_oldest_unread(wal), 7 % 7 + 8 % 7 + 9 % 7);
    int64_t want[] = {2, 3, 10};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(drv_wal_next(wal, &entry, err, sizeof err), 1);
        assert_int_equal(entry.number, want[i]);
    }
    assert_int_equal(drv_wal_drop_oldest_unread(wal), -1); // nothing unread but the one appended to
    drv_wal_close(&wal);
}

static void test_an_empty_newest_segment_left_by_a_crash_does_not_block_appends(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(100);
    for (int64_t i = 1; i <= 4; i++) {
        s_append(wal, i, false);
    }
    drv_wal_close(&wal);
    char path[128];
    snprintf(path, sizeof path, "%s/%020d.log", s_dir, 5); // made, then the crash came before the first write
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    assert_int_equal(ftruncate(fd, 100), 0); // at full size, nothing in it
    close(fd);
    wal = wal_open(100);
    assert_int_equal(drv_wal_last(wal), 4);
    s_append(wal, 5, false);
    s_expect_read(wal, 1, 5);
    assert_true(drv_wal_bytes(wal) > 0);
    drv_wal_close(&wal);
}

//  An exporter behind reads again what the log's own reading passed
//  (drv_wal_reader.c): from any number, across segments, while more is
//  appended; what is ahead of a position is counted in bytes and records.
static void test_a_second_reader_reads_again_from_its_own_position(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(100); // a few entries per segment
    for (int64_t i = 1; i <= 20; i++) {
        s_append(wal, i, true);
    }
    int64_t entry_bytes = 28 + (int64_t)strlen("input 10"); // header and payload, inputs 10..20
    int64_t total = drv_wal_bytes(wal);
    assert_int_equal(drv_wal_bytes_from(wal, 1), total);
    assert_int_equal(drv_wal_bytes_from(wal, 21), 0);
    assert_int_equal(drv_wal_bytes_from(wal, 10), 11 * entry_bytes);
    int64_t records = 0;
    for (int64_t i = 7; i < 12; i++) {
        records += i % 7;
    }
    assert_int_equal(drv_wal_records_between(wal, 7, 12), records);
    drv_wal_reader_t *reader = drv_wal_reader_open(wal, 7);
    drv_wal_entry_t entry;
    char err[300];
    for (int64_t want = 7; want <= 20; want++) {
        assert_int_equal(drv_wal_reader_next(reader, &entry, err, sizeof err), 1);
        assert_int_equal(entry.number, want);
        assert_int_equal(entry.time_ms, 1000 + want);
    }
    assert_int_equal(drv_wal_reader_next(reader, &entry, err, sizeof err), 0);
    s_append(wal, 21, true); // more comes: the reader goes on there
    assert_int_equal(drv_wal_reader_next(reader, &entry, err, sizeof err), 1);
    assert_int_equal(entry.number, 21);
    drv_wal_reader_close(&reader);
    //  The oldest inputs such that what is ahead fits: 3 entries' bytes from 12 on.
    int64_t skipped = 0;
    assert_int_equal(drv_wal_fit_from(wal, 12, 3 * entry_bytes, &skipped), 19);
    records = 0;
    for (int64_t i = 12; i < 19; i++) {
        records += i % 7;
    }
    assert_int_equal(skipped, records);
    //  Settled segments go under a reader: it goes on from the oldest left.
    reader = drv_wal_reader_open(wal, 2);
    drv_wal_settled(wal, 15);
    assert_int_equal(drv_wal_reader_next(reader, &entry, err, sizeof err), 1);
    assert_true(entry.number > 2 && entry.number <= 16);
    drv_wal_reader_close(&reader);
    drv_wal_close(&wal);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_is_castagnoli),
        cmocka_unit_test_setup_teardown(test_a_log_nothing_syncs_syncs_no_full_segment, wal_setup, wal_teardown),
        cmocka_unit_test_setup_teardown(test_a_second_reader_reads_again_from_its_own_position, wal_setup,
                                        wal_teardown),
        cmocka_unit_test_setup_teardown(test_unread_inputs_come_back_in_order_across_segments, wal_setup, wal_teardown),
        cmocka_unit_test_setup_teardown(test_it_is_a_queue_and_what_was_fed_at_once_is_not_read, wal_setup,
                                        wal_teardown),
        cmocka_unit_test_setup_teardown(test_settled_segments_are_recycled, wal_setup, wal_teardown),
        cmocka_unit_test_setup_teardown(test_nothing_unread_is_deleted, wal_setup, wal_teardown),
        cmocka_unit_test_setup_teardown(test_a_torn_tail_is_cut_and_the_rest_read, wal_setup, wal_teardown),
        cmocka_unit_test_setup_teardown(test_a_flipped_byte_ends_the_segment_there, wal_setup, wal_teardown),
        cmocka_unit_test_setup_teardown(test_damage_in_an_older_segment_is_found_when_read, wal_setup, wal_teardown),
        cmocka_unit_test_setup_teardown(test_a_flipped_byte_mid_segment_keeps_what_came_before, wal_setup,
                                        wal_teardown),
        cmocka_unit_test_setup_teardown(test_a_full_log_drops_its_oldest_unread_segment, wal_setup, wal_teardown),
        cmocka_unit_test_setup_teardown(test_an_empty_newest_segment_left_by_a_crash_does_not_block_appends, wal_setup,
                                        wal_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
