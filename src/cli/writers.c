/*
 * writers.c — see writers.h: the atomic write, and the line formats txt (openai-whisper's
 * WriteTXT), tsv (WriteTSV), csv and lrc (whisper.cpp's cli output_csv / output_lrc).
 */
#include "writers.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h" /* wc_py_strip_span */

static const char *const format_ext[OUT_N_FORMATS] = {"txt", "srt", "vtt", "json",
                                                      "csv", "tsv", "lrc", "score.txt"};

const char *out_format_ext(enum out_format fmt) {
    return fmt >= 0 && fmt < OUT_N_FORMATS ? format_ext[fmt] : "";
}

const char *format_timestamp(char *buf, int64_t ms, char sep) {
    if (ms < 0)
        ms = 0;
    snprintf(buf, 32, "%02" PRId64 ":%02d:%02d%c%03d", ms / 3600000, (int)(ms / 60000 % 60),
             (int)(ms / 1000 % 60), sep, (int)(ms % 1000));
    return buf;
}

/* s without surrounding whitespace (as openai-whisper's str.strip(), Unicode's too): start and
 * length. */
static const char *strip(const char *s, size_t *n) { return wc_py_strip_span(s, strlen(s), n); }

/* The stripped text on one line: tabs and line breaks become spaces (tsv, lrc). */
static void put_one_line(FILE *f, const char *s) {
    size_t n;
    s = strip(s, &n);
    for (size_t i = 0; i < n; i++)
        fputc(s[i] == '\t' || s[i] == '\n' || s[i] == '\r' ? ' ' : s[i], f);
}

static void write_txt(FILE *f, const struct transcript *tr) {
    for (int i = 0; i < tr->n_segments; i++) {
        size_t n;
        const char *t = strip(tr->segments[i].text, &n);
        if (n == 0)
            continue;
        if (tr->diarized)
            fprintf(f, "%s ", cli_speaker_label(tr->segments[i].speaker, false));
        fwrite(t, 1, n, f);
        fputc('\n', f);
    }
}

/* RFC 4180: the text quoted, quotes doubled, so any csv reader gets it back. */
static void write_csv(FILE *f, const struct transcript *tr) {
    fputs(tr->diarized ? "start,end,speaker,text\n" : "start,end,text\n", f);
    for (int i = 0; i < tr->n_segments; i++) {
        const struct tr_segment *s = &tr->segments[i];
        size_t n;
        const char *t = strip(s->text, &n);
        fprintf(f, "%" PRId64 ",%" PRId64 ",", s->t0_ms, s->t1_ms);
        if (tr->diarized)
            fprintf(f, "%s,", cli_speaker_label(s->speaker, true));
        fputc('"', f);
        for (size_t k = 0; k < n; k++) {
            if (t[k] == '"')
                fputc('"', f);
            fputc(t[k], f);
        }
        fputs("\"\n", f);
    }
}

static void write_tsv(FILE *f, const struct transcript *tr) {
    fputs("start\tend\ttext\n", f);
    for (int i = 0; i < tr->n_segments; i++) {
        fprintf(f, "%" PRId64 "\t%" PRId64 "\t", tr->segments[i].t0_ms, tr->segments[i].t1_ms);
        put_one_line(f, tr->segments[i].text);
        fputc('\n', f);
    }
}

/* whisper.cpp's -ls (--log-score): every token, timestamps included, and the probability it
 * had when chosen, "text<TAB>p" a line (C++'s default float output: %g). */
static void write_score(FILE *f, const struct transcript *tr) {
    for (int i = 0; i < tr->n_segments; i++)
        for (int j = 0; j < tr->segments[i].n_tokens; j++)
            fprintf(f, "%s\t%g\n", tr->segments[i].tokens[j].text,
                    (double)tr->segments[i].tokens[j].p);
}

/* [mm:ss.xx]text, minutes uncapped and hundredths truncated, as whisper.cpp. */
static void write_lrc(FILE *f, const struct transcript *tr) {
    fputs("[by:whisper-c]\n", f);
    for (int i = 0; i < tr->n_segments; i++) {
        int64_t ms = tr->segments[i].t0_ms < 0 ? 0 : tr->segments[i].t0_ms;
        fprintf(f, "[%02" PRId64 ":%02d.%02d]", ms / 60000, (int)(ms / 1000 % 60),
                (int)(ms % 1000 / 10));
        if (tr->diarized) /* -di: whisper.cpp's label before the text */
            fprintf(f, "%s ", cli_speaker_label(tr->segments[i].speaker, false));
        put_one_line(f, tr->segments[i].text);
        fputc('\n', f);
    }
}

