/*  drv_s3_ledger: the uploads a killed process left open are adopted by
    the next, those it ended are not, and a live process's never are. */
#include "drv_s3_ledger.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct {
    char found[8][200];
    int count;
} found_t;

static void s_found(void *arg, const char *key, const char *upload_id)
{
    found_t *f = arg;
    snprintf(f->found[f->count++ % 8], sizeof f->found[0], "%s %s", upload_id, key);
}

//  A child that writes down three uploads, ends one and waits to be killed;
//  its pid once it has written them.
static pid_t s_child(const char *base)
{
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        drv_s3_ledger_t ledger;
        char why[300];
        if (drv_s3_ledger_open(&ledger, base, why, sizeof why) != 0) {
            _exit(1);
        }
        drv_s3_ledger_begun(&ledger, "logs/year=2026/a.ndjson.gz", "id-1");
        drv_s3_ledger_begun(&ledger, "logs/b c.ndjson.gz", "id-2");
        drv_s3_ledger_begun(&ledger, "logs/c.ndjson.gz", "id-3");
        drv_s3_ledger_ended(&ledger, "id-2");
        if (write(ready[1], "x", 1) != 1) {
            _exit(1);
        }
        pause();
        _exit(0);
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    close(ready[1]);
    return pid;
}

static void test_a_dead_processes_open_uploads_are_adopted(void **state)
{
    (void)state;
    char dir[] = "/tmp/drv-s3-ledger-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char base[300];
    snprintf(base, sizeof base, "%s/s3-default.a.0.s3", dir);
    pid_t pid = s_child(base);
    drv_s3_ledger_t ledger;
    char why[300];
    assert_int_equal(drv_s3_ledger_open(&ledger, base, why, sizeof why), 0);
    found_t found = {0};
    drv_s3_ledger_adopt(&ledger, base, s_found, &found);
    assert_int_equal(found.count, 0); // alive: its lock is held
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    drv_s3_ledger_adopt(&ledger, base, s_found, &found);
    assert_int_equal(found.count, 2);
    assert_string_equal(found.found[0], "id-1 logs/year=2026/a.ndjson.gz");
    assert_string_equal(found.found[1], "id-3 logs/c.ndjson.gz");
    //  Adopted: written into this ledger, the dead one's file gone; so a
    //  process after this one, were it killed now, would find them again.
    drv_s3_ledger_ended(&ledger, "id-1");
    assert_int_equal(ledger.open, 1);
    drv_s3_ledger_adopt(&ledger, base, s_found, &found);
    assert_int_equal(found.count, 2);
    drv_s3_ledger_close(&ledger); // id-3 still open: the file stays
    drv_s3_ledger_t next;
    assert_int_equal(drv_s3_ledger_open(&next, base, why, sizeof why), 0);
    drv_s3_ledger_adopt(&next, base, s_found, &found);
    assert_int_equal(found.count, 3);
    assert_string_equal(found.found[2], "id-3 logs/c.ndjson.gz");
    drv_s3_ledger_ended(&next, "id-3");
    drv_s3_ledger_close(&next); // nothing open: no file left
    char command[400];
    snprintf(command, sizeof command, "rmdir %s", dir);
    assert_int_equal(system(command), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_dead_processes_open_uploads_are_adopted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
