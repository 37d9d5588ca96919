/*  drv_ring: the data ring's protocol, both sides in one process (the
    producer maps the ring the consumer created through /proc, as the
    broker does): entries come out whole and in order across the wrap, a
    full ring refuses and takes again once read, an entry over half the
    ring never fits, the doorbell is asked for exactly when the consumer
    said it sleeps, and the socket-batch counter is shared. Neither side
    trusts what the other writes: a head written by the consumer is not
    the producer's, a tail out of bounds stops the producer (-2), a ring
    that is not sealed against shrinking, or whose positions lie, is not
    mapped. */
#include "drover/drv_ring.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#define BYTES 4096

typedef struct {
    drv_ring_t *consumer, *producer;
} pair_t;

static int s_setup(void **state)
{
    pair_t *pair = calloc(1, sizeof *pair);
    char err[200];
    pair->consumer = drv_ring_create(BYTES, err, sizeof err);
    assert_non_null(pair->consumer);
    pair->producer = drv_ring_attach(getpid(), drv_ring_fd(pair->consumer), err, sizeof err);
    assert_non_null(pair->producer);
    *state = pair;
    return 0;
}

static int s_teardown(void **state)
{
    pair_t *pair = *state;
    drv_ring_destroy(&pair->producer);
    drv_ring_destroy(&pair->consumer);
    free(pair);
    return 0;
}

static int s_put(pair_t *pair, int n, size_t payload_len, bool *wake)
{
    char header[16], payload[BYTES];
    int len = snprintf(header, sizeof header, "h%d", n);
    memset(payload, 'a' + n % 26, payload_len);
    return drv_ring_put(pair->producer, header, (size_t)len, payload, payload_len, wake);
}

//  Takes one entry and checks it is entry n with payload_len bytes.
static void s_take(pair_t *pair, int n, size_t payload_len)
{
    const void *header, *payload;
    size_t header_len, len;
    assert_int_equal(drv_ring_peek(pair->consumer, &header, &header_len, &payload, &len), 1);
    char want[16];
    snprintf(want, sizeof want, "h%d", n);
    assert_int_equal(header_len, strlen(want));
    assert_memory_equal(header, want, header_len);
    assert_int_equal(len, payload_len);
    for (size_t i = 0; i < len; i++) {
        assert_int_equal(((const char *)payload)[i], 'a' + n % 26);
    }
    drv_ring_release(pair->consumer);
}

static void test_entries_come_out_whole_and_in_order_across_the_wrap(void **state)
{
    pair_t *pair = *state;
    bool wake;
    int put = 0, taken = 0;
    for (int round = 0; round < 40; round++) { // 40 x ~1 KiB through 4 KiB: wraps many times, pads included
        size_t len = 700 + (size_t)(round * 37) % 500;
        assert_int_equal(s_put(pair, put++, len, &wake), 1);
        assert_false(wake); // nobody said they sleep
        if (round % 2) {
            s_take(pair, taken, 700 + (size_t)((taken * 37) % 500));
            taken++;
        }
        while (put - taken > 1) { // at most one held before the next put: room for it and a pad
            s_take(pair, taken, 700 + (size_t)((taken * 37) % 500));
            taken++;
        }
    }
    while (taken < put) {
        s_take(pair, taken, 700 + (size_t)((taken * 37) % 500));
        taken++;
    }
    const void *h, *p;
    size_t hl, pl;
    assert_int_equal(drv_ring_peek(pair->consumer, &h, &hl, &p, &pl), 0);
    assert_true(drv_ring_empty(pair->producer));
}

static void test_a_full_ring_refuses_and_an_entry_over_half_never_fits(void **state)
{
    pair_t *pair = *state;
    bool wake;
    assert_int_equal(s_put(pair, 0, BYTES / 2, &wake), -1); // with its head, over half
    int n = 0;
    while (s_put(pair, n, 1000, &wake) == 1) {
        n++;
    }
    assert_int_equal(n, 4); // 4 x 1016 bytes of 4096
    assert_false(drv_ring_empty(pair->producer));
    s_take(pair, 0, 1000);
    assert_int_equal(s_put(pair, n, 1000, &wake), 1); // room again once read
    for (int i = 1; i <= n; i++) {
        s_take(pair, i, 1000);
    }
    assert_true(drv_ring_empty(pair->producer));
}

