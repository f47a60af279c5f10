/* options.c — see options.h. */
#include "options.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *default_model_path(void) {
    static char buf[4096];
    const char *env = getenv("WHISPERC_MODEL");
    if (env && *env)
        return env;
    struct stat st;
    if (stat("models/ggml-base.bin", &st) == 0)
        return "models/ggml-base.bin";
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, sizeof buf, "%s/whisper-c/ggml-base.bin", xdg);
    else
        snprintf(buf, sizeof buf, "%s/.local/share/whisper-c/ggml-base.bin", home ? home : ".");
    return buf;
}

void cli_usage(const char *prog) {
    printf("usage: %s transcribe [options] FILE...  (or -f FILE, repeatable)\n"
           "       %s batch [options] -o DIR INPUT...  many files, resumable (batch --help)\n"
           "       %s bench [options] FILE | --synthetic\n"
           "       %s ptx --size NAME [--sm N] [--out DIR]   write the generated CUDA kernels\n"
           "       %s --version | --help\n"
           "\n"
           "Transcribes speech with a Whisper model (whisper.cpp ggml .bin files). FILE may be\n"
           "any format libsndfile reads (wav, flac, ogg, mp3, ...), at any sample rate;\n"
           "- reads one from standard input (e.g. ffmpeg -i in.mp4 -f wav - | %s transcribe -).\n"
           "\n"
           "options:\n"
           "  -m,  --model FNAME        model file; default: $WHISPERC_MODEL, else\n"
           "                            models/ggml-base.bin, else\n"
           "                            ~/.local/share/whisper-c/ggml-base.bin\n"
           "  -l,  --language LANG      spoken language (en, de, ...), or auto (default)\n"
           "  -tr, --translate          translate to English\n"
           "  -dl, --detect-language    print the 5 most probable languages and exit\n"
           "  -t,  --threads N          CPU threads (default: cores, at most 8)\n"
           "  -ot, --offset-t N         start at N ms into the audio (times stay the file's)\n"
           "  -d,  --duration N         transcribe N ms from there (default 0: to the end)\n"
           "       --prompt TEXT        initial prompt (context for the first window)\n"
           "       --carry-initial-prompt  keep the initial prompt in every window's context\n"
           "       --prefix TEXT        text every window's transcript starts with\n"
           "       --hotwords TEXT      words to favour, put before each window's context\n"
           "  -mc, --max-context N      most tokens of previous text as context (default: all)\n"
           "       --no-context         no previous text as context (each window on its own)\n"
           "  -nt, --no-timestamps      decode without timestamps; one segment per window\n"
           "  -nf, --no-fallback        no temperature fallback (greedy only)\n"
           "  -tp,  --temperature N     the first temperature (default 0: greedy or beams)\n"
           "  -tpi, --temperature-inc N a fallback's step up to 1.0 (default 0.2; 0: none)\n"
           "  -lpt, --logprob-thold N   fall back below this average log-probability (-1.0)\n"
           "  -nth, --no-speech-thold N a window is silence above this no-speech probability\n"
           "                            if its text is improbable too (default 0.6)\n"
           "       --compression-ratio-threshold N  fall back above this gzip ratio (2.4)\n"
           "  -bs, --beam-size N        beam search with N beams at temperature 0 (default 5;\n"
           "                            1: greedy)\n"
           "  -bo, --best-of N          samples per temperature > 0, the best kept (default 5)\n"
           "  -f,   --file FILE         an input file (repeatable; as well as FILE...)\n"
           "  -wt,  --word-timestamps   word-level times (cross-attention alignment)\n"
           "                            (whisper.cpp's -wt N, -vmsd N, -vo N: accepted, unused)\n"
           "  -ml,  --max-len N         cut segments to at most N characters (1: a word each)\n"
           "  -sow, --split-on-word     with -ml: cut only between words\n"
           "       --alignment-heads NAME  heads for the alignment: auto (default) or a model\n"
           "                            name (tiny.en, base, ..., large-v1, large-v3-turbo)\n"
           "  -dtw, --dtw NAME          every token's time by the alignment with NAME's heads\n"
           "                            (as --alignment-heads; whisper.cpp's large.v3 too),\n"
           "                            segments unchanged: -ojf's token t0, t1 and t_dtw\n"
           "  -otxt, -osrt, -ovtt       write FILE.txt / .srt / .vtt\n"
           "  -on,  --offset-n N        number the srt cues from N + 1 (default 0)\n"
           "  -oj,  --output-json       write FILE.json (segments, tokens, probabilities;\n"
           "                            words with -wt)\n"
           "  -ojf, --output-json-full  FILE.json with model, parameters and token records\n"
           "  -ocsv, -otsv, -olrc       write FILE.csv (start,end,\"text\" in ms) / .tsv\n"
           "                            (start<TAB>end<TAB>text in ms) / .lrc (lyrics)\n"
           "  -ls,  --log-score         write FILE.score.txt: each token<TAB>its probability\n"
           "  -of,  --output-file BASE  output path without extension; repeatable: the k-th\n"
           "                            names the k-th FILE's outputs ('' or none: FILE's)\n"
           "srt/vtt with -wt (as openai-whisper):\n"
           "       --max-line-width N   at most N characters per line\n"
           "       --max-line-count N   at most N lines per cue (with --max-line-width)\n"
           "       --max-words-per-line N  at most N words per cue (without --max-line-width)\n"
           "       --highlight-words    one cue per word, the word underlined (<u>)\n"
           "  -pp,  --print-progress    print progress to stderr\n"
           "  -np,  --no-prints         print nothing but the results (no detected language)\n"
           "       --vad                transcribe only the speech; times stay the file's\n"
           "  -vt,  --vad-threshold P   speech probability that starts speech (default 0.5)\n"
           "  -vspd, --vad-min-speech-duration-ms N   shorter speech is dropped (default 250)\n"
           "  -vsd, --vad-min-silence-duration-ms N   shorter pauses do not end speech (100)\n"
           "  -vp,  --vad-speech-pad-ms N  padding on both ends of speech (default 30)\n"
           "  -vm,  --vad-model FILE    Silero VAD model for --vad (whisper.cpp's\n"
           "                            ggml-silero-v5.1.2.bin) instead of the built-in detector\n"
           "  -pc,  --print-colors      colour each printed token by its probability, red\n"
           "                            (unsure) to green, on a terminal without $NO_COLOR;\n"
           "                            --print-colors=always also into pipes\n"
           "       --print-confidence   style them instead: inverse below p 0.33, underlined\n"
           "                            below 0.66, else dim (=always as for -pc)\n"
           "  -ps,  --print-special     print the timestamp tokens too (<|1.08|>)\n"
           "  -di,  --diarize           a two-channel recording with a speaker a channel (a\n"
           "                            call): each segment labelled with the louder one,\n"
           "                            (speaker 0), (speaker 1) or (speaker ?)\n"
           "       --device auto|cpu|cuda  compute device (default auto); -ng, --no-gpu: cpu\n"
           "       --gpu N              CUDA device index (also -dev N, --device N)\n"
           "       --suppress-regex RE  never sample a token whose text RE (POSIX extended)\n"
           "                            matches as a whole, e.g. '[0-9]+': no digits\n"
           "       --suppress-tokens LIST  token ids never sampled, comma-separated; -1 (the\n"
           "                            default) is the non-speech symbols, '' none of them\n"
           "                            (the task tokens, <|nospeech|> and the like, stay\n"
           "                            suppressed: openai-whisper's '' samples them too)\n"
           "  -fa, -nfa, -sns           whisper.cpp's --flash-attn, --no-flash-attn and\n"
           "                            --suppress-nst: accepted; whisper-c's attention is\n"
           "                            always fused and non-speech tokens suppressed (-1;\n"
           "                            -sns: even with --suppress-tokens '')\n"
           "       --seed N             seed for sampling at temperature > 0\n"
           "       --max-duration S     refuse audio longer than S seconds (default: no limit)\n"
           "       --max-memory MIB|off refuse a model or audio needing more memory (default:\n"
           "                            what the system or the cgroup has available)\n"
           "       --quant-weights auto|widen|keep  a quantized model (q8_0 … q4_0) widened to\n"
           "                            f16 at load (fastest) or kept as its blocks on the CPU\n"
           "                            (less memory, slower decoding); the same results.\n"
           "                            auto (default): kept if f16 would take over half the\n"
           "                            available memory\n"
           "bench options:\n"
           "       --runs N             repeat N times and report the fastest (default 1)\n"
           "       --synthetic          no FILE: time one 30 s window of seeded random log-Mel\n"
           "                            through the encoder, the SOT prompt and --tokens decoder\n"
           "                            steps of -bs sequences (argmax, never stopping early),\n"
           "                            after one warm-up window; any model size, e.g. from\n"
           "                            tools/make-random-model large-v3\n"
           "       --tokens N           decoder steps per window with --synthetic (default 100)\n"
           "       --throughput W       with --synthetic: also W random windows decoded\n"
           "                            --batch-size at a time (default 64), --tokens steps\n"
           "                            each, as whisperc_full_batch runs them: x real time\n"
           "       --context-tokens N   with --throughput: each prompt opens with N tokens of\n"
           "                            previous text, as a long-form window's (default 0)\n"
           "       --compare-whisper-cpp PATH  also run whisper.cpp's whisper-cli at PATH\n"
           "                            on the same audio, model and threads\n"
           "       --batch-size N       time the files one by one, then N at a time in one\n"
           "                            state (whisperc_full_batch; greedy: use -bs 1); with\n"
           "                            --synthetic, the encoder on N windows in passes of\n"
           "                            1, 2, 4, ... N (at most 8, or $WHISPERC_ENCODE_MAX_PASS;\n"
           "                            on a GPU that many by default)\n"
           "  -h,  --help, --version\n",
           prog, prog, prog, prog, prog, prog);
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "whisper-c: %s needs a number in %d..%d, got '%s'\n", opt, lo, hi,
                s ? s : "");
        return 2;
    }
    *out = (int)v;
    return 0;
}