int write_format(FILE *f, const struct transcript *tr, enum out_format fmt,
                 const struct writer_opts *wo) {
    const struct writer_opts none = {0};
    if (!wo)
        wo = &none;
    switch (fmt) {
    case OUT_SRT: return write_subtitles(f, tr, true, wo);
    case OUT_VTT: return write_subtitles(f, tr, false, wo);
    case OUT_JSON: return write_json(f, tr, wo);
    case OUT_TXT: write_txt(f, tr); break;
    case OUT_CSV: write_csv(f, tr); break;
    case OUT_TSV: write_tsv(f, tr); break;
    case OUT_LRC: write_lrc(f, tr); break;
    case OUT_SCORE: write_score(f, tr); break;
    case OUT_N_FORMATS: break;
    }
    return 0;
}

/* A new file "path.XXXXXXXX" (tmp), or ".wc-XXXXXXXX" in path's directory where path's name
 * leaves no room for 9 more bytes (NAME_MAX), created as fopen would: mode 0666 less the umask.
 * mkstemp's 0600 would need the umask read back, and umask() is process-wide: batch workers
 * reading it at once could leave it 0 while another creates a file. */
static int create_beside(const char *path, char *tmp, size_t size) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t x = ((uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 40 ^
                  (uint64_t)(uintptr_t)tmp) |
                 1; /* tmp: on this thread's stack; never 0 */
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash + 1 - path) : 0;
    bool beside = strlen(path + dir_len) + 9 <= NAME_MAX;
    for (int tries = 0; tries < 100; tries++) {
        x ^= x << 13; /* xorshift64 */
        x ^= x >> 7;
        x ^= x << 17;
        if (beside)
            snprintf(tmp, size, "%s.%08llx", path, (unsigned long long)(x & 0xffffffffu));
        else
            snprintf(tmp, size, "%.*s.wc-%08llx", dir_len, path,
                     (unsigned long long)(x & 0xffffffffu));
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

int write_output_stdout(const struct transcript *tr, const bool *want, const struct writer_opts *wo,
                        char *err, size_t err_size) {
    static const enum out_format order[] = {OUT_TXT,  OUT_VTT, OUT_SRT,   OUT_CSV,
                                            OUT_JSON, OUT_LRC, OUT_SCORE, OUT_TSV};
    bool written = false;
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        if (!want[order[i]])
            continue;
        if (written) {
            fprintf(stderr, "whisper-c: -of -: %s not written (one format goes to stdout)\n",
                    out_format_ext(order[i]));
            continue;
        }
        written = true;
        errno = 0;
        int oom = write_format(stdout, tr, order[i], wo) != 0;
        if (oom || fflush(stdout) != 0 || ferror(stdout)) {
            int e = oom ? ENOMEM : errno ? errno : EIO;
            snprintf(err, err_size, "standard output: cannot write: %s", strerror(e));
            return e;
        }
    }
    return 0;
}

int output_dir_check(const char *base, char *err, size_t err_size) {
    if (strcmp(base, "-") == 0)
        return 0;
    const char *slash = strrchr(base, '/');
    char dir[4096];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == base ? 1 : (int)(slash - base), base);
    if (access(dir, W_OK | X_OK) == 0)
        return 0;
    int e = errno;
    snprintf(err, err_size, "%.900s: cannot write its outputs there: %s", base, strerror(e));
    return -1;
}

int write_output(const struct transcript *tr, enum out_format fmt, const struct writer_opts *wo,
                 const char *base, char *err, size_t err_size) {
    char path[4096], tmp[4096 + 16];
    if ((size_t)snprintf(path, sizeof path, "%s.%s", base, out_format_ext(fmt)) >= sizeof path) {
        snprintf(err, err_size, "%.900s.%s: path too long", base, out_format_ext(fmt));
        return ENAMETOOLONG;
    }
    int fd = create_beside(path, tmp, sizeof tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int e = errno ? errno : EIO;
        snprintf(err, err_size, "%s: cannot create: %s", path, strerror(e));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return e;
    }
    errno = 0;
    int oom = write_format(f, tr, fmt, wo) != 0;
    /* a full disk (or RLIMIT_FSIZE: SIGXFSZ is ignored, so EFBIG) shows up at the latest in
     * fflush/fsync/fclose */
    int bad = oom || ferror(f), saved = oom ? ENOMEM : errno;
    if (!bad && (fflush(f) != 0 || ((!wo || !wo->no_sync) && fsync(fileno(f)) != 0)))
        bad = 1, saved = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (bad || rename(tmp, path) != 0) {
        if (!bad)
            saved = errno;
        saved = saved ? saved : EIO;
        snprintf(err, err_size, "%s: cannot write: %s", path, strerror(saved));
        unlink(tmp);
        return saved;
    }
    return 0;
}
