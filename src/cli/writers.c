/* writers.c — see writers.h. Formats follow openai-whisper utils.py's writers. */
#include "writers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *format_timestamp(char *buf, int64_t ms, char sep) {
    if (ms < 0)
        ms = 0;
    snprintf(buf, 32, "%02" PRId64 ":%02d:%02d%c%03d", ms / 3600000, (int)(ms / 60000 % 60),
             (int)(ms / 1000 % 60), sep, (int)(ms % 1000));
    return buf;
}

/* The segment's text without surrounding ASCII spaces (as openai's writers .strip()). */
static void put_stripped(FILE *f, const char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n'))
        n--;
    fwrite(s, 1, n, f);
}

static int empty(const char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    return *s == '\0';
}

static void write_txt(FILE *f, const whisperc_state *st) {
    for (int i = 0; i < whisperc_n_segments(st); i++) {
        const char *t = whisperc_segment_text(st, i);
        if (empty(t))
            continue;
        put_stripped(f, t);
        fputc('\n', f);
    }
}

static void write_cues(FILE *f, const whisperc_state *st, int srt) {
    char a[32], b[32];
    int n = 0;
    if (!srt)
        fputs("WEBVTT\n\n", f);
    for (int i = 0; i < whisperc_n_segments(st); i++) {
        const char *t = whisperc_segment_text(st, i);
        if (empty(t))
            continue;
        if (srt)
            fprintf(f, "%d\n", ++n);
        char sep = srt ? ',' : '.';
        fprintf(f, "%s --> %s\n", format_timestamp(a, whisperc_segment_t0_ms(st, i), sep),
                format_timestamp(b, whisperc_segment_t1_ms(st, i), sep));
        put_stripped(f, t);
        fputs("\n\n", f);
    }
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f); /* the library gives valid UTF-8 */
    }
    fputc('"', f);
}

static void write_segment_json(FILE *f, const whisperc_state *st, int i) {
    fprintf(f, "    {\"id\": %d, \"start\": %.3f, \"end\": %.3f, \"text\": ", i,
            whisperc_segment_t0_ms(st, i) / 1000.0, whisperc_segment_t1_ms(st, i) / 1000.0);
    json_string(f, whisperc_segment_text(st, i));
    fputs(", \"tokens\": [", f);
    int n = whisperc_segment_n_tokens(st, i);
    for (int j = 0; j < n; j++)
        fprintf(f, "%s%d", j ? ", " : "", whisperc_segment_token_id(st, i, j));
    fputs("], \"token_probs\": [", f);
    for (int j = 0; j < n; j++)
        fprintf(f, "%s%.4f", j ? ", " : "", whisperc_segment_token_p(st, i, j));
    fprintf(f,
            "], \"temperature\": %.1f, \"avg_logprob\": %.6f, \"compression_ratio\": %.6f, "
            "\"no_speech_prob\": %.6f}",
            whisperc_segment_temperature(st, i), whisperc_segment_avg_logprob(st, i),
            whisperc_segment_compression_ratio(st, i), whisperc_segment_no_speech_prob(st, i));
}

static void write_json(FILE *f, const whisperc_state *st) {
    struct whisperc_timings tm = {.size = sizeof tm};
    whisperc_state_timings(st, &tm);
    fputs("{\n  \"text\": ", f);
    json_string(f, whisperc_full_text(st) ? whisperc_full_text(st) : "");
    fputs(",\n  \"language\": ", f);
    json_string(f, whisperc_full_language(st) ? whisperc_full_language(st) : "");
    fprintf(f, ",\n  \"language_probability\": %.6f,\n  \"duration\": %.3f,\n  \"segments\": [\n",
            whisperc_full_language_prob(st), tm.audio_seconds);
    for (int i = 0; i < whisperc_n_segments(st); i++) {
        write_segment_json(f, st, i);
        fputs(i + 1 < whisperc_n_segments(st) ? ",\n" : "\n", f);
    }
    fputs("  ]\n}\n", f);
}

int write_output(const whisperc_state *st, enum out_format fmt, const char *base, char *err,
                 size_t err_size) {
    static const char *const ext[] = {".txt", ".srt", ".vtt", ".json"};
    char path[4096], tmp[4096 + 16];
    if ((size_t)snprintf(path, sizeof path, "%s%s", base, ext[fmt]) >= sizeof path) {
        snprintf(err, err_size, "%s%s: path too long", base, ext[fmt]);
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd >= 0) { /* mkstemp makes 0600; give the file the mode a plain fopen would */
        mode_t um = umask(0);
        umask(um);
        fchmod(fd, 0666 & ~um);
    }
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        snprintf(err, err_size, "%s: cannot create: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return -1;
    }
    switch (fmt) {
    case OUT_TXT: write_txt(f, st); break;
    case OUT_SRT: write_cues(f, st, 1); break;
    case OUT_VTT: write_cues(f, st, 0); break;
    case OUT_JSON: write_json(f, st); break;
    }
    /* a full disk shows up at the latest in fflush/fsync/fclose */
    int bad = ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0;
    int saved = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (bad || rename(tmp, path) != 0) {
        snprintf(err, err_size, "%s: cannot write: %s", path, strerror(bad ? saved : errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
