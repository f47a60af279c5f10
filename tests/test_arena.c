/*
 * test_arena.c — the device-memory arena's bookkeeping (src/gpu/arena.c) on host memory:
 * alignment, no two live blocks overlapping, reuse after release in any order, merging of
 * neighbours, growth by chunks, refusal of unknown addresses, and a failing chunk allocator.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "gpu/arena.h"

struct host_chunks {
    int n_alloc, n_free, fail;
    size_t refuse_above; /* nonzero: chunks larger than this are refused (memory nearly full) */
};

static int host_alloc(void *ctx, size_t bytes, uint64_t *addr, char *err, size_t err_size) {
    struct host_chunks *h = ctx;
    if (h->fail || (h->refuse_above && bytes > h->refuse_above)) {
        snprintf(err, err_size, "refused %zu bytes", bytes);
        return -1;
    }
    void *p = aligned_alloc(ARENA_ALIGN, bytes);
    if (!p) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    memset(p, 0xab, bytes);
    h->n_alloc++;
    *addr = (uint64_t)(uintptr_t)p;
    return 0;
}

static void host_free(void *ctx, uint64_t addr) {
    struct host_chunks *h = ctx;
    h->n_free++;
    free((void *)(uintptr_t)addr);
}

#define N_LIVE 64

int main(void) {
    struct host_chunks h = {0, 0, 0, 0};
    struct arena_chunk_ops ops = {host_alloc, host_free, &h};
    struct arena a;
    char err[256];
    struct test_rng rng = {42};
    uint64_t live[N_LIVE] = {0};
    size_t size[N_LIVE] = {0};

    arena_init(&a, &ops, 1 << 16, 1);
    /* random allocations and releases; each live block is filled with its index, and checked
     * before release, so an overlap shows up as a wrong byte */
    for (int it = 0; it < 5000; it++) {
        int i = (int)((test_rng_uniform(&rng) + 1.0f) * 0.5f * N_LIVE) % N_LIVE;
        if (live[i]) {
            unsigned char *p = (unsigned char *)(uintptr_t)live[i];
            for (size_t j = 0; j < size[i]; j++)
                if (p[j] != (unsigned char)i) {
                    CHECK(!"block contents overwritten: blocks overlap");
                    break;
                }
            CHECK(arena_release(&a, live[i]) == 0);
            live[i] = 0;
        } else {
            float u = (test_rng_uniform(&rng) + 1.0f) * 0.5f;
            size[i] = (size_t)(u * u * u * 200000.0f); /* mostly small, some above a chunk */
            CHECK(arena_alloc(&a, size[i], &live[i], err, sizeof err) == 0);
            CHECK(live[i] % ARENA_ALIGN == 0);
            memset((void *)(uintptr_t)live[i], i, size[i]);
        }
    }
    for (int i = 0; i < N_LIVE; i++)
        if (live[i])
            CHECK(arena_release(&a, live[i]) == 0);
    CHECK(a.in_use == 0);
    /* everything released: each chunk is one free block again */
    CHECK(a.n_blocks == a.n_chunks);
    printf("random: %zu chunks, %zu KiB reserved\n", a.n_chunks, a.reserved >> 10);

    /* growth doubles: a long run of allocations needs few chunks */
    size_t chunks_before = a.n_chunks;
    uint64_t big[40];
    for (int i = 0; i < 40; i++)
        CHECK(arena_alloc(&a, 100000, &big[i], err, sizeof err) == 0);
    CHECK(a.n_chunks - chunks_before <= 3);
    for (int i = 0; i < 40; i++)
        CHECK(arena_release(&a, big[i]) == 0);

    /* merging: a fixed 1 MiB chunk cut in 16 blocks, released out of order, is one block again
     * and holds 1 MiB without a new chunk */
    struct arena m;
    arena_init(&m, &ops, 1 << 20, 0);
    uint64_t part[16];
    for (int i = 0; i < 16; i++)
        CHECK(arena_alloc(&m, 65536, &part[i], err, sizeof err) == 0);
    CHECK(m.n_chunks == 1);
    for (int i = 0; i < 16; i += 2)
        CHECK(arena_release(&m, part[i]) == 0);
    CHECK(m.n_blocks == 16);
    for (int i = 15; i > 0; i -= 2)
        CHECK(arena_release(&m, part[i]) == 0);
    CHECK(m.n_blocks == 1);
    uint64_t whole;
    CHECK(arena_alloc(&m, 1 << 20, &whole, err, sizeof err) == 0);
    CHECK(whole == part[0] && m.n_chunks == 1);
    /* without growth a request larger than the chunk gets a chunk of its own size */
    uint64_t huge;
    CHECK(arena_alloc(&m, 3 << 20, &huge, err, sizeof err) == 0);
    CHECK(m.n_chunks == 2 && m.reserved == (size_t)4 << 20);
    arena_free(&m);

    /* unknown addresses, double release, zero bytes */
    uint64_t z;
    CHECK(arena_alloc(&a, 0, &z, err, sizeof err) == 0);
    CHECK(arena_release(&a, z + ARENA_ALIGN) == -1);
    CHECK(arena_release(&a, z) == 0);
    CHECK(arena_release(&a, z) == -1);
    CHECK(arena_release(&a, 12345) == -1);

    /* a refused chunk is an error with the allocator's message, and nothing changes */
    h.fail = 1;
    uint64_t x = 1;
    size_t reserved = a.reserved;
    CHECK(arena_alloc(&a, a.reserved * 4, &x, err, sizeof err) == -1);
    CHECK(x == 0 && strstr(err, "refused") != NULL && a.reserved == reserved);
    CHECK(arena_alloc(&a, (size_t)-1, &x, err, sizeof err) == -1);
    h.fail = 0;

    /* memory nearly full: the padded chunk (min_chunk) is refused, the exact size is not */
    struct arena f;
    arena_init(&f, &ops, 1 << 20, 1);
    h.refuse_above = 1 << 18;
    CHECK(arena_alloc(&f, 1000, &x, err, sizeof err) == 0);
    CHECK(f.n_chunks == 1 && f.reserved == 1024);
    CHECK(arena_alloc(&f, (1 << 18) + 1, &x, err, sizeof err) == -1 && f.reserved == 1024);
    h.refuse_above = 0;
    arena_free(&f);

    arena_free(&a);
    CHECK(h.n_alloc == h.n_free);
    CHECK(a.n_blocks == 0 && a.reserved == 0);
    /* usable again after arena_free */
    CHECK(arena_alloc(&a, 10, &x, err, sizeof err) == 0);
    arena_free(&a);
    CHECK(h.n_alloc == h.n_free);
    return TEST_RESULT();
}
