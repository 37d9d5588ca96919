/*  drv_wal after a crash (docs/operations.md, "Disk buffers: the log on
    disk"): segments are recycled, so what a crash leaves is an end written
    over a spare's older entries, a rename lost, a mark behind the truth.
    Checked here: a recycled segment's stale tail is never read; the
    settled mark keeps a restart from reading settled inputs again and a
    torn mark slot costs duplicates, never a loss; a log of the older
    format (.wal) is read once and replaced; sync jobs delete spares and
    make one ahead of need; and a process killed at every step of
    appending, syncing and settling leaves a log that gives back everything
    synced and not settled, once and in order. */
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
#include <sys/wait.h>
#include <unistd.h>

static int64_t s_append(drv_wal_t *wal, int64_t number, bool read)
{
    char payload[64], err[300];
    int len = snprintf(payload, sizeof payload, "input %lld", (long long)number);
    int64_t got = drv_wal_append(wal, 1000 + number, 1, payload, (size_t)len, read, err, sizeof err);
    if (got != number) {
        fail_msg("append %lld: got %lld (%s)", (long long)number, (long long)got, err);
    }
    return got;
}

//  Reads what is left: its numbers in out (at most cap), their count.
//  Every entry's payload is checked against its number.
static size_t s_read_all(drv_wal_t *wal, int64_t *out, size_t cap)
{
    drv_wal_entry_t entry;
    char err[300];
    size_t n = 0;
    int rc;
    while ((rc = drv_wal_next(wal, &entry, err, sizeof err)) == 1) {
        char expect[64];
        int len = snprintf(expect, sizeof expect, "input %lld", (long long)entry.number);
        assert_int_equal(entry.len, (size_t)len);
        assert_memory_equal(entry.data, expect, entry.len);
        assert_true(n < cap);
        out[n++] = entry.number;
    }
    assert_int_equal(rc, 0);
    return n;
}

static void s_expect_read(drv_wal_t *wal, int64_t first, int64_t last)
{
    int64_t got[256];
    size_t n = s_read_all(wal, got, 256);
    assert_int_equal(n, (size_t)(last - first + 1));
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(got[i], first + (int64_t)i);
    }
}

//  Files in the log's directory whose names start with prefix and end with suffix.
static int s_count(const char *prefix, const char *suffix)
{
    DIR *d = opendir(s_dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name), tail = strlen(suffix);
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0 && len > tail &&
             strcmp(e->d_name + len - tail, suffix) == 0;
    }
    if (d) {
        closedir(d);
    }
    return n;
}

static void test_a_recycled_segments_older_entries_are_never_read(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(200); // about six entries of 35 bytes per segment
    for (int64_t i = 1; i <= 30; i++) {
        s_append(wal, i, true);
        drv_wal_settled(wal, i);
    }
    assert_true(s_count("spare-", ".log") >= 1 && s_count("spare-", ".log") <= 4);
    assert_int_equal(s_count("0", ".log"), 1); // the one appended to, kept
    struct stat st;
    char path[128];
    snprintf(path, sizeof path, "%s/%020d.log", s_dir, 25);
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size >= 200); // made at full size
    drv_wal_close(&wal);
    wal = wal_open(200);
    assert_false(drv_wal_unread(wal)); // everything was settled: nothing comes back
    for (int64_t i = 31; i <= 40; i++) {
        s_append(wal, i, false); // written over spares, past their older entries' start
    }
    drv_wal_close(&wal);
    assert_true(s_count("", ".log") <= 7); // live segments and four spares: the files are reused
    wal = wal_open(200);
    assert_int_equal(drv_wal_last(wal), 40);
    s_expect_read(wal, 31, 40); // not one of the older entries behind them
    assert_int_equal(drv_wal_damage(wal).torn_bytes, 0);
    assert_int_equal(drv_wal_damage(wal).corrupt_segments, 0);
    drv_wal_close(&wal);
}

