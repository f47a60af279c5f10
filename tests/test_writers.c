/*
 * test_writers.c — the output writers of the whisper-c command (src/cli/writers*.c) on
 * hand-made transcripts: timestamps (past an hour and past 99 hours), JSON string escaping for
 * any bytes, csv quoting, tsv and lrc lines, srt/vtt cues with and without words, openai-whisper's
 * subtitle options, and the atomic write. No model needed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "writers.h"

int test_failures;

/* The format written into a string (caller frees). */
static char *render(const struct transcript *tr, enum out_format fmt,
                    const struct writer_opts *wo) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return strdup("");
    CHECK(write_format(f, tr, fmt, wo) == 0);
    fclose(f);
    return buf;
}

static int expect_eq(const char *what, const char *got, const char *want) {
    if (strcmp(got, want) == 0)
        return 1;
    fprintf(stderr, "%s:\n--- got ---\n%s\n--- want ---\n%s\n-----------\n", what, got, want);
    test_failures++;
    return 0;
}

static int expect_has(const char *what, const char *got, const char *needle) {
    if (strstr(got, needle))
        return 1;
    fprintf(stderr, "%s: %s\n--- not found in ---\n%s\n", what, needle, got);
    test_failures++;
    return 0;
}

static void test_timestamps(void) {
    char b[32];
    expect_eq("0", format_timestamp(b, 0, '.'), "00:00:00.000");
    expect_eq("negative", format_timestamp(b, -20, ','), "00:00:00,000");
    expect_eq("1h 2m 3.004s", format_timestamp(b, 3723004, ','), "01:02:03,004");
    expect_eq("59:59.999", format_timestamp(b, 3599999, '.'), "00:59:59.999");
    expect_eq("100 h", format_timestamp(b, 360000000 + 61001, '.'), "100:01:01.001");
}

/* Two segments, the second past an hour, text that needs every kind of escaping. */
static struct tr_segment seg2[2] = {
    {.text = " He said \"hi\", \\ ok\ttab\nline \x01\x7f", .t0_ms = 0, .t1_ms = 1500},
    {.text = " caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 bad\xff --> end ",
     .t0_ms = 3723450,
     .t1_ms = 3725000},
};

static void test_line_formats(void) {
    struct transcript tr = {.text = "x", .language = "en", .segments = seg2, .n_segments = 2};
    char *s = render(&tr, OUT_CSV, NULL);
    expect_eq("csv", s,
              "start,end,text\n"
              "0,1500,\"He said \"\"hi\"\", \\ ok\ttab\nline \x01\x7f\"\n"
              "3723450,3725000,\"caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 bad\xff --> end\"\n");
    free(s);
    s = render(&tr, OUT_TSV, NULL);
    expect_eq("tsv", s,
              "start\tend\ttext\n"
              "0\t1500\tHe said \"hi\", \\ ok tab line \x01\x7f\n"
              "3723450\t3725000\tcaf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 bad\xff --> end\n");
    free(s);
    s = render(&tr, OUT_LRC, NULL);
    expect_eq("lrc", s,
              "[by:whisper-c]\n"
              "[00:00.00]He said \"hi\", \\ ok tab line \x01\x7f\n"
              "[62:03.45]caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 bad\xff --> end\n");
    free(s);
    struct tr_segment di[2] = {seg2[0], seg2[1]};
    di[0].speaker = 1, di[1].speaker = -1;
    struct transcript trd = {.text = "x", .segments = di, .n_segments = 2, .diarized = true};
    s = render(&trd, OUT_LRC, NULL);
    expect_has("lrc -di: whisper.cpp's labels", s,
               "[00:00.00](speaker 1) He said \"hi\", \\ ok tab line \x01\x7f\n"
               "[62:03.45](speaker ?) caf");
    free(s);
    s = render(&tr, OUT_TXT, NULL);
    expect_eq("txt", s,
              "He said \"hi\", \\ ok\ttab\nline \x01\x7f\n"
              "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 bad\xff --> end\n");
    free(s);
}

/* Python's str.strip() takes Unicode's spaces too: a no-break space (U+00A0) or an ideographic
 * one (U+3000) at a segment's or a word's edge is gone in txt, srt and word cues, as in
 * openai-whisper's files; one inside stays. */
