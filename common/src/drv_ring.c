/*  drv_ring — the data ring from the broker to one instance (see the
    header). The memory file holds a page of positions and flags (each
    side's own on its own cache line), then the data. An entry is [header
    length u32][payload length u32][header][payload], padded to 8 bytes; one
    that would not fit before the end leaves a pad marker there and starts
    again at 0, so every entry lies in one piece.

    Each side trusts nothing the other can write (docs/security.md): the
    producer keeps its own head and checks the consumer's tail against it
    before every write; the consumer checks the head and every length it
    reads; and the file is sealed against shrinking (a mapping past a
    file's end faults), which the producer checks before it maps. */
#include "drover/drv_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define RING_MAGIC 0x31474e4952565244ull // "DRVRING1"
#define DATA_OFFSET 4096
#define PAD_MARK UINT32_MAX
#define ALIGN8(n) (((n) + 7) & ~(uint64_t)7)

typedef struct {
    uint64_t magic;
    uint64_t bytes;                     // data bytes, a power of two
    _Alignas(64) _Atomic uint64_t head; // the producer's: bytes published
    _Alignas(64) _Atomic uint64_t tail; // the consumer's: bytes taken
    _Atomic uint32_t sleeping;          // the consumer waits: ring its doorbell
    _Atomic uint64_t socket_batches;    // batches the consumer took from the socket
} shared_t;

_Static_assert(sizeof(shared_t) <= DATA_OFFSET, "the positions fit before the data");

struct drv_ring_t {
    int fd;
    shared_t *shared;
    unsigned char *data;
    uint64_t bytes;
    uint64_t head;   // the producer: its own count of bytes published (the shared one is the consumer's to read)
    uint64_t taking; // the consumer: bytes of the entry drv_ring_peek gave
};

#define SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