//  Entries of one length, so that a spare's older entries start exactly
//  where the new ones end: whole, their checksums good, numbered lower.
static void s_append_fixed(drv_wal_t *wal, int64_t number, bool read)
{
    char payload[32], err[300];
    int len = snprintf(payload, sizeof payload, "in %06lld", (long long)number);
    assert_int_equal(drv_wal_append(wal, 1, 1, payload, (size_t)len, read, err, sizeof err), number);
}

static void test_a_whole_older_entry_right_after_the_newest_ones_ends_the_segment(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(200); // six 37-byte entries a segment
    for (int64_t i = 1; i <= 21; i++) {
        s_append_fixed(wal, i, true);
        drv_wal_settled(wal, i);
    }
    drv_wal_close(&wal); // not synced: the segment appended to stays, with what it holds settled
    wal = wal_open(200);
    assert_false(drv_wal_unread(wal));
    assert_int_equal(drv_wal_bytes(wal), 0); // nothing past its entries counted
    for (int64_t i = 22; i <= 29; i++) {
        s_append_fixed(wal, i, false); // over spares: their older entries follow, aligned
    }
    drv_wal_close(&wal);
    wal = wal_open(200);
    assert_int_equal(drv_wal_bytes(wal), 8 * 37);
    drv_wal_entry_t entry;
    char err[300];
    for (int64_t want = 22; want <= 29; want++) {
        assert_int_equal(drv_wal_next(wal, &entry, err, sizeof err), 1);
        assert_int_equal(entry.number, want);
    }
    assert_int_equal(drv_wal_next(wal, &entry, err, sizeof err), 0);
    assert_int_equal(drv_wal_damage(wal).corrupt_segments, 0);
    assert_int_equal(drv_wal_damage(wal).torn_bytes, 0);
    drv_wal_close(&wal);
}

//  A settled segment written over as a spare after a crash lost its renames
//  comes back under its old name, numbered past it: a spare again, its
//  bytes not counted as the log's.
static void test_a_segment_numbered_past_its_name_is_a_spare_and_not_counted(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(100); // three entries a segment: 1-3, 4-6, 7-9, 10-12
    for (int64_t i = 1; i <= 12; i++) {
        s_append(wal, i, false);
    }
    drv_wal_close(&wal);
    wal = wal_open(100);
    int64_t bytes = drv_wal_bytes(wal);
    drv_wal_close(&wal);
    char from[128], to[128], cmd[300];
    snprintf(from, sizeof from, "%s/%020d.log", s_dir, 7);
    snprintf(to, sizeof to, "%s/%020d.log", s_dir, 0);
    snprintf(cmd, sizeof cmd, "cp %s %s", from, to);
    assert_int_equal(system(cmd), 0);
    wal = wal_open(100);
    assert_int_equal(drv_wal_bytes(wal), bytes);
    assert_int_equal(s_count("spare-", ".log"), 1);
    s_expect_read(wal, 1, 12);
    assert_int_equal(drv_wal_damage(wal).corrupt_segments, 0);
    drv_wal_close(&wal);
}

//  A mark past any number a log can reach is damage: ignored, so nothing
//  is skipped and numbering does not overflow.
static void test_a_mark_past_any_reachable_number_is_ignored(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(1 << 20);
    for (int64_t i = 1; i <= 3; i++) {
        s_append(wal, i, false);
    }
    drv_wal_close(&wal);
    unsigned char slot[28] = "DRVMARK1";
    uint64_t seq = 9; // newer than the slots written (an odd seq: the slot at 512)
    for (int i = 0; i < 8; i++) {
        slot[8 + i] = (unsigned char)((uint64_t)INT64_MAX >> (8 * i));
        slot[16 + i] = (unsigned char)(seq >> (8 * i));
    }
    uint32_t crc = drv_crc32c(0, slot, 24);
    for (int i = 0; i < 4; i++) {
        slot[24 + i] = (unsigned char)(crc >> (8 * i));
    }
    char mark[128];
    snprintf(mark, sizeof mark, "%s/settled", s_dir);
    int fd = open(mark, O_WRONLY);
    assert_int_equal(pwrite(fd, slot, sizeof slot, 512), (ssize_t)sizeof slot);
    close(fd);
    wal = wal_open(1 << 20);
    s_expect_read(wal, 1, 3);
    s_append(wal, 4, false);
    drv_wal_close(&wal);
}