static void test_unicode_strip(void) {
    struct tr_segment seg = {.text = "\xc2\xa0\xe3\x80\x80"
                                     "Bonjour\xc2\xa0!\xe3\x80\x80 ",
                             .t0_ms = 0,
                             .t1_ms = 900};
    struct transcript tr = {.text = "x", .segments = &seg, .n_segments = 1};
    char *s = render(&tr, OUT_TXT, NULL);
    expect_eq("txt: Unicode spaces stripped", s, "Bonjour\xc2\xa0!\n");
    free(s);
    s = render(&tr, OUT_SRT, NULL);
    expect_eq("srt: Unicode spaces stripped", s,
              "1\n00:00:00,000 --> 00:00:00,900\nBonjour\xc2\xa0!\n\n");
    free(s);
    struct tr_word w[2] = {{"\xe3\x80\x80"
                            "a",
                            0, 400, 1},
                           {"\xe3\x80\x80"
                            "b\xc2\xa0",
                            5000, 5400, 1}};
    seg = (struct tr_segment){.text = "a b", .t1_ms = 5400, .words = w, .n_words = 2};
    tr.has_words = true;
    struct writer_opts wo = {.max_line_width = 40, .max_line_count = 2};
    s = render(&tr, OUT_SRT, &wo); /* the pause starts a cue, each word stripped there */
    expect_eq("srt words: Unicode spaces stripped", s,
              "1\n00:00:00,000 --> 00:00:00,400\na\n\n2\n00:00:05,000 --> 00:00:05,400\nb\n\n");
    free(s);
    /* a segment of nothing but such spaces writes nothing */
    seg = (struct tr_segment){.text = "\xc2\xa0\xe2\x80\x83", .t1_ms = 900};
    tr.has_words = false;
    s = render(&tr, OUT_TXT, NULL);
    expect_eq("txt: a segment of Unicode spaces", s, "");
    free(s);
}

static void test_json(void) {
    struct tr_token tok[2] = {
        {.id = 50363, .text = "<|0.00|>", .p = 0.5f, .t0_ms = -1, .t1_ms = -1, .timestamp = true},
        {.id = 7, .text = "\xe2\x9c", .p = 0.25f, .t0_ms = 20, .t1_ms = 400}};
    struct tr_word w[1] = {{.text = " He", .t0_ms = 20, .t1_ms = 400, .p = 0.75f}};
    struct tr_segment segs[2] = {seg2[0], seg2[1]};
    segs[0].tokens = tok, segs[0].n_tokens = 2;
    segs[0].words = w, segs[0].n_words = 1;
    struct transcript tr = {.text = "a\"b", .language = "en", .segments = segs, .n_segments = 2};
    char *s = render(&tr, OUT_JSON, NULL);
    expect_has("json text", s,
               "\"text\": \" He said \\\"hi\\\", \\\\ ok\\ttab\\nline \\u0001\\u007f\"");
    expect_has("json utf-8 kept, invalid byte replaced", s,
               "\"text\": \" caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 bad\\ufffd --> end \"");
    expect_has("json tokens", s, "\"tokens\": [50363, 7], \"token_probs\": [0.5000, 0.2500]");
    CHECK(strstr(s, "\"words\"") == NULL); /* word timestamps off */
    free(s);

    tr.has_words = true;
    struct whisperc_full_params fp = {.n_temperatures = 1, .logprob_threshold = -1.0f / 0.0f};
    struct run_info ri = {.model_path = "m\\.bin",
                          .model_type = "tiny",
                          .backend = "cpu",
                          .dims = {.n_vocab = 51864, .n_mels = 80},
                          .params = &fp};
    struct writer_opts wo = {.json_full = true, .run = &ri};
    s = render(&tr, OUT_JSON, &wo);
    expect_has("json words", s,
               "\"words\": [{\"word\": \" He\", \"start\": 0.020, \"end\": 0.400, "
               "\"probability\": 0.750000}]");
    expect_has(
        "json-full token records", s,
        "{\"id\": 50363, \"text\": \"<|0.00|>\", \"p\": 0.500000, \"t0\": null, \"t1\": null}");
    expect_has(
        "json-full partial UTF-8 token", s,
        "{\"id\": 7, \"text\": \"\\ufffd\\ufffd\", \"p\": 0.250000, \"t0\": 0.020, \"t1\": 0.400}");
    expect_has("json-full model", s, "\"path\": \"m\\\\.bin\", \"type\": \"tiny\"");
    expect_has("json-full -inf as null", s, "\"logprob_threshold\": null");
    expect_has("json-full empty words", s, "\"words\": []}");
    free(s);
}

