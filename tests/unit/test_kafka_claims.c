/*  drv_kafka_claims: the instances of one engine dividing a topic's
    partitions by locks under run_dir (docs/operations.md, "Kafka: who
    reads which partition"). Each member here is a process of its own, as
    the instances are: shares follow the members alive, a partition's lock
    is held by one at a time, a dead member's file is not counted and is
    swept once a minute old, and a member whose file another took for a
    dead one's (it found it between our open and our lock) makes it again
    and is counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "drv_kafka_claims.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char s_run_dir[64];

//  A member in a child process, told what to do a byte at a time over
//  `to` and answering each over `from`: 's' its share of 4, 't'/'r' take
//  or release partition 0 (answering 1 when it holds it), 'l' leave, 'q'
//  quit.
typedef struct {
    pid_t pid;
    int to, from;
} member_t;

static void s_child(int in, int out)
{
    char err[256];
    drv_kafka_claims_t *claims = drv_kafka_claims_new(s_run_dir, "group/one", "in", err, sizeof err);
    char answer = claims ? 'y' : 'n';
    char command;
    while (write(out, &answer, 1) == 1 && read(in, &command, 1) == 1 && command != 'q') {
        if (command == 's') {
            answer = (char)drv_kafka_claims_share(claims, 4);
        } else if (command == 't') {
            answer = (char)drv_kafka_claims_take(claims, 0);
        } else if (command == 'r') {
            drv_kafka_claims_release(claims, 0);
            answer = (char)drv_kafka_claims_held(claims, 0);
        } else if (command == 'l') {
            drv_kafka_claims_leave(claims);
            answer = 0;
        }
    }
    drv_kafka_claims_destroy(&claims);
    _exit(0);
}

static member_t s_member(void)
{
    int to[2], from[2];
    assert_int_equal(pipe(to), 0);
    assert_int_equal(pipe(from), 0);
    member_t member = {.pid = fork()};
    assert_true(member.pid >= 0);
    if (member.pid == 0) {
        close(to[1]);
        close(from[0]);
        s_child(to[0], from[1]);
    }
    close(to[0]);
    close(from[1]);
    member.to = to[1];
    member.from = from[0];
    char ready;
    assert_int_equal(read(member.from, &ready, 1), 1);
    assert_int_equal(ready, 'y');
    return member;
}

static int s_ask(member_t *member, char command)
{
    char answer;
    assert_int_equal(write(member->to, &command, 1), 1);
    assert_int_equal(read(member->from, &answer, 1), 1);
    return answer;
}

static void s_quit(member_t *member)
{
    char command = 'q';
    assert_int_equal(write(member->to, &command, 1), 1);
    int status;
    assert_int_equal(waitpid(member->pid, &status, 0), member->pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(member->to);
    close(member->from);
}

static void s_member_path(pid_t pid, char *path, size_t pathlen)
{
    snprintf(path, pathlen, "%s/kafka/group%%2Fone/in/member.%ld", s_run_dir, (long)pid);
}

static int s_setup(void **state)
{
    (void)state;
    snprintf(s_run_dir, sizeof s_run_dir, "/tmp/drv-claims-XXXXXX");
    return mkdtemp(s_run_dir) ? 0 : -1;
}

static int s_teardown(void **state)
{
    (void)state;
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", s_run_dir);
    return system(command) == 0 ? 0 : -1;
}

static void test_shares_follow_the_members_alive(void **state)
{
    (void)state;
    member_t a = s_member();
    assert_int_equal(s_ask(&a, 's'), 4);
    member_t b = s_member(), c = s_member();
    assert_int_equal(s_ask(&a, 's'), 2); // 4 among 3, rounded up
    assert_int_equal(s_ask(&b, 's'), 2);
    assert_int_equal(s_ask(&c, 'l'), 0); // leaving: wants none, and is not counted
    assert_int_equal(s_ask(&c, 's'), 0);
    assert_int_equal(s_ask(&a, 's'), 2);
    kill(b.pid, SIGKILL); // dies holding its file locked: the kernel lets go, and it is not counted
    waitpid(b.pid, NULL, 0);
    assert_int_equal(s_ask(&a, 's'), 4);
    char path[256];
    s_member_path(b.pid, path, sizeof path);
    assert_int_equal(access(path, F_OK), 0); // young: it may be an older drover's, made before it was locked
    struct timespec old[2] = {{.tv_sec = time(NULL) - 120}, {.tv_sec = time(NULL) - 120}};
    assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
    assert_int_equal(s_ask(&a, 's'), 4); // a minute old: swept
    assert_int_equal(access(path, F_OK), -1);
    close(b.to);
    close(b.from);
    s_quit(&c);
    s_quit(&a);
}

static void test_a_partition_has_one_reader_at_a_time(void **state)
{
    (void)state;
    member_t a = s_member(), b = s_member();
    assert_int_equal(s_ask(&a, 't'), 1);
    assert_int_equal(s_ask(&b, 't'), 0);
    assert_int_equal(s_ask(&a, 'r'), 0);
    assert_int_equal(s_ask(&b, 't'), 1);
    s_quit(&b); // its lock goes with it
    assert_int_equal(s_ask(&a, 't'), 1);
    s_quit(&a);
}

//  Another member found our file unlocked (we had opened it, not locked it
//  yet) and removed it as a dead one's: we make it again at the next look
//  at our share, and are counted.
static void test_a_member_whose_file_was_swept_joins_again(void **state)
{
    (void)state;
    member_t a = s_member(), b = s_member();
    char path[256];
    s_member_path(b.pid, path, sizeof path);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(s_ask(&a, 's'), 4); // b not counted while its file is gone
    assert_int_equal(s_ask(&b, 's'), 2); // b looks at its share: its file again
    assert_int_equal(access(path, F_OK), 0);
    assert_int_equal(s_ask(&a, 's'), 2);
    s_quit(&b);
    s_quit(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shares_follow_the_members_alive, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_partition_has_one_reader_at_a_time, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_member_whose_file_was_swept_joins_again, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