static void test_the_settled_mark_keeps_settled_inputs_from_coming_back(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(1 << 20);
    for (int64_t i = 1; i <= 10; i++) {
        s_append(wal, i, true);
    }
    drv_wal_settled(wal, 4); // seq 1: the slot at 512
    drv_wal_settled(wal, 7); // seq 2: the slot at 0
    drv_wal_close(&wal);
    wal = wal_open(1 << 20);
    s_expect_read(wal, 8, 10);
    drv_wal_close(&wal);
    char mark[128];
    snprintf(mark, sizeof mark, "%s/settled", s_dir);
    wal_flip(mark, 10); // the newer slot torn: the older one says 4
    wal = wal_open(1 << 20);
    s_expect_read(wal, 5, 10); // delivered twice, never lost
    drv_wal_close(&wal);
    wal_flip(mark, 512 + 10); // both: everything comes back
    wal = wal_open(1 << 20);
    s_expect_read(wal, 1, 10);
    drv_wal_close(&wal);
}

//  A log of the format before recycling: the same entries, one file per
//  segment named .wal, ended by the file's end. Made from a log written
//  now: its bytes cut at the entries' end and split.
static void s_make_old_format(int64_t count, int64_t split)
{
    drv_wal_t *wal = wal_open(1 << 20);
    for (int64_t i = 1; i <= count; i++) {
        s_append(wal, i, false);
    }
    drv_wal_close(&wal);
    char log[128], older[128], newer[128], mark[128];
    snprintf(log, sizeof log, "%s/%020d.log", s_dir, 1);
    snprintf(older, sizeof older, "%s/%020d.wal", s_dir, 1);
    snprintf(newer, sizeof newer, "%s/%020lld.wal", s_dir, (long long)split + 1);
    snprintf(mark, sizeof mark, "%s/settled", s_dir);
    char bytes[4096];
    int in = open(log, O_RDONLY);
    assert_int_equal(read(in, bytes, (size_t)count * 35), count * 35); // inputs 1..9: 35 bytes each
    close(in);
    int a = open(older, O_WRONLY | O_CREAT, 0600), b = open(newer, O_WRONLY | O_CREAT, 0600);
    assert_int_equal(write(a, bytes, (size_t)split * 35), split * 35);
    assert_int_equal(write(b, bytes + split * 35, (size_t)(count - split) * 35), (count - split) * 35);
    close(a);
    close(b);
    unlink(log);
    unlink(mark);
}

static void test_a_log_of_the_older_format_is_read_once_and_replaced(void **state)
{
    (void)state;
    s_make_old_format(9, 5);
    char newer[128];
    snprintf(newer, sizeof newer, "%s/%020d.wal", s_dir, 6);
    struct stat st;
    assert_int_equal(stat(newer, &st), 0);
    assert_int_equal(truncate(newer, st.st_size - 3), 0); // its end torn, as such a log tore
    drv_wal_t *wal = wal_open(1 << 20);
    assert_int_equal(drv_wal_last(wal), 8);
    assert_true(drv_wal_damage(wal).torn_bytes > 0);
    assert_int_equal(drv_wal_found_records(wal), 8);
    s_expect_read(wal, 1, 8);
    s_append(wal, 9, true); // appended to a segment of the new format
    assert_int_equal(s_count("0", ".log"), 1);
    drv_wal_settled(wal, 9);
    assert_int_equal(s_count("", ".wal"), 0); // read once: spares now
    drv_wal_close(&wal);
    wal = wal_open(1 << 20);
    assert_false(drv_wal_unread(wal));
    s_append(wal, 10, false);
    s_expect_read(wal, 10, 10);
    drv_wal_close(&wal);
}