/* whisper.cpp's -oj/-ojf sections beside openai-whisper's: result, transcription with its
 * timestamps and offsets, -ojf's tokens with a character split over two tokens merged. */
static void test_json_whisper_cpp(void) {
    struct tr_token tok[4] = {
        {.id = 50363, .text = "<|0.00|>", .p = 0.5f, .t0_ms = -1, .t1_ms = -1, .timestamp = true},
        {.id = 7, .text = " \xe2\x9c", .p = 0.25f, .t0_ms = 20, .t1_ms = 200},
        {.id = 8, .text = "\x93", .p = 0.75f, .t0_ms = 200, .t1_ms = 400},
        {.id = 9, .text = " ok", .p = 1.0f, .t0_ms = 400, .t1_ms = 900}};
    struct tr_segment segs[2] = {seg2[0], seg2[1]};
    segs[0].tokens = tok, segs[0].n_tokens = 4;
    struct transcript tr = {.text = "x", .language = "en", .segments = segs, .n_segments = 2};
    struct whisperc_full_params fp = {.n_temperatures = 1, .translate = true};
    struct run_info ri = {.model_path = "m.bin",
                          .model_type = "tiny",
                          .backend = "cpu",
                          .dims = {.n_vocab = 51864, .n_audio_ctx = 1500, .n_text_layer = 4},
                          .params = &fp};
    struct writer_opts wo = {.run = &ri};
    char *s = render(&tr, OUT_JSON, &wo);
    expect_has("json whisper.cpp params", s,
               "\"params\": {\"model\": \"m.bin\", \"language\": \"auto\", \"translate\": true}");
    expect_has("json whisper.cpp model", s, "\"vocab\": 51864, \"audio\": {\"ctx\": 1500, ");
    expect_has("json whisper.cpp result", s, "\"result\": {\"language\": \"en\"},");
    expect_has("json whisper.cpp transcription", s,
               "\"transcription\": [\n    {\"timestamps\": {\"from\": \"00:00:00,000\", \"to\": "
               "\"00:00:01,500\"}, \"offsets\": {\"from\": 0, \"to\": 1500}, \"text\": \" He said");
    CHECK(strstr(s, "\"tokens\": [{") == NULL); /* -oj: no token records */
    free(s);
    wo.json_full = true;
    s = render(&tr, OUT_JSON, &wo);
    expect_has("json-full whisper.cpp timestamp token", s,
               "{\"text\": \"<|0.00|>\", \"id\": 50363, \"p\": 0.5, \"t_dtw\": -1}");
    expect_has("json-full whisper.cpp merged character", s,
               "{\"text\": \" \xe2\x9c\x93\", \"timestamps\": {\"from\": \"00:00:00,020\", \"to\": "
               "\"00:00:00,400\"}, \"offsets\": {\"from\": 20, \"to\": 400}, \"id\": 7, \"p\": "
               "0.25, \"t_dtw\": -1}");
    expect_has("json-full whisper.cpp next token", s, "{\"text\": \" ok\", ");
    free(s);
}

static void test_segment_cues(void) {
    struct transcript tr = {.text = "x", .language = "en", .segments = seg2, .n_segments = 2};
    char *s = render(&tr, OUT_SRT, NULL);
    expect_eq("srt", s,
              "1\n00:00:00,000 --> 00:00:01,500\nHe said \"hi\", \\ ok\ttab\nline \x01\x7f\n\n"
              "2\n01:02:03,450 --> 01:02:05,000\n"
              "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 bad\xff -> end\n\n");
    free(s);
    s = render(&tr, OUT_VTT, NULL);
    expect_has("vtt header", s, "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\n");
    expect_has("vtt > 1 h", s, "01:02:03.450 --> 01:02:05.000\n");
    free(s);
    /* "--->" is no "-->" after one replace, and newline tokens' blank lines would end the cue */
    struct tr_segment odd = {.text = " a ---> b\n\nc\n \n d\n", .t0_ms = 0, .t1_ms = 900};
    tr = (struct transcript){.text = "x", .segments = &odd, .n_segments = 1};
    s = render(&tr, OUT_SRT, NULL);
    expect_eq("srt arrows and blank lines", s,
              "1\n00:00:00,000 --> 00:00:00,900\na -> b\nc\n d\n\n");
    free(s);
}