static void test_the_doorbell_is_asked_for_only_when_the_consumer_sleeps(void **state)
{
    pair_t *pair = *state;
    bool wake;
    assert_true(drv_ring_sleep(pair->consumer)); // empty: it may wait
    assert_int_equal(s_put(pair, 0, 10, &wake), 1);
    assert_true(wake); // it sleeps: ring
    assert_int_equal(s_put(pair, 1, 10, &wake), 1);
    assert_false(wake);                           // once per sleep
    assert_false(drv_ring_sleep(pair->consumer)); // entries wait: do not sleep
    s_take(pair, 0, 10);
    s_take(pair, 1, 10);
    assert_true(drv_ring_sleep(pair->consumer));
    drv_ring_awake(pair->consumer); // woke for something else
    assert_int_equal(s_put(pair, 2, 10, &wake), 1);
    assert_false(wake);
    s_take(pair, 2, 10);
}

static void test_the_socket_batch_count_is_shared_and_bad_positions_are_refused(void **state)
{
    pair_t *pair = *state;
    assert_int_equal(drv_ring_socket_batches(pair->producer), 0);
    drv_ring_count_socket_batch(pair->consumer);
    drv_ring_count_socket_batch(pair->consumer);
    assert_int_equal(drv_ring_socket_batches(pair->producer), 2);
    //  A head more than the ring ahead of the tail is no ring a producer wrote.
    uint64_t head = 3 * BYTES;
    assert_int_equal(pwrite(drv_ring_fd(pair->consumer), &head, sizeof head, 64), (ssize_t)sizeof head);
    const void *h, *p;
    size_t hl, pl;
    assert_int_equal(drv_ring_peek(pair->consumer, &h, &hl, &p, &pl), -1);
    //  And what is not a ring is not mapped.
    char err[200];
    assert_null(drv_ring_attach(getpid(), STDIN_FILENO, err, sizeof err));
    assert_non_null(strstr(err, "/proc/"));
}

static void test_the_producer_trusts_no_position_the_consumer_writes(void **state)
{
    pair_t *pair = *state;
    bool wake;
    assert_int_equal(s_put(pair, 0, 100, &wake), 1);
    //  A head one byte short of the ring's end, written by the consumer:
    //  the producer writes where its own head says, within the ring.
    uint64_t head = BYTES - 1;
    assert_int_equal(pwrite(drv_ring_fd(pair->consumer), &head, sizeof head, 64), (ssize_t)sizeof head);
    assert_int_equal(s_put(pair, 1, 100, &wake), 1);
    head = 2 * 112; // what the two entries took: the consumer reads them whole
    assert_int_equal(pwrite(drv_ring_fd(pair->consumer), &head, sizeof head, 64), (ssize_t)sizeof head);
    s_take(pair, 0, 100);
    s_take(pair, 1, 100);
    //  A tail past the head: the consumer is not one; the producer stops.
    uint64_t tail = 5 * BYTES;
    assert_int_equal(pwrite(drv_ring_fd(pair->consumer), &tail, sizeof tail, 128), (ssize_t)sizeof tail);
    assert_int_equal(s_put(pair, 2, 100, &wake), -2);
    tail = 1; // misaligned
    assert_int_equal(pwrite(drv_ring_fd(pair->consumer), &tail, sizeof tail, 128), (ssize_t)sizeof tail);
    assert_int_equal(s_put(pair, 2, 100, &wake), -2);
}

static void test_a_ring_not_sealed_or_whose_positions_lie_is_not_mapped(void **state)
{
    (void)state;
    char err[200];
    drv_ring_t *consumer = drv_ring_create(BYTES, err, sizeof err);
    assert_int_not_equal(ftruncate(drv_ring_fd(consumer), 4096), 0); // sealed: it cannot shrink under a mapping
    uint64_t head = 3;
    assert_int_equal(pwrite(drv_ring_fd(consumer), &head, sizeof head, 64), (ssize_t)sizeof head);
    assert_null(drv_ring_attach(getpid(), drv_ring_fd(consumer), err, sizeof err));
    assert_non_null(strstr(err, "out of bounds"));
    drv_ring_destroy(&consumer);
    //  A memory file made like a ring but not sealed.
    int fd = memfd_create("not-sealed", MFD_CLOEXEC);
    assert_true(fd >= 0 && ftruncate(fd, 4096 + BYTES) == 0);
    uint64_t shape[2] = {0x31474e4952565244ull, BYTES};
    assert_int_equal(pwrite(fd, shape, sizeof shape, 0), (ssize_t)sizeof shape);
    assert_null(drv_ring_attach(getpid(), fd, err, sizeof err));
    assert_non_null(strstr(err, "not sealed"));
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_entries_come_out_whole_and_in_order_across_the_wrap, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_full_ring_refuses_and_an_entry_over_half_never_fits, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_the_doorbell_is_asked_for_only_when_the_consumer_sleeps, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_the_socket_batch_count_is_shared_and_bad_positions_are_refused, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_the_producer_trusts_no_position_the_consumer_writes, s_setup, s_teardown),
        cmocka_unit_test(test_a_ring_not_sealed_or_whose_positions_lie_is_not_mapped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