static void test_sync_jobs_delete_spares_and_make_one_ahead_of_need(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(100); // three entries per segment
    drv_wal_defer_deletes(wal);
    for (int64_t i = 1; i <= 20; i++) {
        s_append(wal, i, true);
    }
    drv_wal_settled(wal, 20);
    int before = s_count("", ".log");
    assert_true(before > 5); // four spares, the one appended to, the ones still to delete
    assert_true(drv_wal_chores(wal));
    drv_wal_sync_job_t job;
    char err[300];
    drv_wal_sync_start(wal, &job);
    assert_false(drv_wal_sync_empty(&job));
    assert_int_equal(drv_wal_sync_run(&job, err, sizeof err), 0);
    assert_int_equal(s_count("", ".log"), before); // deleted only after the answers
    drv_wal_sync_release(&job);
    drv_wal_sync_finished(wal, &job, true);
    assert_int_equal(s_count("spare-", ".log"), 4);
    assert_int_equal(s_count("0", ".log"), 1);
    int64_t last = 20;
    job.prepare[0] = '\0';
    while (!job.prepare[0] && last < 40) { // the spares are written over, then a new segment fills
        s_append(wal, ++last, true);
        drv_wal_sync_start(wal, &job);
        assert_int_equal(drv_wal_sync_run(&job, err, sizeof err), 0);
        drv_wal_sync_release(&job);
        drv_wal_sync_finished(wal, &job, true);
    }
    assert_true(job.prepared); // made while it was half full, by the job
    assert_int_equal(s_count("spare-", ".log"), 1);
    char path[128];
    snprintf(path, sizeof path, "%s/%s", s_dir, job.prepare);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size >= 100);
    drv_wal_close(&wal);
    wal = wal_open(100);
    s_expect_read(wal, 21, last);
    drv_wal_close(&wal);
}

static void test_an_idle_log_lets_its_spares_go_but_one(void **state)
{
    (void)state;
    drv_wal_t *wal = wal_open(100);
    for (int64_t i = 1; i <= 20; i++) {
        s_append(wal, i, true);
    }
    drv_wal_settled(wal, 20);
    assert_int_equal(s_count("spare-", ".log"), 4);
    drv_wal_tick(wal, 1000); // spares were used: the quiet starts now
    drv_wal_tick(wal, 60999);
    assert_int_equal(s_count("spare-", ".log"), 4);
    for (int64_t i = 21; i <= 23; i++) { // three entries fill a segment: one is taken, the quiet starts again
        s_append(wal, i, true);
    }
    drv_wal_tick(wal, 61000);
    drv_wal_tick(wal, 120999);
    assert_int_equal(s_count("spare-", ".log"), 3);
    drv_wal_tick(wal, 121000);
    assert_int_equal(s_count("spare-", ".log"), 1);
    s_append(wal, 24, true);
    drv_wal_close(&wal);
    wal = wal_open(100);
    s_expect_read(wal, 21, 24);
    drv_wal_close(&wal);
}

//  ---------------------------------------------------------------- killed at each step

static int s_steps_left;

static void s_crash_at(const char *step)
{
    (void)step;
    if (--s_steps_left == 0) {
        _exit(0); // as SIGKILL: nothing closed, nothing synced
    }
}

//  The child: appends 1..40, syncs every second one, reads what comes and
//  settles two behind every third. It tells the parent (pipe) what is
//  durable and what it is about to settle, before a step can kill it.
static void s_child(int out, int steps)
{
    s_steps_left = steps;
    drv_wal_crash_hook = s_crash_at;
    char err[300];
    drv_wal_t *wal = drv_wal_open(s_dir, s_quarantine, 150, err, sizeof err);
    if (!wal) {
        _exit(2);
    }
    drv_wal_entry_t entry;
    for (int64_t i = drv_wal_last(wal) + 1, n = 0; n < 40; i++, n++) {
        char payload[64];
        int len = snprintf(payload, sizeof payload, "input %lld", (long long)i);
        if (drv_wal_append(wal, 1000 + i, 1, payload, (size_t)len, false, err, sizeof err) != i) {
            _exit(3);
        }
        if (i % 2 == 0) {
            if (drv_wal_sync(wal, err, sizeof err) != 0) {
                _exit(4);
            }
            int64_t said[2] = {0, i}; // durable up to i
            if (write(out, said, sizeof said) != sizeof said) {
                _exit(5);
            }
        }
        while (drv_wal_next(wal, &entry, err, sizeof err) == 1) {
        }
        if (i % 3 == 0) {
            int64_t said[2] = {1, i - 2}; // settling up to i - 2
            if (write(out, said, sizeof said) != sizeof said) {
                _exit(5);
            }
            drv_wal_settled(wal, i - 2);
        }
    }
    _exit(1); // every step passed: the steps asked for were too many
}

