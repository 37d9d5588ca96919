/*  Lock files held while a process lives (drv_file_lock_in), as the file
    reader's members use them (drv_checkpoint_join, _joined, _rank): a
    file is locked before it appears under its name, a live holder's is
    never replaced, a dead one's is, and a member whose file was removed
    from under it sees so and joins again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "drover/drv_file.h"
#include "drv_checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char s_dir[64];

static int s_setup(void **state)
{
    (void)state;
    snprintf(s_dir, sizeof s_dir, "/tmp/drv-members-XXXXXX");
    return mkdtemp(s_dir) ? 0 : -1;
}

static int s_teardown(void **state)
{
    (void)state;
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", s_dir);
    return system(command) == 0 ? 0 : -1;
}

//  A child that takes name and holds it until killed: its pid, once held.
static pid_t s_holder(const char *name)
{
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char held = drv_file_lock_in(s_dir, name) >= 0 ? 'y' : 'n';
        if (write(ready[1], &held, 1) != 1) {
            _exit(1);
        }
        for (;;) {
            pause();
        }
    }
    char held;
    assert_int_equal(read(ready[0], &held, 1), 1);
    assert_int_equal(held, 'y');
    close(ready[0]);
    close(ready[1]);
    return pid;
}

static void s_kill(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

//  How many joining.* files dir holds.
static int s_joining_files(void)
{
    DIR *d = opendir(s_dir);
    assert_non_null(d);
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        count += strncmp(entry->d_name, "joining.", 8) == 0;
    }
    closedir(d);
    return count;
}

//  dir/name made now, or ago_s seconds ago; its descriptor.
static int s_made(const char *name, int ago_s)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", s_dir, name);
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    struct timespec times[2] = {{.tv_sec = time(NULL) - ago_s}, {.tv_sec = time(NULL) - ago_s}};
    assert_int_equal(futimens(fd, times), 0);
    return fd;
}

static void test_a_dead_joiners_file_goes_a_live_or_fresh_one_stays(void **state)
{
    (void)state;
    close(s_made("joining.4242.0.1", 120));     // a joiner killed between making and renaming it
    close(s_made("joining.4243.0.1", 0));       // one a joiner is about to lock
    int held = s_made("joining.4244.0.1", 120); // one a stopped joiner still holds
    assert_int_equal(flock(held, LOCK_EX | LOCK_NB), 0);
    int fd = drv_file_lock_in(s_dir, "member.9");
    assert_true(fd >= 0);
    char path[256];
    snprintf(path, sizeof path, "%s/joining.4242.0.1", s_dir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/joining.4243.0.1", s_dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/joining.4244.0.1", s_dir);
    assert_int_equal(access(path, F_OK), 0);
    assert_int_equal(s_joining_files(), 2);
    close(held);
    close(fd);
}

static void test_locked_before_it_is_named_never_over_a_live_one(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/member.7", s_dir);
    pid_t holder = s_holder("member.7");
    int probe = open(path, O_RDWR); // what a sweeper does: the file is there, and held
    assert_true(probe >= 0);
    assert_int_equal(flock(probe, LOCK_EX | LOCK_NB), -1);
    assert_int_equal(errno, EWOULDBLOCK);
    close(probe);
    errno = 0;
    assert_int_equal(drv_file_lock_in(s_dir, "member.7"), -1); // live: not replaced
    assert_int_equal(errno, EWOULDBLOCK);
    s_kill(holder); // dead: its file is replaced by ours, which is held
    int fd = drv_file_lock_in(s_dir, "member.7");
    assert_true(fd >= 0);
    assert_true(drv_file_names(path, fd));
    assert_int_equal(s_joining_files(), 0); // renamed, nothing left beside
    assert_int_equal(unlink(path), 0);
    assert_false(drv_file_names(path, fd));
    close(fd);
    assert_false(drv_file_names(path, -1));
}

static void test_a_reader_whose_member_file_was_removed_joins_again(void **state)
{
    (void)state;
    int core0 = drv_checkpoint_join(s_dir, 3, 0);
    assert_true(core0 >= 0);
    int rank = -1, count = -1;
    assert_true(drv_checkpoint_rank(s_dir, 3, 0, &rank, &count));
    assert_int_equal(count, 1);
    pid_t core1 = s_holder("member.3.1.lock"); // the other core's instance
    assert_true(drv_checkpoint_rank(s_dir, 3, 0, &rank, &count));
    assert_int_equal(rank, 0);
    assert_int_equal(count, 2);
    assert_int_equal(drv_checkpoint_join(s_dir, 3, 0), -1); // held by us: a second join is refused
    char path[256];
    snprintf(path, sizeof path, "%s/member.3.0.lock", s_dir);
    assert_true(drv_checkpoint_joined(s_dir, 3, 0, core0));
    assert_int_equal(unlink(path), 0); // removed from under it
    assert_false(drv_checkpoint_joined(s_dir, 3, 0, core0));
    assert_false(drv_checkpoint_rank(s_dir, 3, 0, &rank, &count)); // not counted: reads nothing new
    close(core0);
    core0 = drv_checkpoint_join(s_dir, 3, 0);
    assert_true(core0 >= 0);
    assert_true(drv_checkpoint_rank(s_dir, 3, 0, &rank, &count));
    assert_int_equal(count, 2);
    s_kill(core1);
    close(core0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_dead_joiners_file_goes_a_live_or_fresh_one_stays, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_locked_before_it_is_named_never_over_a_live_one, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_reader_whose_member_file_was_removed_joins_again, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