static drv_ring_t *s_map(int fd, uint64_t bytes, bool init, char *err, size_t errlen)
{
    void *base = mmap(NULL, DATA_OFFSET + bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        snprintf(err, errlen, "cannot map the data ring: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    drv_ring_t *self = calloc(1, sizeof *self);
    if (!self) {
        munmap(base, DATA_OFFSET + bytes);
        close(fd);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    self->fd = fd;
    self->shared = base;
    self->data = (unsigned char *)base + DATA_OFFSET;
    self->bytes = bytes;
    if (init) {
        self->shared->magic = RING_MAGIC;
        self->shared->bytes = bytes;
    }
    return self;
}

drv_ring_t *drv_ring_create(size_t bytes, char *err, size_t errlen)
{
    if (bytes < 4096 || (bytes & (bytes - 1)) != 0) {
        snprintf(err, errlen, "a data ring is a power of two of at least 4096 bytes, not %zu", bytes);
        return NULL;
    }
    int fd = memfd_create("drover-data-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)(DATA_OFFSET + bytes)) != 0 || fcntl(fd, F_ADD_SEALS, SEALS) != 0) {
        snprintf(err, errlen, "cannot make the data ring: %s", strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return NULL;
    }
    return s_map(fd, bytes, true, err, errlen);
}

drv_ring_t *drv_ring_attach(pid_t pid, int fd, char *err, size_t errlen)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
    int mine = open(path, O_RDWR | O_CLOEXEC);
    if (mine < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    shared_t head;
    int seals = fcntl(mine, F_GET_SEALS);
    if (fstat(mine, &st) != 0 || st.st_size <= DATA_OFFSET || pread(mine, &head, sizeof head, 0) != sizeof head ||
        head.magic != RING_MAGIC || head.bytes != (uint64_t)st.st_size - DATA_OFFSET ||
        (head.bytes & (head.bytes - 1)) != 0 || head.bytes < 4096) {
        snprintf(err, errlen, "%s is not a data ring", path);
        close(mine);
        return NULL;
    }
    if (seals < 0 || (seals & SEALS) != SEALS) {
        snprintf(err, errlen, "%s is not sealed against a change of size", path);
        close(mine);
        return NULL;
    }
    drv_ring_t *self = s_map(mine, head.bytes, false, err, errlen);
    if (self) { // a broker that takes over a ring in use goes on from its head, once
        self->head = atomic_load_explicit(&self->shared->head, memory_order_acquire);
        uint64_t tail = atomic_load_explicit(&self->shared->tail, memory_order_acquire);
        if ((self->head & 7) || self->head - tail > self->bytes) {
            snprintf(err, errlen, "%s has positions out of bounds", path);
            drv_ring_destroy(&self);
        }
    }
    return self;
}

void drv_ring_destroy(drv_ring_t **self_p)
{
    if (self_p && *self_p) {
        drv_ring_t *self = *self_p;
        munmap(self->shared, DATA_OFFSET + self->bytes);
        close(self->fd);
        free(self);
        *self_p = NULL;
    }
}

int drv_ring_fd(const drv_ring_t *self)
{
    return self->fd;
}

size_t drv_ring_bytes(const drv_ring_t *self)
{
    return (size_t)self->bytes;
}

const void *drv_ring_data(const drv_ring_t *self)
{
    return self->data;
}

static void s_put_u32(unsigned char *at, uint32_t value)
{
    memcpy(at, &value, sizeof value);
}

static uint32_t s_get_u32(const unsigned char *at)
{
    uint32_t value;
    memcpy(&value, at, sizeof value);
    return value;
}

int drv_ring_put(drv_ring_t *self, const void *header, size_t header_len, const void *payload, size_t payload_len,
                 bool *wake)
{
    *wake = false;
    uint64_t need = ALIGN8(8 + (uint64_t)header_len + payload_len);
    if (need > self->bytes / 2) {
        return -1; // at most half: then it fits whenever the ring is empty, wherever its positions are
    }
    uint64_t head = self->head;
    uint64_t tail = atomic_load_explicit(&self->shared->tail, memory_order_acquire);
    uint64_t used = head - tail;
    if (used > self->bytes || (tail & 7)) {
        return -2; // a tail past the head, or misaligned: the consumer is not one
    }
    uint64_t offset = head & (self->bytes - 1);
    uint64_t contiguous = self->bytes - offset;
    uint64_t total = need > contiguous ? contiguous + need : need;
    if (used + total > self->bytes) {
        return 0;
    }
    if (need > contiguous) {
        s_put_u32(self->data + offset, PAD_MARK);
        offset = 0;
    }
    unsigned char *at = self->data + offset;
    s_put_u32(at, (uint32_t)header_len);
    s_put_u32(at + 4, (uint32_t)payload_len);
    memcpy(at + 8, header, header_len);
    if (payload_len) {
        memcpy(at + 8 + header_len, payload, payload_len);
    }
    self->head = head + total;
    atomic_store_explicit(&self->shared->head, self->head, memory_order_seq_cst);
    *wake = atomic_load_explicit(&self->shared->sleeping, memory_order_seq_cst) &&
            atomic_exchange_explicit(&self->shared->sleeping, 0, memory_order_seq_cst);
    return 1;
}

bool drv_ring_empty(const drv_ring_t *self)
{
    return self->head == atomic_load_explicit(&self->shared->tail, memory_order_acquire);
}

int drv_ring_peek(drv_ring_t *self, const void **header, size_t *header_len, const void **payload, size_t *payload_len)
{
    uint64_t tail = atomic_load_explicit(&self->shared->tail, memory_order_relaxed);
    for (;;) {
        uint64_t head = atomic_load_explicit(&self->shared->head, memory_order_acquire);
        if (head == tail) {
            return 0;
        }
        uint64_t offset = tail & (self->bytes - 1);
        uint64_t contiguous = self->bytes - offset;
        if (head - tail > self->bytes || (tail & 7) != 0) {
            return -1;
        }
        uint32_t hlen = s_get_u32(self->data + offset);
        if (hlen == PAD_MARK) {
            tail += contiguous;
            atomic_store_explicit(&self->shared->tail, tail, memory_order_release);
            continue;
        }
        uint32_t plen = s_get_u32(self->data + offset + 4);
        uint64_t need = ALIGN8(8 + (uint64_t)hlen + plen);
        if (need > contiguous || need > head - tail) {
            return -1;
        }
        *header = self->data + offset + 8;
        *header_len = hlen;
        *payload = self->data + offset + 8 + hlen;
        *payload_len = plen;
        self->taking = need;
        return 1;
    }
}

void drv_ring_release(drv_ring_t *self)
{
    uint64_t tail = atomic_load_explicit(&self->shared->tail, memory_order_relaxed);
    atomic_store_explicit(&self->shared->tail, tail + self->taking, memory_order_release);
    self->taking = 0;
}

bool drv_ring_sleep(drv_ring_t *self)
{
    atomic_store_explicit(&self->shared->sleeping, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&self->shared->head, memory_order_seq_cst) !=
        atomic_load_explicit(&self->shared->tail, memory_order_relaxed)) {
        atomic_store_explicit(&self->shared->sleeping, 0, memory_order_relaxed);
        return false;
    }
    return true;
}

void drv_ring_awake(drv_ring_t *self)
{
    atomic_store_explicit(&self->shared->sleeping, 0, memory_order_relaxed);
}

void drv_ring_count_socket_batch(drv_ring_t *self)
{
    atomic_fetch_add_explicit(&self->shared->socket_batches, 1, memory_order_release);
}

uint64_t drv_ring_socket_batches(const drv_ring_t *self)
{
    return atomic_load_explicit(&self->shared->socket_batches, memory_order_acquire);
}