/* Two segments of words; a pause of 5 s before "later". */
static struct tr_word wa[4] = {{" One", 0, 400, 1},
                               {" two", 400, 800, 1},
                               {" three", 800, 1200, 1},
                               {" f\xc3\xbc\xc3\xbcr.", 1200, 1600, 1}};
static struct tr_word wb[2] = {{" Five", 1700, 2000, 1}, {" later", 7000, 7400, 1}};

static void test_word_cues(void) {
    struct tr_segment segs[2] = {
        {.text = " One two three f\xc3\xbc\xc3\xbcr.",
         .t0_ms = 0,
         .t1_ms = 1600,
         .words = wa,
         .n_words = 4},
        {.text = " Five later", .t0_ms = 1600, .t1_ms = 7400, .words = wb, .n_words = 2}};
    struct transcript tr = {.segments = segs, .n_segments = 2, .has_words = true};
    /* no options: a cue per segment, from its first word's start to its last word's end */
    char *s = render(&tr, OUT_SRT, NULL);
    expect_eq("srt words", s,
              "1\n00:00:00,000 --> 00:00:01,600\nOne two three f\xc3\xbc\xc3\xbcr.\n\n"
              "2\n00:00:01,700 --> 00:00:07,400\nFive later\n\n");
    free(s);
    /* width 9 and 2 lines: words flow across segments ("füür." counts 6 characters, so " two"
     * fits after "One" (7) but " three" does not); a 3 s pause starts a new cue */
    struct writer_opts wo = {.max_line_width = 9, .max_line_count = 2};
    s = render(&tr, OUT_VTT, &wo);
    expect_eq("vtt width 9, 2 lines", s,
              "WEBVTT\n\n"
              "00:00:00.000 --> 00:00:01.200\nOne two\nthree\n\n"
              "00:00:01.200 --> 00:00:02.000\nf\xc3\xbc\xc3\xbcr.\nFive\n\n"
              "00:00:07.000 --> 00:00:07.400\nlater\n\n");
    free(s);
    /* a pause of exactly 3 s is "more than 3 s" where Python's floats say so: 4.15 - 1.15 is,
     * 7.15 - 4.15 is not */
    struct tr_word wp[3] = {{" a", 1150, 1300, 1}, {" b", 4150, 4300, 1}, {" c", 7150, 7250, 1}};
    struct tr_segment sp = {
        .text = " a b c", .t0_ms = 1150, .t1_ms = 7250, .words = wp, .n_words = 3};
    struct transcript tp = {.segments = &sp, .n_segments = 1, .has_words = true};
    s = render(&tp, OUT_VTT, &wo);
    expect_eq("vtt 3 s pauses as floats", s,
              "WEBVTT\n\n00:00:01.150 --> 00:00:01.300\na\n\n"
              "00:00:04.150 --> 00:00:07.250\nb c\n\n");
    free(s);
    /* width without count: lines broken, but a cue still per segment */
    wo = (struct writer_opts){.max_line_width = 9};
    s = render(&tr, OUT_VTT, &wo);
    expect_eq("vtt width 9", s,
              "WEBVTT\n\n"
              "00:00:00.000 --> 00:00:01.600\nOne two\nthree\nf\xc3\xbc\xc3\xbcr.\n\n"
              "00:00:01.700 --> 00:00:07.400\nFive\nlater\n\n");
    free(s);
    /* two words per cue */
    wo = (struct writer_opts){.max_words_per_line = 3};
    s = render(&tr, OUT_SRT, &wo);
    expect_eq("srt 3 words", s,
              "1\n00:00:00,000 --> 00:00:01,200\nOne two three\n\n"
              "2\n00:00:01,200 --> 00:00:01,600\nf\xc3\xbc\xc3\xbcr.\n\n"
              "3\n00:00:01,700 --> 00:00:07,400\nFive later\n\n");
    free(s);
    /* highlight: a cue per word, the gap before "later" filled with the plain text */
    wo = (struct writer_opts){.highlight_words = true};
    tr.n_segments = 1;
    segs[0].n_words = 2;
    segs[0].words = wb;
    s = render(&tr, OUT_VTT, &wo);
    expect_eq("vtt highlight", s,
              "WEBVTT\n\n"
              "00:00:01.700 --> 00:00:02.000\n<u>Five</u> later\n\n"
              "00:00:02.000 --> 00:00:07.000\nFive later\n\n"
              "00:00:07.000 --> 00:00:07.400\nFive <u>later</u>\n\n");
    free(s);
    /* the underline starts after a word's leading spaces, Unicode's too (openai-whisper's
     * ^(\\s*)): an ideographic space stays outside it */
    struct tr_word wu[2] = {{" Five", 1700, 2000, 1},
                            {"\xe3\x80\x80"
                             "later",
                             2000, 2400, 1}};
    segs[0].words = wu;
    s = render(&tr, OUT_VTT, &wo);
    expect_has("vtt highlight after a Unicode space", s, "Five\xe3\x80\x80<u>later</u>\n");
    free(s);
    /* words meet in put_text: "--" then ">" is no "-->", a word of newlines no blank line */
    struct tr_word wc[4] = {
        {" a--", 0, 400, 1}, {">", 400, 500, 1}, {"\n\n", 500, 600, 1}, {" b", 600, 900, 1}};
    segs[0] = (struct tr_segment){.text = "x", .t1_ms = 900, .words = wc, .n_words = 4};
    s = render(&tr, OUT_VTT, NULL);
    expect_eq("vtt words' arrows and blank lines", s,
              "WEBVTT\n\n00:00:00.000 --> 00:00:00.900\na->\n b\n\n");
    free(s);
    /* a cue of nothing but newlines is left out, its srt number not taken */
    struct tr_word wn[3] = {{" a", 0, 400, 1}, {"\n\n", 400, 500, 1}, {" b", 600, 900, 1}};
    struct tr_segment sn[3] = {
        {.text = " a", .t1_ms = 400, .words = wn, .n_words = 1},
        {.text = "\n\n", .t0_ms = 400, .t1_ms = 500, .words = wn + 1, .n_words = 1},
        {.text = " b", .t0_ms = 600, .t1_ms = 900, .words = wn + 2, .n_words = 1}};
    struct transcript tn = {.segments = sn, .n_segments = 3, .has_words = true};
    s = render(&tn, OUT_SRT, NULL);
    expect_eq("srt: no empty word cue", s,
              "1\n00:00:00,000 --> 00:00:00,400\na\n\n2\n00:00:00,600 --> 00:00:00,900\nb\n\n");
    free(s);
}

