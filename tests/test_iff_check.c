/*
 * test_iff_check.c — riff_check / iff_check on virtual files: a few header bytes followed by
 * zeros up to any declared length, so that the > 2 GiB layouts that send libsndfile 1.2.0 round
 * for ever are tried without a sparse file, at the exact size boundaries. The CLI's end-to-end
 * cases (real sparse files through libsndfile) are in test_hostile.py.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "frontend/iff_check.h"
#include "frontend/riff_check.h"
#include "libwhisperc.h"

#define GiB (1ll << 30)

/* Header bytes, then zeros (or `fill`, repeated) up to size. */
struct vfile {
    unsigned char head[512];
    size_t n_head;
    int64_t size;
    const char *fill; /* 8 bytes, or NULL for zeros */
    int n_reads;
};

static size_t vread(void *user, void *buf, size_t n, int64_t off) {
    struct vfile *f = user;
    f->n_reads++;
    if (off < 0 || off >= f->size)
        return 0;
    if ((int64_t)n > f->size - off)
        n = (size_t)(f->size - off);
    for (size_t i = 0; i < n; i++) {
        int64_t at = off + (int64_t)i, past = at - (int64_t)f->n_head;
        ((unsigned char *)buf)[i] = past < 0  ? f->head[at]
                                    : f->fill ? (unsigned char)f->fill[past % 8]
                                              : 0;
    }
    return n;
}

static void put(struct vfile *f, const void *p, size_t n) {
    memcpy(f->head + f->n_head, p, n);
    f->n_head += n;
}

static void put_be(struct vfile *f, uint64_t v, int n) {
    for (int i = n - 1; i >= 0; i--)
        f->head[f->n_head++] = (unsigned char)(v >> (8 * i));
}

/* FORM AIFF with a COMM chunk (16 kHz s16 mono), then one chunk `marker` declaring `size`. */
static struct vfile aiff_with(const char *marker, uint32_t size, int64_t file_size) {
    struct vfile f = {.size = file_size};
    put(&f, "FORM", 4);
    put_be(&f, 0xfffffff0u, 4);
    put(&f, "AIFFCOMM", 8);
    put_be(&f, 18, 4);
    put_be(&f, 1, 2);           /* channels */
    put_be(&f, 8000, 4);        /* frames */
    put_be(&f, 16, 2);          /* bits */
    put(&f, "\x40\x0c\xfa", 3); /* 16000 as an 80-bit extended float */
    put(&f, "\0\0\0\0\0\0\0", 7);
    put(&f, marker, 4);
    put_be(&f, size, 4);
    return f;
}

/* caff with a desc chunk (16 kHz s16 mono), a free chunk of 300 bytes at byte 52, then one chunk
 * `marker` declaring `size` at byte 364. */
static struct vfile caf_with(const char *marker, uint64_t size, int64_t file_size) {
    struct vfile f = {.size = file_size};
    put(&f, "caff\0\1\0\0desc", 12);
    put_be(&f, 32, 8);
    put_be(&f, 0x40cf400000000000ull, 8); /* 16000.0 */
    put(&f, "lpcm", 4);
    put_be(&f, 2, 4);  /* flags: little-endian */
    put_be(&f, 2, 4);  /* bytes per packet */
    put_be(&f, 1, 4);  /* frames per packet */
    put_be(&f, 1, 4);  /* channels */
    put_be(&f, 16, 4); /* bits */
    put(&f, "free", 4);
    put_be(&f, 300, 8);
    f.n_head += 300;
    put(&f, marker, 4);
    put_be(&f, size, 8);
    return f;
}

static int iff(struct vfile *f, char *err, size_t n) {
    err[0] = '\0';
    return iff_check(vread, f, f->size, "x", err, n);
}

static void test_aiff(void) {
    char err[256];
    /* the loop: FVER of 0xfffffff8 in a 4 GiB file jumps 8 bytes back onto itself */
    struct vfile f = aiff_with("FVER", 0xfffffff8u, 4 * GiB);
    CHECK(iff(&f, err, sizeof err) == WHISPERC_ERR_AUDIO_FORMAT);
    CHECK(strstr(err, "x: corrupt AIFF: 'FVER' chunk of 4294967288 bytes at byte 38") != NULL);
    /* the same chunk in a file shorter than its size: libsndfile stops there */
    f = aiff_with("FVER", 0xfffffff8u, 4 * GiB - 16);
    f.size = 0xfffffff8ll;
    CHECK(iff(&f, err, sizeof err) == 0 && err[0] == '\0');
    f.size = 0xfffffff9ll; /* one byte longer: it goes on, backwards */
    CHECK(iff(&f, err, sizeof err) == WHISPERC_ERR_AUDIO_FORMAT);
    /* 2^31 - 1 is a jump forwards; 2^31 lands before the file's start, which libsndfile
     * ignores (it stays put and reads on), so neither loops */
    f = aiff_with("FVER", 0x7fffffffu, 4 * GiB);
    CHECK(iff(&f, err, sizeof err) == 0);
    f = aiff_with("FVER", 0x80000000u, 4 * GiB);
    CHECK(iff(&f, err, sizeof err) == 0);
    /* the text chunks are read whole, never skipped backwards; 0xffff0000 and more of an
     * unknown chunk ends the parse */
    f = aiff_with("NAME", 0xfffffff8u, 4 * GiB);
    CHECK(iff(&f, err, sizeof err) == 0);
    f = aiff_with("zzzz", 0xfffffff8u, 4 * GiB);
    CHECK(iff(&f, err, sizeof err) == 0);
    f = aiff_with("COMT", 0xfffffff0u, 4 * GiB); /* read, then skipped 16 bytes back */
    CHECK(iff(&f, err, sizeof err) == WHISPERC_ERR_AUDIO_FORMAT);
    CHECK(strstr(err, "'COMT' chunk of 4294967280 bytes") != NULL);
    /* a valid layout */
    f = aiff_with("SSND", 16008, 12 + 8 + 18 + 8 + 16008);
    CHECK(iff(&f, err, sizeof err) == 0);
}

