/*
 * riff_check.c — the chunk walk of libsndfile's WAV/RF64 header parsers (wav.c wav_read_header,
 * rf64.c rf64_read_header, wavlike.c wavlike_subchunk_parse, as of 1.2.0), reduced to where each
 * chunk ends, to refuse the sizes that send it backwards for ever (see riff_check.h).
 *
 * The walk follows libsndfile's skips, including the ones that are not by the declared size (a
 * data chunk of unknown length, a resync after an unprintable marker), so that it sees the LIST
 * chunks libsndfile parses. It reads a few bytes per chunk and stops after RC_MAX_CHUNKS.
 */
#include "frontend/riff_check.h"

#include <stdbool.h>

#include "libwhisperc.h"
#include "util.h"

#define RC_MAX_CHUNKS (1 << 16)
#define RC_BACKWARDS  0x80000000u /* a skip this long is a negative int in libsndfile's jump */

#define MARKER(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

struct walk {
    riff_read_fn read;
    void *user;
    int64_t size;
    bool big_endian; /* RIFX */
    const char *what;
    char *err;
    size_t err_size;
};

/* The 4 bytes at off: a marker (first byte highest) or, sized, a size in the file's byte order.
 * false when they are not all in the file. */
static bool read_u32(const struct walk *w, int64_t off, bool sized, uint32_t *v) {
    unsigned char b[4];
    if (off < 0 || off > w->size - 4 || w->read(w->user, b, 4, off) != 4)
        return false;
    bool be = !sized || w->big_endian;
    *v = be ? MARKER(b[0], b[1], b[2], b[3]) : MARKER(b[3], b[2], b[1], b[0]);
    return true;
}