static void test_atomic_write(void) {
    char dir[] = "/tmp/wc_test_writers_XXXXXX", base[64], path[96], err[256];
    CHECK(mkdtemp(dir) != NULL);
    struct transcript tr = {.text = "x", .language = "en", .segments = seg2, .n_segments = 2};
    snprintf(base, sizeof base, "%s/out", dir);
    CHECK(write_output(&tr, OUT_LRC, NULL, base, err, sizeof err) == 0);
    snprintf(path, sizeof path, "%s.lrc", base);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size > 0);
    unlink(path);
    /* a missing directory: an error naming the file, nothing created */
    snprintf(base, sizeof base, "%s/no/out", dir);
    CHECK(write_output(&tr, OUT_TSV, NULL, base, err, sizeof err) != 0);
    expect_has("error names the file", err, "/no/out.tsv: cannot create");
    /* a name with no room for the temporary's 9 more bytes (NAME_MAX 255) */
    char lbase[512], lpath[520];
    snprintf(lbase, sizeof lbase, "%s/%0244d", dir, 7); /* + ".srt": 248 bytes */
    CHECK(write_output(&tr, OUT_SRT, NULL, lbase, err, sizeof err) == 0);
    snprintf(lpath, sizeof lpath, "%s.srt", lbase);
    CHECK(stat(lpath, &st) == 0 && st.st_size > 0);
    unlink(lpath);
    CHECK(rmdir(dir) == 0); /* empty: no temporary file left */
}

int main(void) {
    test_timestamps();
    test_line_formats();
    test_unicode_strip();
    test_json();
    test_json_whisper_cpp();
    test_segment_cues();
    test_word_cues();
    test_atomic_write();
    printf("%s\n", test_failures ? "writers: NOT OK" : "writers: OK");
    return TEST_RESULT();
}
