/*  drv_memory_log — see the header. The entries sit in a ring, oldest
    first; each knows how many bytes and records were kept before it, so
    that what is ahead of a position is a subtraction and finding an input
    by number a binary search. Their bytes are carved, in order, out of
    chunks mapped CHUNK_BYTES at a time and faulted in whole when mapped
    (MAP_POPULATE): a backlog that grows by hundreds of megabytes a second
    costs one system call per chunk rather than a page fault per page
    (docs/benchmarks.md, B22). A chunk goes once its last entry is
    forgotten, but for one kept spare: a backlog at its bound (when_full:
    drop_oldest) forgets as fast as it keeps, and maps nothing new. */
#include "drv_memory_log.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CHUNK_BYTES (4 << 20)

typedef struct chunk_t chunk_t;
struct chunk_t {
    chunk_t *next;
    size_t size, used; // mapped, carved
    size_t live;       // entries in it not forgotten
};

typedef struct {
    chunk_t *chunk;
    int64_t number, time_ms;
    int64_t bytes_before, records_before; // kept before it, since the log was made
    uint32_t records;
    uint8_t form;
    size_t size;
    char *node; // in data, after the input's bytes
    unsigned char data[];
} entry_t;

struct drv_memory_log_t {
    chunk_t *oldest, *newest; // the chunks, oldest first
    chunk_t *spare;           // an emptied one, carved next
    entry_t **ring;
    size_t cap, head, count;
    int64_t bytes, records;           // what it holds
    int64_t kept_bytes, kept_records; // kept since it was made
};

drv_memory_log_t *drv_memory_log_new(void)
{
    return calloc(1, sizeof(drv_memory_log_t));
}

static entry_t *s_at(const drv_memory_log_t *self, size_t i)
{
    return self->ring[(self->head + i) % self->cap];
}

void drv_memory_log_destroy(drv_memory_log_t **self_p)
{
    drv_memory_log_t *self = *self_p;
    if (!self) {
        return;
    }
    while (self->oldest) {
        chunk_t *next = self->oldest->next;
        munmap(self->oldest, self->oldest->size);
        self->oldest = next;
    }
    if (self->spare) {
        munmap(self->spare, self->spare->size);
    }
    free(self->ring);
    free(self);
    *self_p = NULL;
}

static int s_grow(drv_memory_log_t *self)
{
    size_t cap = self->cap ? 2 * self->cap : 256;
    entry_t **ring = malloc(cap * sizeof *ring);
    if (!ring) {
        return -1;
    }
    for (size_t i = 0; i < self->count; i++) {
        ring[i] = s_at(self, i);
    }
    free(self->ring);
    self->ring = ring;
    self->cap = cap;
    self->head = 0;
    return 0;
}

//  size bytes (aligned) carved after the newest entry, in a new chunk when
//  they do not fit in the newest; NULL when out of memory.
static entry_t *s_carve(drv_memory_log_t *self, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    chunk_t *chunk = self->newest;
    if (!chunk || chunk->size - chunk->used < size) {
        size_t want = sizeof *chunk + size > CHUNK_BYTES ? sizeof *chunk + size : CHUNK_BYTES;
        if (self->spare && want == CHUNK_BYTES) {
            chunk = self->spare;
            self->spare = NULL;
        } else {
            chunk = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
            if (chunk == MAP_FAILED) {
                return NULL;
            }
        }
        *chunk = (chunk_t){.size = want, .used = (sizeof *chunk + 15) & ~(size_t)15};
        if (self->newest) {
            self->newest->next = chunk;
        } else {
            self->oldest = chunk;
        }
        self->newest = chunk;
    }
    entry_t *entry = (entry_t *)((char *)chunk + chunk->used);
    chunk->used += size;
    chunk->live++;
    entry->chunk = chunk;
    return entry;
}

//  An entry forgotten: its chunk goes with its last one (the newest stays
//  to be carved on, emptied).
static void s_release(drv_memory_log_t *self, entry_t *entry)
{
    chunk_t *chunk = entry->chunk;
    if (--chunk->live > 0) {
        return;
    }
    if (chunk == self->newest) {
        chunk->used = (sizeof *chunk + 15) & ~(size_t)15;
        return;
    }
    //  Entries are forgotten oldest first: an empty chunk that is not the newest is the oldest.
    self->oldest = chunk->next;
    if (!self->spare && chunk->size == CHUNK_BYTES) {
        self->spare = chunk;
    } else {
        munmap(chunk, chunk->size);
    }
}

