/*
 * iff_check.c — the chunk walks of libsndfile's AIFF and CAF header parsers (aiff.c
 * aiff_read_header, caf.c caf_read_header, as of 1.2.0), reduced to where libsndfile lands after
 * each chunk, to refuse a landing at or before the chunk when the parser would go on from there
 * (see iff_check.h). A jump before the start of the file does not move libsndfile (header_seek
 * ignores it), so neither does it move the walk. Chunks that libsndfile ends by what it reads
 * rather than by their size (COMM, SSND, the text chunks) are followed as it does, so that the
 * walk sees the chunks it parses; it reads a few bytes per chunk and stops after IC_MAX_CHUNKS.
 */
#include "frontend/iff_check.h"

#include <stdbool.h>

#include "libwhisperc.h"
#include "util.h"

#define IC_MAX_CHUNKS (1 << 16)
#define IC_TEXT_MAX   8190 /* aiff.c: a text chunk this long or longer is an error (its buffer) */

#define MARKER(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

struct walk {
    riff_read_fn read;
    void *user;
    int64_t size;
};

/* n (4 or 8) big-endian bytes at off; false when they are not all in the file. */
static bool read_be(const struct walk *w, int64_t off, int n, uint64_t *v) {
    unsigned char b[8];
    if (off < 0 || off > w->size - n || w->read(w->user, b, (size_t)n, off) != (size_t)n)
        return false;
    *v = 0;
    for (int i = 0; i < n; i++)
        *v = *v << 8 | b[i];
    return true;
}

/* Where libsndfile's "j" of `skip` bytes from `from` lands: the count is an int. */
static int64_t jump(int64_t from, uint64_t skip) {
    int64_t to = from + (int32_t)(uint32_t)skip;
    return to < 0 ? from : to;
}

static bool printable(uint32_t m) {
    for (int i = 0; i < 4; i++) {
        unsigned char c = (unsigned char)(m >> (8 * i));
        if (c < 0x20 || c >= 0x7f)
            return false;
    }
    return true;
}