static void marker_text(uint32_t m, char out[5]) {
    for (int i = 0; i < 4; i++) {
        unsigned char c = (unsigned char)(m >> (24 - 8 * i));
        out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    out[4] = '\0';
}

static bool printable(uint32_t m) {
    for (int i = 0; i < 4; i++) {
        unsigned char c = (unsigned char)(m >> (8 * i));
        if (c < 0x20 || c >= 0x7f)
            return false;
    }
    return true;
}

// ---- LIST and INFO: wavlike_subchunk_parse

/* The sub-chunks of a LIST (or INFO) chunk whose body of list_size bytes starts at body. */
static int check_list(const struct walk *w, int64_t body, uint32_t list_size) {
    if (list_size <= 8) /* libsndfile: "weird length", skipped whole */
        return 0;
    int64_t len = list_size; /* clamped to the file, as libsndfile does */
    if (len > w->size - body)
        len = w->size - body;
    int64_t off = 0;
    for (int i = 0; off < len && i < RC_MAX_CHUNKS; i++) {
        uint32_t m, size;
        if (!read_u32(w, body + off, false, &m))
            return 0;
        off += 4;
        if (m == MARKER('I', 'N', 'F', 'O') || m == MARKER('a', 'd', 't', 'l'))
            continue; /* a list type: no size follows */
        if (m == 0 || m == MARKER('d', 'a', 't', 'a') || m == MARKER('e', 'x', 'i', 'f') ||
            !read_u32(w, body + off, true, &size))
            return 0; /* libsndfile leaves the list (exif: its own parser, every skip bounded) */
        off += 4;
        uint32_t padded = size + (size & 1); /* in 32 bits, as libsndfile */
        if (off + padded > len) {
            if (padded < RC_BACKWARDS)
                return 0; /* "too big": libsndfile skips to the end of the list */
            char name[5];
            marker_text(m, name);
            wc_errf(w->err, w->err_size,
                    "%s: corrupt WAV: LIST sub-chunk '%s' of %u bytes in a %u-byte LIST chunk "
                    "(at byte %lld; libsndfile would loop on it)",
                    w->what, name, size, list_size, (long long)(body + off - 8));
            return WHISPERC_ERR_AUDIO_FORMAT;
        }
        if (m == MARKER('l', 'a', 'b', 'l') || m == MARKER('D', 'I', 'S', 'P') ||
            m == MARKER('l', 't', 'x', 't') || m == MARKER('n', 'o', 't', 'e'))
            return 0; /* parsed apart or the end of the walk; every skip there is bounded */
        off += padded;
    }
    return 0;
}

// ---- top level: wav_read_header, rf64_read_header

/* Where the data chunk whose body starts at body ends, as libsndfile skips it. */
static int64_t data_end(const struct walk *w, int64_t body, uint32_t size, uint32_t riff_size,
                        int64_t ds64_size) {
    int64_t len = size;
    if (size == 0xffffffffu && ds64_size >= 0)
        len = ds64_size; /* RF64 */
    if ((size == 0 && riff_size == 8 && w->size > 44) || len > w->size - body)
        len = w->size - body; /* never closed, or streamed: the rest of the file */
    return body + len;
}

/* The walk of riff_check; *unsized (when not NULL): the first data chunk's size field and the
 * rest of the file's length, where it declares 0 bytes with bytes after it (else left as it
 * is). */
static int walk_chunks(riff_read_fn read, void *user, int64_t file_size, const char *what,
                       char *err, size_t err_size, struct riff_unsized *unsized) {
    struct walk w = {read, user, file_size, false, what, err, err_size};
    uint32_t riff, riff_size, wave;
    if (!read_u32(&w, 0, false, &riff) || !read_u32(&w, 8, false, &wave) ||
        wave != MARKER('W', 'A', 'V', 'E'))
        return 0;
    bool rf64 = riff == MARKER('R', 'F', '6', '4');
    if (riff != MARKER('R', 'I', 'F', 'F') && riff != MARKER('R', 'I', 'F', 'X') && !rf64)
        return 0;
    w.big_endian = riff == MARKER('R', 'I', 'F', 'X');
    read_u32(&w, 4, true, &riff_size);
    int64_t ds64_size = -1, pos = 12;
    uint32_t pad = 0; /* the previous chunk's odd size: libsndfile skips one byte first */
    for (int i = 0; i < RC_MAX_CHUNKS; i++) {
        uint32_t m, size;
        pos += pad;
        if (pos >= file_size - 4 || !read_u32(&w, pos, false, &m) || m == 0 ||
            !read_u32(&w, pos + 4, true, &size))
            return 0; /* libsndfile: "End", or a 0 marker */
        int64_t body = pos + 8, next = body + size;
        pad = size & 1;
        if (m == MARKER('d', 'a', 't', 'a') && size == 0 && body < file_size && !rf64 && unsized &&
            unsized->at < 0) {
            int64_t n = file_size - body;
            uint32_t v = n < 0xfffffffe ? (uint32_t)n : 0xfffffffeu; /* 0xffffffff: streamed */
            unsized->at = pos + 4;
            for (int k = 0; k < 4; k++)
                unsized->size[k] = (unsigned char)(v >> (w.big_endian ? 24 - 8 * k : 8 * k));
        }
        if (m == MARKER('d', 'a', 't', 'a')) {
            next = data_end(&w, body, size, riff_size, ds64_size);
            pad = 0;
        } else if (m == MARKER('L', 'I', 'S', 'T') || m == MARKER('I', 'N', 'F', 'O')) {
            int rc = check_list(&w, body, size);
            if (rc)
                return rc;
        } else if (rf64 && m == MARKER('d', 's', '6', '4')) {
            unsigned char b[8];
            if (read(user, b, 8, body + 8) == 8) {
                uint64_t v = 0;
                for (int k = 7; k >= 0; k--)
                    v = v << 8 | b[k];
                ds64_size = v < (uint64_t)INT64_MAX ? (int64_t)v : INT64_MAX;
            }
        } else if (!printable(m)) {
            if (!((pos + 8) & 3))
                return 0; /* libsndfile gives up */
            pos += 5;     /* it resyncs: back 3 bytes from the end of this header */
            pad = 0;
            continue;
        }
        if (m != MARKER('d', 'a', 't', 'a') && size >= RC_BACKWARDS && size < file_size) {
            char name[5];
            marker_text(m, name);
            wc_errf(err, err_size,
                    "%s: corrupt WAV: '%s' chunk of %u bytes at byte %lld of a %lld-byte file "
                    "(libsndfile would jump backwards on it)",
                    what, name, size, (long long)pos, (long long)file_size);
            return WHISPERC_ERR_AUDIO_FORMAT;
        }
        if (size >= file_size && m != MARKER('d', 'a', 't', 'a'))
            return 0; /* libsndfile stops after a chunk as long as the file */
        pos = next;
    }
    return 0;
}

int riff_check(riff_read_fn read, void *user, int64_t file_size, const char *what, char *err,
               size_t err_size) {
    return walk_chunks(read, user, file_size, what, err, err_size, NULL);
}

bool riff_unsized_data(riff_read_fn read, void *user, int64_t file_size, struct riff_unsized *out) {
    char err[8];
    out->at = -1;
    return walk_chunks(read, user, file_size, "", err, sizeof err, out) == 0 && out->at >= 0;
}