int drv_memory_log_append(drv_memory_log_t *self, int64_t number, const drv_buffer_input_t *input, int64_t time_ms)
{
    size_t size = 0, idlen = strlen(input->node);
    for (int i = 0; i < input->count; i++) {
        size += input->parts[i].iov_len;
    }
    if (self->count == self->cap && s_grow(self) != 0) {
        return -1;
    }
    entry_t *entry = s_carve(self, sizeof *entry + size + idlen + 1);
    if (!entry) {
        return -1;
    }
    *entry = (entry_t){.chunk = entry->chunk,
                       .number = number,
                       .time_ms = time_ms,
                       .bytes_before = self->kept_bytes,
                       .records_before = self->kept_records,
                       .records = input->records,
                       .form = input->form,
                       .size = size};
    size_t at = 0;
    for (int i = 0; i < input->count; i++) {
        if (input->parts[i].iov_len) { // an empty part may have no base
            memcpy(entry->data + at, input->parts[i].iov_base, input->parts[i].iov_len);
        }
        at += input->parts[i].iov_len;
    }
    entry->node = (char *)entry->data + size;
    memcpy(entry->node, input->node, idlen + 1);
    self->ring[(self->head + self->count++) % self->cap] = entry;
    self->bytes += (int64_t)size;
    self->records += input->records;
    self->kept_bytes += (int64_t)size;
    self->kept_records += input->records;
    return 0;
}

//  The index of the oldest entry numbered number or later (count: none).
static size_t s_find(const drv_memory_log_t *self, int64_t number)
{
    size_t low = 0, high = self->count;
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        if (s_at(self, mid)->number < number) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    return low;
}

int drv_memory_log_read(const drv_memory_log_t *self, int64_t from, drv_buffer_input_t *input)
{
    size_t i = s_find(self, from);
    if (i == self->count) {
        return 0;
    }
    const entry_t *entry = s_at(self, i);
    *input = (drv_buffer_input_t){.node = entry->node,
                                  .form = entry->form,
                                  .data = entry->data,
                                  .size = entry->size,
                                  .records = entry->records,
                                  .number = entry->number,
                                  .time_ms = entry->time_ms};
    return 1;
}

void drv_memory_log_forget(drv_memory_log_t *self, int64_t upto)
{
    while (self->count > 0 && s_at(self, 0)->number <= upto) {
        entry_t *entry = s_at(self, 0);
        self->bytes -= (int64_t)entry->size;
        self->records -= entry->records;
        self->head = (self->head + 1) % self->cap;
        self->count--;
        s_release(self, entry);
    }
}

bool drv_memory_log_empty(const drv_memory_log_t *self)
{
    return self->count == 0;
}

//  Kept before entry i (or all of it, past the newest).
static int64_t s_bytes_before(const drv_memory_log_t *self, size_t i)
{
    return i < self->count ? s_at(self, i)->bytes_before : self->kept_bytes;
}

static int64_t s_records_before(const drv_memory_log_t *self, size_t i)
{
    return i < self->count ? s_at(self, i)->records_before : self->kept_records;
}

int64_t drv_memory_log_bytes_from(const drv_memory_log_t *self, int64_t number)
{
    return self->kept_bytes - s_bytes_before(self, s_find(self, number));
}

int64_t drv_memory_log_records_from(const drv_memory_log_t *self, int64_t number)
{
    return self->kept_records - s_records_before(self, s_find(self, number));
}

int64_t drv_memory_log_fit_from(const drv_memory_log_t *self, int64_t from, int64_t max_bytes, int64_t *records_skipped)
{
    size_t first = s_find(self, from), low = first, high = self->count;
    while (low < high) { // what is kept from entry i on only shrinks as i grows
        size_t mid = low + (high - low) / 2;
        if (self->kept_bytes - s_at(self, mid)->bytes_before > max_bytes) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    *records_skipped = s_records_before(self, low) - s_records_before(self, first);
    if (low < self->count) {
        return s_at(self, low)->number;
    }
    return self->count > 0 && low > first ? s_at(self, self->count - 1)->number + 1 : from;
}

void drv_memory_log_size(const drv_memory_log_t *self, int64_t *bytes, int64_t *records)
{
    *bytes = self->bytes;
    *records = self->records;
}
