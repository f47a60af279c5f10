/*
 * arena.h — device memory handed out in pieces: a few large chunks (cuMemAlloc'd rarely) cut
 * into 256-byte-aligned blocks on request, released in any order into a free list that merges
 * neighbours. One arena per stream for activations (no cuMemAlloc per op or token) and one per
 * model for weights.
 *
 * The arena only does the bookkeeping; where chunks come from is the caller's (struct
 * arena_chunk_ops), so the same code serves device memory and is tested on host memory.
 * Addresses are plain integers (a CUdeviceptr is one). Not thread-safe: a stream's arena is
 * used by one thread at a time, the weights arena only while the model loads.
 */
#ifndef WC_GPU_ARENA_H
#define WC_GPU_ARENA_H

#include <stddef.h>
#include <stdint.h>

#define ARENA_ALIGN 256

struct arena_chunk_ops {
    /* Reserves `bytes` (a multiple of ARENA_ALIGN) at an ARENA_ALIGN-aligned address; returns
     * 0, or -1 with a message in err. */
    int (*alloc)(void *ctx, size_t bytes, uint64_t *addr, char *err, size_t err_size);
    void (*free)(void *ctx, uint64_t addr);
    void *ctx;
};

struct arena_block {
    uint64_t addr;
    size_t size;
    int used;
};

struct arena_chunk {
    uint64_t addr;
    size_t size;
};

struct arena {
    struct arena_chunk_ops ops;
    size_t min_chunk; /* smallest chunk reserved */
    int grow;         /* nonzero: each new chunk at least as large as all before (doubling) */
    struct arena_chunk *chunks; /* owned */
    size_t n_chunks, cap_chunks;
    struct arena_block *blocks; /* owned; sorted by address, tiling every chunk exactly */
    size_t n_blocks, cap_blocks;
    size_t in_use, reserved; /* bytes handed out / held in chunks */
};

void arena_init(struct arena *a, const struct arena_chunk_ops *ops, size_t min_chunk, int grow);
/* A block of at least `bytes` (0 counts as 1). Returns 0 and *addr, or -1 with err (the
 * chunk allocator's message, or out of host memory for the bookkeeping). */
int arena_alloc(struct arena *a, size_t bytes, uint64_t *addr, char *err, size_t err_size);
/* Returns a block from arena_alloc; -1 when addr is not one (nothing changes then). */
int arena_release(struct arena *a, uint64_t addr);
/* Gives every chunk back. The caller makes sure no queued work still uses them. */
void arena_free(struct arena *a);

#endif /* WC_GPU_ARENA_H */