static void test_a_kill_at_every_step_keeps_everything_synced_and_unsettled(void **state)
{
    (void)state;
    int64_t durable = 0, settling = 0, highest = 0;
    int steps;
    for (steps = 1; steps < 400; steps++) {
        int pipe_fds[2];
        assert_int_equal(pipe(pipe_fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(pipe_fds[0]);
            s_child(pipe_fds[1], steps);
        }
        close(pipe_fds[1]);
        int64_t said[2];
        while (read(pipe_fds[0], said, sizeof said) == sizeof said) {
            if (said[0] == 0) {
                durable = said[1] > durable ? said[1] : durable;
            } else {
                settling = said[1] > settling ? said[1] : settling;
            }
        }
        close(pipe_fds[0]);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 1) {
            break; // every step of the child's run was a place to die
        }
        assert_int_equal(WEXITSTATUS(status), 0);
        //  What the log gives back: in order, each once, every input synced
        //  and not settled among them, none past what was appended.
        drv_wal_t *wal = wal_open(150);
        int64_t got[512];
        size_t n = s_read_all(wal, got, 512);
        int64_t want = settling + 1;
        for (size_t i = 0; i < n; i++) {
            assert_true(i == 0 || got[i] == got[i - 1] + 1);
            if (got[i] >= want && got[i] <= durable) {
                assert_int_equal(got[i], want);
                want++;
            }
        }
        if (want <= durable) {
            fail_msg("killed at step %d: input %lld was synced, not settled, and is not in the log", steps,
                     (long long)want);
        }
        assert_true(drv_wal_last(wal) >= highest); // numbers never go back
        highest = drv_wal_last(wal);
        //  Settled now, as a restarted instance would once exported; the next child goes on from here.
        drv_wal_settled(wal, drv_wal_last(wal));
        settling = durable = drv_wal_last(wal);
        drv_wal_close(&wal);
    }
    assert_true(steps > 90); // the run has about a hundred steps: each was a place to die
}

int main(void)
{
    drv_wal_crash_hook = NULL;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_recycled_segments_older_entries_are_never_read, wal_setup, wal_teardown),
        cmocka_unit_test_setup_teardown(test_a_whole_older_entry_right_after_the_newest_ones_ends_the_segment,
                                        wal_setup, wal_teardown),
        cmocka_unit_test_setup_teardown(test_a_segment_numbered_past_its_name_is_a_spare_and_not_counted, wal_setup,
                                        wal_teardown),
        cmocka_unit_test_setup_teardown(test_a_mark_past_any_reachable_number_is_ignored, wal_setup, wal_teardown),
        cmocka_unit_test_setup_teardown(test_the_settled_mark_keeps_settled_inputs_from_coming_back, wal_setup,
                                        wal_teardown),
        cmocka_unit_test_setup_teardown(test_a_log_of_the_older_format_is_read_once_and_replaced, wal_setup,
                                        wal_teardown),
        cmocka_unit_test_setup_teardown(test_sync_jobs_delete_spares_and_make_one_ahead_of_need, wal_setup,
                                        wal_teardown),
        cmocka_unit_test_setup_teardown(test_an_idle_log_lets_its_spares_go_but_one, wal_setup, wal_teardown),
        cmocka_unit_test_setup_teardown(test_a_kill_at_every_step_keeps_everything_synced_and_unsettled, wal_setup,
                                        wal_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