static void test_caf(void) {
    char err[256];
    /* CAF sizes are 64-bit, libsndfile stops at a non-data chunk of 0xffffff00 bytes or more,
     * and a jump before the file's start leaves it in place: the loop is a chunk whose size
     * (under 0xffffff00, over the file's 4 GiB) jumps 257..2^31 bytes back onto an earlier
     * chunk. 0xfffffebc at byte 364 lands on the free chunk at byte 52. */
    struct vfile f = caf_with("free", 0xfffffebcull, 4 * GiB);
    CHECK(iff(&f, err, sizeof err) == WHISPERC_ERR_AUDIO_FORMAT);
    CHECK(strstr(err, "x: corrupt CAF: 'free' chunk of 4294966972 bytes at byte 364") != NULL);
    f.size = 0xfffffebcll - 1; /* a chunk longer than the file: libsndfile stops before it */
    CHECK(iff(&f, err, sizeof err) == 0);
    f = caf_with("kuki", 0xffffff00ull, 8 * GiB); /* ends the parse */
    CHECK(iff(&f, err, sizeof err) == 0);
    f = caf_with("free", 0xfffffebcull + 0x100000000ull, 8 * GiB); /* 64-bit: ends it too */
    CHECK(iff(&f, err, sizeof err) == 0);
    f = caf_with("free", 0xfffffe00ull, 8 * GiB); /* 512 back: before the start, stays put */
    CHECK(iff(&f, err, sizeof err) == 0);
    /* forwards, and a valid data chunk */
    f = caf_with("free", 0x7fffffffull, 8 * GiB);
    CHECK(iff(&f, err, sizeof err) == 0);
    f = caf_with("data", 4 + 16000, 364 + 12 + 4 + 16000);
    CHECK(iff(&f, err, sizeof err) == 0);
}

/* Not AIFF or CAF, cut short, empty: nothing to refuse. A chain of chunks ends within the
 * walk's chunk bound, reading a few bytes per chunk. */
static void test_other(void) {
    char err[256];
    struct vfile f = {.size = 0};
    CHECK(iff(&f, err, sizeof err) == 0);
    f = aiff_with("FVER", 0xfffffff8u, 4 * GiB);
    f.size = 30; /* inside COMM */
    CHECK(iff(&f, err, sizeof err) == 0);
    struct vfile wav = {.size = 44};
    put(&wav, "RIFF\x24\0\0\0WAVE", 12);
    CHECK(iff(&wav, err, sizeof err) == 0);
    /* 2 GiB of 8-byte 'zzzz' chunks of size 0: libsndfile walks them all; the check stops at
     * its bound, and passes */
    struct vfile chain = aiff_with("zzzz", 0, 2 * GiB);
    static const char zzzz[8] = {'z', 'z', 'z', 'z', 0, 0, 0, 0};
    chain.fill = zzzz;
    CHECK(iff(&chain, err, sizeof err) == 0);
    CHECK(chain.n_reads < 4 * (1 << 16) + 16);
}

/* riff_check: the LIST sub-chunk that fuzz_audio found ('IQFT' of 0xfffffff8 bytes) and its
 * forward twin. */
static void test_riff(void) {
    char err[256] = "";
    struct vfile f = {.size = 4096};
    put(&f, "RIFF", 4);
    put_be(&f, 0xe80f0000u, 4); /* 4072, little-endian */
    put(&f, "WAVELIST", 8);
    put(&f, "\x18\0\0\0INFOIQFT\xf8\xff\xff\xff", 16);
    int rc = riff_check(vread, &f, f.size, "y", err, sizeof err);
    CHECK(rc == WHISPERC_ERR_AUDIO_FORMAT);
    CHECK(strncmp(err, "y: ", 3) == 0);
    memcpy(f.head + 28, "\x04\0\0\0", 4); /* IQFT of 4 bytes */
    CHECK(riff_check(vread, &f, f.size, "y", err, sizeof err) == 0);
}

int main(void) {
    test_aiff();
    test_caf();
    test_other();
    test_riff();
    return TEST_RESULT();
}