static int parse_float(const char *opt, const char *s, float lo, float hi, float *out) {
    char *end;
    errno = 0;
    float v = s ? strtof(s, &end) : 0.0f;
    if (!s || errno || *end || end == s || !(v >= lo && v <= hi)) {
        fprintf(stderr, "whisper-c: %s needs a number in %g..%g, got '%s'\n", opt, lo, hi,
                s ? s : "");
        return 2;
    }
    *out = v;
    return 0;
}

/* A finite number of seconds in (0, 1e9]. */
static int parse_seconds(const char *opt, const char *s, double *out) {
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || errno || end == s || *end || !(v > 0 && v <= 1e9)) {
        fprintf(stderr, "whisper-c: %s needs a number of seconds in (0, 1e9], got '%s'\n", opt,
                s ? s : "");
        return 2;
    }
    *out = v;
    return 0;
}

/* openai-whisper's --suppress_tokens: comma-separated ids, -1 for the non-speech set; ""
 * for none of them (the task tokens stay suppressed, where openai-whisper's "" drops its
 * SuppressTokens filter whole). */
static int parse_suppress_tokens(struct cli_options *o, const char *opt, const char *s) {
    o->n_suppress_tokens = 0;
    o->allow_non_speech = true;
    for (const char *p = s; s && *p;) {
        char *end;
        errno = 0;
        long id = strtol(p, &end, 10);
        if (errno || end == p || (*end && *end != ',') || id < -1 || id > INT32_MAX) {
            fprintf(stderr,
                    "whisper-c: %s needs token ids separated by commas (-1: the "
                    "non-speech set), got '%s'\n",
                    opt, s);
            return 2;
        }
        if (id == -1)
            o->allow_non_speech = false;
        else if (o->n_suppress_tokens == CLI_MAX_SUPPRESS) {
            fprintf(stderr, "whisper-c: %s: at most %d ids\n", opt, CLI_MAX_SUPPRESS);
            return 2;
        } else
            o->suppress_tokens[o->n_suppress_tokens++] = (int32_t)id;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* whisper.cpp's -dtw names the large models with dots ("large.v3.turbo"); whisper-c's
 * --alignment-heads with dashes, as openai-whisper does. */
static const char *dtw_heads_name(const char *v) {
    static const char *const dotted[][2] = {{"large.v1", "large-v1"},
                                            {"large.v2", "large-v2"},
                                            {"large.v3", "large-v3"},
                                            {"large.v3.turbo", "large-v3-turbo"}};
    for (size_t i = 0; v && i < sizeof dotted / sizeof *dotted; i++)
        if (strcmp(v, dotted[i][0]) == 0)
            return dotted[i][1];
    return v;
}

static bool is(const char *a, const char *s1, const char *s2) {
    return strcmp(a, s1) == 0 || (s2 && strcmp(a, s2) == 0);
}

/* whisper.cpp's -wt N (--word-thold, a number) rather than whisper-c's -wt flag (word
 * timestamps): the next argument is a number and no file of that name exists. */
static bool whisper_cpp_word_thold(const char *next) {
    char *end;
    if (!next || !*next)
        return false;
    errno = 0;
    (void)strtof(next, &end);
    return !errno && !*end && access(next, F_OK) != 0;
}

/* whisper.cpp's valued options that whisper-c accepts and does not use, and why. */
static const struct unused_opt {
    const char *name, *alias, *what, *why;
} unused_opts[] = {
    {"-wt", "--word-thold", "word threshold", "whisper-c's -wt alone turns on word timestamps"},
    {"-vmsd", "--vad-max-speech-duration-s", "longest VAD span", "docs/vad.md"},
    {"-vo", "--vad-samples-overlap", "VAD overlap", "docs/vad.md"},
    {"-et", "--entropy-thold", "entropy threshold",
     "a window falls back on its compression ratio, as openai-whisper's: "
     "--compression-ratio-threshold"},
    {"-ac", "--audio-ctx", "shortened encoder context",
     "the encoder sees the whole 30 s window, for the reference's text"},
    {"-p", "--processors", "split of a file into parts (the text changes at the cuts)",
     "a file is transcribed whole with -t N threads; `whisper-c batch -j N` runs many files"},
};

/* The entry of `a` followed by `next`; -wt only with a number next (whisper_cpp_word_thold),
 * else it is whisper-c's own flag. */
static const struct unused_opt *whisper_cpp_unused(const char *a, const char *next) {
    for (size_t i = 0; i < sizeof unused_opts / sizeof *unused_opts; i++)
        if (strcmp(a, unused_opts[i].alias) == 0 ||
            (strcmp(a, unused_opts[i].name) == 0 && (i > 0 || whisper_cpp_word_thold(next))))
            return &unused_opts[i];
    return NULL;
}

/* Values that ask for what whisper-c does anyway: -ac 0 (the whole context), -p 1. */
static bool is_ignored_default(const char *a, float v) {
    return (is(a, "-ac", "--audio-ctx") && v == 0.0f) || (is(a, "-p", "--processors") && v == 1.0f);
}

/* Options that take a value; returns 1 if arg was one of them (consuming argv[*i+1]). */
static int parse_valued(struct cli_options *o, int argc, char **argv, int *i, int *rc) {
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    const struct unused_opt *u;
    if (is(a, "-m", "--model"))
        o->model = v;
    else if (!strcmp(a, "--highlight_words") && v && (!strcmp(v, "True") || !strcmp(v, "False")))
        o->highlight_words = v[0] == 'T'; /* openai-whisper's spelling takes its str2bool */
    else if (is(a, "-l", "--language"))
        o->language = v;
    else if (is(a, "--prompt", NULL))
        o->prompt = v;
    else if (is(a, "--prefix", NULL))
        o->prefix = v;
    else if (is(a, "--hotwords", NULL))
        o->hotwords = v;
    else if (is(a, "--alignment-heads", "--alignment_heads"))
        o->alignment_heads = v;
    else if (is(a, "-oved", "--ov-e-device")) {
        if (v)
            fprintf(stderr,
                    "whisper-c: %s %s: whisper.cpp's OpenVINO encoder device, not used here "
                    "(--device cpu or cuda picks the backend)\n",
                    a, v);
    } else if (is(a, "-dtw", "--dtw")) {
        o->dtw_token_timestamps = true;
        o->alignment_heads = dtw_heads_name(v);
    } else if (is(a, "--suppress-regex", NULL))
        o->suppress_regex = v;
    else if (is(a, "--suppress-tokens", "--suppress_tokens"))
        *rc = parse_suppress_tokens(o, a, v);
    else if (is(a, "-f", "--file")) {
        if (o->n_files == CLI_MAX_FILES)
            *rc = 2, fprintf(stderr, "whisper-c: too many files (at most %d)\n", CLI_MAX_FILES);
        else if (v)
            o->files[o->n_files++] = v;
    } else if (is(a, "-ot", "--offset-t"))
        *rc = parse_int(a, v, 0, INT32_MAX, &o->offset_ms);
    else if (is(a, "-on", "--offset-n"))
        *rc = parse_int(a, v, 0, INT32_MAX / 2, &o->offset_n);
    else if (is(a, "-d", "--duration"))
        *rc = parse_int(a, v, 0, INT32_MAX, &o->duration_ms);
    else if (is(a, "-ml", "--max-len"))
        *rc = parse_int(a, v, 0, 1 << 20, &o->max_len);
    else if (is(a, "--max-line-width", "--max_line_width"))
        *rc = parse_int(a, v, 1, 1 << 20, &o->max_line_width);
    else if (is(a, "--max-line-count", "--max_line_count"))
        *rc = parse_int(a, v, 1, 1 << 20, &o->max_line_count);
    else if (is(a, "--max-words-per-line", "--max_words_per_line"))
        *rc = parse_int(a, v, 1, 1 << 20, &o->max_words_per_line);
    else if (is(a, "-mc", "--max-context")) /* -1: whisper.cpp's default, all of it */
        *rc = parse_int(a, v, -1, 1 << 20, &o->max_context);
    else if (is(a, "-of", "--output-file")) {
        if (o->n_output_base == CLI_MAX_FILES)
            *rc = 2, fprintf(stderr, "whisper-c: too many -of (at most %d)\n", CLI_MAX_FILES);
        else if (v)
            o->output_base[o->n_output_base++] = v;
    } else if (is(a, "--compare-whisper-cpp", NULL))
        o->whisper_cpp = v;
    else if (is(a, "-t", "--threads"))
        *rc = parse_int(a, v, 1, 256, &o->n_threads);
    else if (is(a, "--gpu", NULL))
        *rc = parse_int(a, v, 0, 64, &o->gpu_index);
    else if (is(a, "--runs", NULL))
        *rc = parse_int(a, v, 1, 1000, &o->runs);
    else if (is(a, "--tokens", NULL))
        *rc = parse_int(a, v, 0, 448, &o->n_tokens);
    else if (is(a, "--throughput", NULL))
        *rc = parse_int(a, v, 1, 100000, &o->throughput);
    else if (is(a, "--context-tokens", NULL))
        *rc = parse_int(a, v, 0, 223, &o->n_context);
    else if (is(a, "--batch-size", NULL))
        *rc = parse_int(a, v, 1, 64, &o->batch_size);
    else if (is(a, "-bs", "--beam-size"))
        *rc = parse_int(a, v, 1, 16, &o->beam_size);
    else if (is(a, "-bo", "--best-of"))
        *rc = parse_int(a, v, 1, 16, &o->best_of);
    else if (is(a, "-tp", "--temperature"))
        *rc = parse_float(a, v, 0.0f, 1.0f, &o->temperature);
    else if (is(a, "-tpi", "--temperature-inc"))
        *rc = parse_float(a, v, 0.0f, 1.0f, &o->temperature_inc);
    else if (is(a, "-lpt", "--logprob-thold"))
        *rc = parse_float(a, v, -1e9f, 0.0f, &o->logprob_thold);
    else if (is(a, "-nth", "--no-speech-thold"))
        *rc = parse_float(a, v, 0.0f, 1.0f, &o->no_speech_thold);
    else if (is(a, "--compression-ratio-threshold", NULL))
        *rc = parse_float(a, v, 0.0f, 1e9f, &o->compression_ratio_thold);
    else if (is(a, "-vm", "--vad-model"))
        o->vad_model = v;
    else if (is(a, "-vt", "--vad-threshold"))
        *rc = parse_float(a, v, 0.0f, 1.0f, &o->vad_threshold);
    else if (is(a, "-vspd", "--vad-min-speech-duration-ms"))
        *rc = parse_int(a, v, 0, 3600000, &o->vad_min_speech_ms);
    else if (is(a, "-vsd", "--vad-min-silence-duration-ms"))
        *rc = parse_int(a, v, 0, 3600000, &o->vad_min_silence_ms);
    else if (is(a, "-vp", "--vad-speech-pad-ms"))
        *rc = parse_int(a, v, 0, 3600000, &o->vad_pad_ms);
    else if (is(a, "--max-duration", NULL))
        *rc = parse_seconds(a, v, &o->max_duration_s);
    else if (is(a, "--max-memory", NULL)) {
        int mib = 0;
        if (v && strcmp(v, "off") == 0)
            o->max_memory_bytes = -1;
        else if (!(*rc = parse_int(a, v, 1, 1 << 30, &mib)))
            o->max_memory_bytes = (int64_t)mib << 20;
    } else if (is(a, "--seed", NULL)) {
        char *end = NULL;
        errno = 0;
        o->seed = v && *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
        if (v && (!end || *end || errno))
            *rc = 2, fprintf(stderr, "whisper-c: --seed needs a number in 0..%llu, got '%s'\n",
                             ULLONG_MAX, v);
    } else if ((u = whisper_cpp_unused(a, v))) {
        /* whisper.cpp's, so that its command lines run: checked, not used */
        float value;
        if (!(*rc = parse_float(a, v, 0.0f, 1e9f, &value)) && !is_ignored_default(a, value))
            fprintf(stderr, "whisper-c: %s %s: whisper.cpp's %s, not used here (%s)\n", a, v,
                    u->what, u->why);
    } else if (is(a, "--quant-weights", NULL)) {
        if (v && strcmp(v, "auto") == 0)
            o->quant_weights = WHISPERC_QUANT_AUTO;
        else if (v && strcmp(v, "widen") == 0)
            o->quant_weights = WHISPERC_QUANT_WIDEN;
        else if (v && strcmp(v, "keep") == 0)
            o->quant_weights = WHISPERC_QUANT_KEEP;
        else
            *rc = 2, fprintf(stderr, "whisper-c: --quant-weights must be auto, widen or keep\n");
    } else if (is(a, "--device", "-dev")) {
        if (v && strcmp(v, "auto") == 0)
            o->device = WHISPERC_DEVICE_AUTO;
        else if (v && strcmp(v, "cpu") == 0)
            o->device = WHISPERC_DEVICE_CPU;
        else if (v && strcmp(v, "cuda") == 0)
            o->device = WHISPERC_DEVICE_CUDA;
        else if (v && v[0] >= '0' && v[0] <= '9') /* whisper.cpp's -dev N: a GPU's index */
            *rc = parse_int(a, v, 0, 64, &o->gpu_index);
        else
            *rc = 2,
            fprintf(stderr, "whisper-c: --device must be auto, cpu, cuda or a GPU index\n");
    } else
        return 0;
    if (!v && !*rc) {
        fprintf(stderr, "whisper-c: %s needs a value\n", a);
        *rc = 2;
    }
    (*i)++;
    return 1;
}

static int parse_flag(struct cli_options *o, const char *a) {
    if (is(a, "-tr", "--translate"))
        o->translate = true;
    else if (is(a, "-nt", "--no-timestamps"))
        o->no_timestamps = true;
    else if (is(a, "-nf", "--no-fallback"))
        o->no_fallback = true;
    else if (is(a, "--synthetic", NULL))
        o->synthetic = true;
    else if (is(a, "-otxt", "--output-txt"))
        o->out[OUT_TXT] = true;
    else if (is(a, "-osrt", "--output-srt"))
        o->out[OUT_SRT] = true;
    else if (is(a, "-ovtt", "--output-vtt"))
        o->out[OUT_VTT] = true;
    else if (is(a, "-oj", "--output-json"))
        o->out[OUT_JSON] = true;
    else if (is(a, "-ojf", "--output-json-full"))
        o->out[OUT_JSON] = o->out_json_full = true;
    else if (is(a, "-ocsv", "--output-csv"))
        o->out[OUT_CSV] = true;
    else if (is(a, "-otsv", "--output-tsv"))
        o->out[OUT_TSV] = true;
    else if (is(a, "-olrc", "--output-lrc"))
        o->out[OUT_LRC] = true;
    else if (is(a, "-ls", "--log-score"))
        o->out[OUT_SCORE] = true;
    else if (is(a, "-wt", "--word-timestamps"))
        o->word_timestamps = true;
    else if (is(a, "-sow", "--split-on-word"))
        o->split_on_word = true;
    else if (is(a, "--highlight-words", "--highlight_words"))
        o->highlight_words = true;
    else if (is(a, "-pc", "--print-colors") || is(a, "--print-colors=auto", NULL))
        o->print_colors = COLORS_AUTO, o->print_confidence = false; /* the last one counts */
    else if (is(a, "--print-colors=always", NULL))
        o->print_colors = COLORS_ALWAYS, o->print_confidence = false;
    else if (is(a, "--print-colors=never", NULL))
        o->print_colors = COLORS_NEVER, o->print_confidence = false;
    else if (is(a, "--print-confidence", "--print-confidence=auto"))
        o->print_colors = COLORS_AUTO, o->print_confidence = true;
    else if (is(a, "--print-confidence=always", NULL))
        o->print_colors = COLORS_ALWAYS, o->print_confidence = true;
    else if (is(a, "-ps", "--print-special"))
        o->print_special = true;
    else if (is(a, "-di", "--diarize"))
        o->diarize = true;
    else if (is(a, "-pp", "--print-progress"))
        o->print_progress = true;
    else if (is(a, "-np", "--no-prints"))
        o->no_prints = true;
    else if (is(a, "-dl", "--detect-language"))
        o->detect_language = true;
    else if (is(a, "--no-context", NULL))
        o->no_context = true;
    else if (is(a, "--carry-initial-prompt", NULL))
        o->carry_initial_prompt = true;
    else if (is(a, "--vad", NULL))
        o->vad = true;
    else if (is(a, "-ng", "--no-gpu")) /* whisper.cpp's */
        o->device = WHISPERC_DEVICE_CPU;
    /* whisper.cpp's switches that whisper-c's defaults already answer: its attention is always
     * the fused (flash) kind where that is faster; non-speech tokens are suppressed, as
     * openai-whisper's suppress_tokens "-1" does */
    else if (is(a, "-fa", "--flash-attn") || is(a, "-nfa", "--no-flash-attn"))
        ;
    else if (is(a, "-sns", "--suppress-nst"))
        o->suppress_nst = true;
    else
        return 0;
    return 1;
}

/* As openai-whisper's cli(): the subtitle options need word timestamps; combinations that
 * are legal but do nothing say so. */
static int check_word_options(const struct cli_options *o) {
    const char *need = o->highlight_words      ? "--highlight-words"
                       : o->max_line_width     ? "--max-line-width"
                       : o->max_line_count     ? "--max-line-count"
                       : o->max_words_per_line ? "--max-words-per-line"
                                               : NULL;
    if (need && !o->word_timestamps) {
        fprintf(stderr, "whisper-c: %s needs word timestamps (-wt)\n", need);
        return 2;
    }
    if (o->max_line_count && !o->max_line_width)
        fprintf(stderr, "whisper-c: warning: --max-line-count has no effect without "
                        "--max-line-width\n");
    if (o->max_words_per_line && o->max_line_width && o->max_line_count)
        fprintf(stderr, "whisper-c: warning: --max-words-per-line has no effect with "
                        "--max-line-width and --max-line-count\n");
    if (o->split_on_word && !o->max_len)
        fprintf(stderr, "whisper-c: warning: -sow has no effect without -ml N\n");
    return 0;
}

int cli_check_stdin(const struct cli_options *o, bool bench) {
    int n_stdin = 0;
    for (int i = 0; i < o->n_files; i++)
        n_stdin += strcmp(o->files[i], "-") == 0;
    if (n_stdin && (bench || n_stdin > 1)) {
        fprintf(stderr, "whisper-c: %s\n",
                bench ? "bench reads files, not standard input (-)"
                      : "standard input (-) can be read once only");
        return 2;
    }
    bool writes = o->out_json_full;
    for (int f = 0; f < OUT_N_FORMATS; f++)
        writes |= o->out[f];
    if (bench && o->diarize) {
        fprintf(stderr, "whisper-c: bench times the samples once decoded; -di is not timed\n");
        return 2;
    }
    if (n_stdin && o->diarize) {
        fprintf(stderr, "whisper-c: -di measures a file's two channels as it reads them; "
                        "standard input (-) is not a file\n");
        return 2;
    }
    for (int i = 0; i < o->n_files && writes && o->n_files > 1; i++)
        if (strcmp(cli_output_base(o, i), "-") == 0) { /* alone: to stdout */
            fprintf(stderr,
                    "whisper-c: %s (input %d): its output files would go to standard output "
                    "among other inputs; give it its own -of BASE (the k-th -of names the k-th "
                    "input's outputs)\n",
                    o->files[i], i + 1);
            return 2;
        }
    return 0;
}

int cli_temperatures(const struct cli_options *o, float *out, int max) {
    if (o->no_fallback || o->temperature_inc <= 0.0f) {
        if (max > 0)
            out[0] = o->temperature;
        return 1;
    }
    int n = 0;
    for (; n <= WHISPERC_MAX_TEMPERATURES; n++) { /* a tiny -tpi: counted no further */
        double t = (double)o->temperature + n * (double)o->temperature_inc;
        if (n > 0 && t > 1.0 + 1e-6)
            break;
        if (n < max)
            out[n] = (float)t;
    }
    return n;
}

const char *cli_output_base(const struct cli_options *o, int i) {
    return i < o->n_output_base && o->output_base[i][0] ? o->output_base[i] : o->files[i];
}

int cli_parse(struct cli_options *o, int argc, char **argv, bool bench) {
    memset(o, 0, sizeof *o);
    o->language = "auto";
    o->runs = 1;
    o->n_tokens = 100;
    o->beam_size = 5;
    o->max_context = -1;
    o->best_of = 5;
    o->temperature_inc = 0.2f;
    o->logprob_thold = -1.0f;
    o->no_speech_thold = 0.6f;
    o->compression_ratio_thold = 2.4f;
    o->device = WHISPERC_DEVICE_AUTO;
    o->vad_threshold = 0.5f;
    o->vad_min_speech_ms = 250;
    o->vad_min_silence_ms = 100;
    o->vad_pad_ms = 30;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int rc = 0;
        if (is(a, "-h", "--help")) {
            cli_usage("whisper-c");
            return 1;
        }
        if (parse_valued(o, argc, argv, &i, &rc) || parse_flag(o, a)) {
            if (rc)
                return rc;
            continue;
        }
        if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "whisper-c: unknown option '%s' (see whisper-c --help)\n", a);
            return 2;
        }
        if (o->n_files == CLI_MAX_FILES) {
            fprintf(stderr, "whisper-c: too many files (at most %d)\n", CLI_MAX_FILES);
            return 2;
        }
        o->files[o->n_files++] = a;
    }
    if (o->vad_model && !o->vad) /* whisper.cpp runs no VAD either */
        fprintf(stderr, "whisper-c: -vm %s has no effect without --vad\n", o->vad_model);
    if (o->throughput && !(bench && o->synthetic)) {
        fprintf(stderr, "whisper-c: --throughput is a bench --synthetic option\n");
        return 2;
    }
    if (o->n_context && !o->throughput) {
        fprintf(stderr, "whisper-c: --context-tokens goes with --throughput\n");
        return 2;
    }
    if (!bench && o->synthetic) {
        fprintf(stderr, "whisper-c: --synthetic is a bench option\n");
        return 2;
    }
    if (bench && o->synthetic) {
        if (o->n_files) {
            fprintf(stderr, "whisper-c: bench --synthetic takes no file\n");
            return 2;
        }
        return 0;
    }
    if (o->n_files == 0) {
        fprintf(stderr, "whisper-c: no input file (see whisper-c --help)\n");
        return 2;
    }
    if (bench && o->n_files != 1 && !o->batch_size) {
        fprintf(stderr, "whisper-c: bench takes exactly one file (several with --batch-size)\n");
        return 2;
    }
    /* cut short, the list would never reach the hotter temperatures */
    if (cli_temperatures(o, NULL, 0) > WHISPERC_MAX_TEMPERATURES) {
        fprintf(stderr,
                "whisper-c: -tp %g with -tpi %g makes more than %d temperatures up to 1.0; take "
                "a larger -tpi\n",
                (double)o->temperature, (double)o->temperature_inc, WHISPERC_MAX_TEMPERATURES);
        return 2;
    }
    if (o->n_output_base > o->n_files) {
        fprintf(stderr,
                "whisper-c: %d -of for %d input(s): the k-th -of names the k-th input's "
                "outputs\n",
                o->n_output_base, o->n_files);
        return 2;
    }
    return check_word_options(o);
}