static int refuse(const char *kind, uint32_t m, uint64_t size, int64_t pos, int64_t size_file,
                  const char *what, char *err, size_t err_size) {
    char name[5];
    for (int i = 0; i < 4; i++) {
        unsigned char c = (unsigned char)(m >> (24 - 8 * i));
        name[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    name[4] = '\0';
    wc_errf(err, err_size,
            "%s: corrupt %s: '%s' chunk of %llu bytes at byte %lld of a %lld-byte file "
            "(libsndfile would jump backwards on it)",
            what, kind, name, (unsigned long long)size, (long long)pos, (long long)size_file);
    return WHISPERC_ERR_AUDIO_FORMAT;
}

// ---- AIFF: aiff_read_header

/* Where libsndfile is after the chunk at pos (marker m, size field *cs), and in *cs the size it
 * then compares with the file's length; -1 where it stops (an error, or it gives up). */
static int64_t aiff_next(const struct walk *w, int64_t pos, uint32_t m, uint32_t *cs,
                         uint32_t *pad) {
    uint32_t size = *cs;
    int64_t body = pos + 8;
    *pad = size & 1;
    switch (m) {
    case MARKER('F', 'O', 'R', 'M'): return -1; /* a second FORM: an error */
    case MARKER('S', 'S', 'N', 'D'): {          /* seeks to the data's end, clamped to the file */
        int64_t len = (int64_t)size - 8;
        if (len < 0 || len > w->size - (body + 8))
            len = w->size - (body + 8);
        return body + 8 + len;
    }
    case MARKER('C', 'O', 'M', 'M'): { /* reads its fields, skips nothing */
        uint32_t s = size + (size & 1);
        *cs = s, *pad = 0;
        if (s > 0x10000 && !(s & 0xffff))
            s = s >> 24 | (s >> 8 & 0xff00) | (s << 8 & 0xff0000) | s << 24;
        return body + (s == 22 ? 22 : s >= 24 ? (s < 8192 ? s : 8192) : 18);
    }
    case MARKER('N', 'O', 'N', 'E'): /* "broken AIFC": the size's top byte, minus 3 */
        *cs = (size >> 24) - 3, *pad = *cs & 1;
        return jump(body, *cs);
    case MARKER('(', 'c', ')', ' '):
    case MARKER('A', 'U', 'T', 'H'):
    case MARKER('N', 'A', 'M', 'E'):
    case MARKER('A', 'N', 'N', 'O'):
        if (size >= IC_TEXT_MAX)
            return -1;
        *cs = size + (size & 1), *pad = 0;
        return body + *cs;
    case MARKER('A', 'P', 'P', 'L'):
        if (size >= 4 && size < IC_TEXT_MAX) {
            *cs = size + (size & 1), *pad = 0;
            return body + *cs;
        }
        return size ? jump(body, (uint32_t)(size + (size & 1))) : body;
    case MARKER('C', 'O', 'M', 'T'):
    case MARKER('M', 'A', 'R', 'K'):
    case MARKER('b', 'a', 's', 'c'):
    case MARKER('C', 'H', 'A', 'N'):
    case MARKER('I', 'N', 'S', 'T'):
    case MARKER('P', 'E', 'A', 'K'):
    case MARKER('F', 'V', 'E', 'R'):
    case MARKER('S', 'F', 'X', '!'):
        return jump(body, size); /* what they read, then a skip to the declared end */
    default:
        if (size >= 0xffff0000u)
            return -1; /* "Exiting parser" */
        if (printable(m))
            return jump(body, size);
        return (body & 3) ? pos + 5 : -1; /* resync 3 bytes back, or give up */
    }
}

static int aiff_check(const struct walk *w, const char *what, char *err, size_t err_size) {
    int64_t pos = 12;
    uint32_t pad = 0;
    for (int i = 0; i < IC_MAX_CHUNKS; i++) {
        uint64_t m, size;
        pos += pad;
        if (!read_be(w, pos, 4, &m) || m == 0 || !read_be(w, pos + 4, 4, &size))
            return 0; /* a 0 marker, or the end */
        uint32_t cs = (uint32_t)size;
        int64_t next = aiff_next(w, pos, (uint32_t)m, &cs, &pad);
        if (next < 0 || cs >= w->size)
            return 0; /* libsndfile stops here */
        if (next <= pos)
            return refuse("AIFF", (uint32_t)m, size, pos, w->size, what, err, err_size);
        if (next >= w->size - 8)
            return 0;
        pos = next;
    }
    return 0;
}

// ---- CAF: caf_read_header

static int caf_check(const struct walk *w, const char *what, char *err, size_t err_size) {
    uint64_t m, desc_size, channels;
    if (!read_be(w, 8, 4, &m) || m != MARKER('d', 'e', 's', 'c') ||
        !read_be(w, 12, 8, &desc_size) || (int64_t)desc_size < 32 || !read_be(w, 44, 4, &channels))
        return 0;
    int64_t pos = 52; /* the desc chunk's fields read; its excess is skipped as an int too */
    if ((int64_t)desc_size > 32)
        pos = jump(pos, desc_size - 32);
    for (int i = 0; i < IC_MAX_CHUNKS; i++) {
        uint64_t usize;
        if (!read_be(w, pos, 4, &m) || m == 0 || !read_be(w, pos + 4, 8, &usize))
            return 0;
        int64_t size = (int64_t)usize, body = pos + 12, next;
        if (size < 0 || size > w->size)
            return 0; /* libsndfile stops before it */
        bool goes_on = true;
        switch (m) {
        case MARKER('d', 'a', 't', 'a'): { /* skips the data after its 4-byte edit count */
            int64_t len = size - 4;
            if (size > w->size - (body + 4) + 10)
                len = w->size - (body + 4) - 8;
            next = jump(body + 4, (uint64_t)len);
            break;
        }
        case MARKER('p', 'a', 'k', 't'):
            if (size < 24 || size > w->size - body)
                return 0; /* an error */
            next = jump(body + 24, (uint64_t)(size - 24));
            break;
        case MARKER('i', 'n', 'f', 'o'):
            if (size < 4 || size > w->size - body)
                return 0;
            next = body + size; /* read whole */
            break;
        case MARKER('p', 'e', 'a', 'k'):
            if (size != 4 + 12 * (int64_t)channels)
                return 0; /* an error */
            next = body + size;
            break;
        case MARKER('c', 'h', 'a', 'n'):
            next = size > 12 ? jump(body + 12, (uint64_t)(size - 12)) : body + size;
            break;
        default: /* free, kuki, unknown */ next = jump(body, (uint64_t)size); break;
        }
        if (m != MARKER('d', 'a', 't', 'a') && size >= 0xffffff00)
            goes_on = false;
        if (!goes_on)
            return 0;
        if (next <= pos)
            return refuse("CAF", (uint32_t)m, (uint64_t)size, pos, w->size, what, err, err_size);
        if (next >= w->size - 8)
            return 0;
        pos = next;
    }
    return 0;
}

int iff_check(riff_read_fn read, void *user, int64_t file_size, const char *what, char *err,
              size_t err_size) {
    struct walk w = {read, user, file_size};
    uint64_t m, type;
    if (!read_be(&w, 0, 4, &m))
        return 0;
    if (m == MARKER('F', 'O', 'R', 'M') && read_be(&w, 8, 4, &type) &&
        (type == MARKER('A', 'I', 'F', 'F') || type == MARKER('A', 'I', 'F', 'C')))
        return aiff_check(&w, what, err, err_size);
    if (m == MARKER('c', 'a', 'f', 'f'))
        return caf_check(&w, what, err, err_size);
    return 0;
}
