/* arena.c — see arena.h. Blocks are kept in one array sorted by address; the counts are small
 * (tens of live blocks per stream), so linear scans are cheaper than any tree. */
#include "gpu/arena.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void arena_init(struct arena *a, const struct arena_chunk_ops *ops, size_t min_chunk, int grow) {
    memset(a, 0, sizeof *a);
    a->ops = *ops;
    a->min_chunk = min_chunk;
    a->grow = grow;
}

void arena_free(struct arena *a) {
    for (size_t i = 0; i < a->n_chunks; i++)
        a->ops.free(a->ops.ctx, a->chunks[i].addr);
    free(a->chunks);
    free(a->blocks);
    struct arena_chunk_ops ops = a->ops;
    arena_init(a, &ops, a->min_chunk, a->grow);
}

/* Room for one more block (a split or a new chunk's first block). */
static int reserve_block(struct arena *a) {
    if (a->n_blocks < a->cap_blocks)
        return 0;
    size_t cap = a->cap_blocks ? 2 * a->cap_blocks : 64;
    struct arena_block *b = realloc(a->blocks, cap * sizeof *b);
    if (!b)
        return -1;
    a->blocks = b;
    a->cap_blocks = cap;
    return 0;
}

static void insert_block(struct arena *a, size_t at, struct arena_block b) {
    memmove(&a->blocks[at + 1], &a->blocks[at], (a->n_blocks - at) * sizeof b);
    a->blocks[at] = b;
    a->n_blocks++;
}

/* Reserves a chunk of at least `bytes` and adds it as one free block. Returns its index.
 * The chunk is padded (min_chunk, doubling) so that chunks are few; when the padded size is
 * refused, exactly `bytes` is tried, as memory close to full may still hold that much. */
static int add_chunk(struct arena *a, size_t bytes, size_t *index, char *err, size_t err_size) {
    size_t exact =
        (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; /* no overflow: see arena_alloc */
    size_t size = bytes > a->min_chunk ? bytes : a->min_chunk;
    if (a->grow && a->reserved > size)
        size = a->reserved;
    size = (size + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (reserve_block(a)) {
        wc_errf(err, err_size, "arena: out of host memory");
        return -1;
    }
    if (a->n_chunks == a->cap_chunks) {
        size_t cap = a->cap_chunks ? 2 * a->cap_chunks : 8;
        struct arena_chunk *c = realloc(a->chunks, cap * sizeof *c);
        if (!c) {
            wc_errf(err, err_size, "arena: out of host memory");
            return -1;
        }
        a->chunks = c;
        a->cap_chunks = cap;
    }
    uint64_t addr = 0;
    if (a->ops.alloc(a->ops.ctx, size, &addr, err, err_size)) {
        if (size == exact || a->ops.alloc(a->ops.ctx, exact, &addr, err, err_size))
            return -1;
        size = exact;
    }
    a->chunks[a->n_chunks++] = (struct arena_chunk){addr, size};
    a->reserved += size;
    size_t at = 0;
    while (at < a->n_blocks && a->blocks[at].addr < addr)
        at++;
    insert_block(a, at, (struct arena_block){addr, size, 0});
    *index = at;
    return 0;
}

int arena_alloc(struct arena *a, size_t bytes, uint64_t *addr, char *err, size_t err_size) {
    *addr = 0;
    if (bytes > SIZE_MAX - ARENA_ALIGN) {
        wc_errf(err, err_size, "arena: %zu bytes requested", bytes);
        return -1;
    }
    size_t need = bytes ? (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN : ARENA_ALIGN;
    /* best fit: the smallest free block that holds it, so large holes stay large */
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < a->n_blocks; i++)
        if (!a->blocks[i].used && a->blocks[i].size >= need &&
            (best == SIZE_MAX || a->blocks[i].size < a->blocks[best].size))
            best = i;
    if (best == SIZE_MAX && add_chunk(a, need, &best, err, err_size))
        return -1;
    struct arena_block *b = &a->blocks[best];
    if (b->size > need) { /* split: the tail stays free */
        if (reserve_block(a)) {
            wc_errf(err, err_size, "arena: out of host memory");
            return -1;
        }
        b = &a->blocks[best]; /* reserve_block may have moved the array */
        struct arena_block tail = {b->addr + need, b->size - need, 0};
        b->size = need;
        insert_block(a, best + 1, tail);
        b = &a->blocks[best];
    }
    b->used = 1;
    a->in_use += b->size;
    *addr = b->addr;
    return 0;
}

/* Whether blocks i and i+1 lie in the same chunk (chunks may happen to be adjacent in memory,
 * but each is freed whole, so blocks never merge across them). */
static int same_chunk(const struct arena *a, size_t i) {
    uint64_t x = a->blocks[i].addr;
    for (size_t c = 0; c < a->n_chunks; c++)
        if (x >= a->chunks[c].addr && x - a->chunks[c].addr < a->chunks[c].size)
            return a->blocks[i + 1].addr - a->chunks[c].addr < a->chunks[c].size &&
                   a->blocks[i + 1].addr > x;
    return 0;
}

static void merge_next(struct arena *a, size_t i) {
    if (i + 1 >= a->n_blocks || a->blocks[i].used || a->blocks[i + 1].used || !same_chunk(a, i))
        return;
    a->blocks[i].size += a->blocks[i + 1].size;
    memmove(&a->blocks[i + 1], &a->blocks[i + 2], (a->n_blocks - i - 2) * sizeof a->blocks[0]);
    a->n_blocks--;
}

int arena_release(struct arena *a, uint64_t addr) {
    size_t lo = 0, hi = a->n_blocks; /* binary search: blocks are sorted by address */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->blocks[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == a->n_blocks || a->blocks[lo].addr != addr || !a->blocks[lo].used)
        return -1;
    a->blocks[lo].used = 0;
    a->in_use -= a->blocks[lo].size;
    merge_next(a, lo);
    if (lo > 0)
        merge_next(a, lo - 1);
    return 0;
}
