#!/usr/bin/env python3
"""test_formats.py — every output format of `whisper-c transcribe`, with and without word
timestamps (-wt), segment cutting (-ml) and the subtitle options, each file read back by a
parser: srt/vtt cues well formed and in order, json valid and complete (words inside their
segment, word texts joined = segment text), csv through Python's csv module, tsv and lrc line
grammar; every format agrees with the json's segments. Also -f, -pc and `batch` with the new
formats.

usage: test_formats.py WHISPER_C SHARED_DIR jfk
       test_formats.py WHISPER_C SHARED_DIR long RUN_TRANSCRIBE

jfk: the 11 s jfk.wav (about 75 s on 2 shared cores: suite cli). long: the long-form file of the
golden tests, the 186 ljspeech-dev clips as one 20-minute recording (written by run_transcribe
--write-wav), greedy with words, -ml/-sow and the line options (suite slow). Exits 77 (skip) when the shared model or audio is
missing.
"""
import csv
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

import testlib
from testlib import check

testlib.quiet = True  # thousands of checks: print the failures only


def run(args):
    return subprocess.run([exe] + args, capture_output=True, text=True, timeout=1800)


def ms(ts):
    """'hh:mm:ss.mmm' or 'hh:mm:ss,mmm' → milliseconds."""
    h, m, s = ts.replace(",", ".").split(":")
    return (int(h) * 3600 + int(m) * 60) * 1000 + round(float(s) * 1000)


def parse_cues(path, srt):
    """The cues of an srt/vtt file as (start_ms, end_ms, text); grammar checked on the way."""
    text = open(path, encoding="utf-8").read()
    sep = "," if srt else "."
    if not srt:
        check(text.startswith("WEBVTT\n\n"), f"{path}: WEBVTT header")
        text = text[len("WEBVTT\n\n"):]
    check(text == "" or text.endswith("\n\n"), f"{path}: ends with a blank line")
    blocks = [b for b in text.split("\n\n") if b]
    cues = []
    stamp = r"(\d{2,}:[0-5]\d:[0-5]\d" + re.escape(sep) + r"\d{3})"
    for k, b in enumerate(blocks):
        lines = b.split("\n")
        if srt:
            check(lines[0] == str(k + 1), f"{path}: cue {k + 1} numbered ({lines[0]!r})")
            lines = lines[1:]
        m = re.fullmatch(stamp + " --> " + stamp, lines[0]) if lines else None
        if not check(m is not None, f"{path}: cue {k + 1} timing line {lines[:1]!r}"):
            continue
        t0, t1 = ms(m.group(1)), ms(m.group(2))
        check(t0 <= t1, f"{path}: cue {k + 1} start <= end ({t0} {t1})")
        body = "\n".join(lines[1:])
        check(body.strip() != "" and "-->" not in body, f"{path}: cue {k + 1} text {body!r}")
        cues.append((t0, t1, body))
    starts = [c[0] for c in cues]
    check(starts == sorted(starts), f"{path}: cue starts in order")
    return cues


def check_json(path, want_words, full):
    d = json.load(open(path, encoding="utf-8"))
    keys = ["text", "language", "segments"] + (["model", "params"] if full else [])
    check(all(k in d for k in keys), f"{path}: keys {keys}")
    segs = d["segments"]
    check(len(segs) > 0, f"{path}: segments")
    check("".join(s["text"] for s in segs).strip() == d["text"].strip(), f"{path}: text = segments")
    last = 0.0
    for i, s in enumerate(segs):
        where = f"{path}: segment {i}"
        check(s["id"] == i and s["start"] <= s["end"], f"{where}: id, start <= end")
        check(isinstance(s.get("seek"), int) and 0 <= s["seek"] <= s["start"] * 100 + 1,
              f"{where}: seek, the window's first frame, at or before its start")
        check(s["start"] >= last - 0.001 or not want_words, f"{where}: starts in order")
        last = s["start"]
        for k in ("temperature", "avg_logprob", "compression_ratio", "no_speech_prob"):
            check(isinstance(s.get(k), (int, float)), f"{where}: {k}")
        if full:
            for t in s["tokens"]:
                ok = set(t) == {"id", "text", "p", "t0", "t1"} and 0 <= t["p"] <= 1
                aligned = t["t0"] is not None
                ok = ok and (not aligned or t["t0"] <= t["t1"]) and aligned == (t["t1"] is not None)
                check(ok, f"{where}: token record {t}")
        else:
            check(len(s["tokens"]) == len(s["token_probs"]), f"{where}: tokens and token_probs")
        check(("words" in s) == want_words, f"{where}: words present iff -wt")
        if not want_words:
            continue
        words = s["words"]
        check("".join(w["word"] for w in words).strip() == s["text"].strip(),
              f"{where}: words joined = text ({''.join(w['word'] for w in words)!r} vs {s['text']!r})")
        # openai-whisper's add_word_timestamps "prefers the segment-level timestamps" when the
        # first (last) word is too long: that word then starts up to a median word duration
        # before the segment (ends after it), while still overlapping it.
        for j, w in enumerate(words):
            lo = s["start"] - 0.001 if j > 0 or w["end"] <= s["start"] else 0.0
            hi = s["end"] + 0.001 if j < len(words) - 1 or w["start"] >= s["end"] else 1e9
            inside = lo <= w["start"] <= w["end"] <= hi
            check(inside and 0 <= w["probability"] <= 1, f"{where}: word {w} inside the segment")
    return d


def check_outputs(base, segs, want_words, opts):
    """Each line format against the json's segments; srt/vtt against their words or texts."""
    texts = [s["text"].strip() for s in segs]
    starts = [round(s["start"] * 1000) for s in segs]
    ends = [round(s["end"] * 1000) for s in segs]
    txt = open(base + ".txt", encoding="utf-8").read()
    check(txt.splitlines() == [t for t in texts if t], f"{base}.txt: the segment texts")

    rows = list(csv.reader(open(base + ".csv", encoding="utf-8", newline="")))
    check(rows[0] == ["start", "end", "text"], f"{base}.csv: header")
    check([[int(r[0]), int(r[1]), r[2]] for r in rows[1:]] == [list(x) for x in zip(starts, ends, texts)],
          f"{base}.csv: rows = segments")

    lines = open(base + ".tsv", encoding="utf-8").read().split("\n")
    check(lines[0] == "start\tend\ttext" and lines[-1] == "", f"{base}.tsv: header, final newline")
    body = [l.split("\t") for l in lines[1:-1]]
    check(all(len(f) == 3 and f[0].isdigit() and f[1].isdigit() for f in body), f"{base}.tsv: 3 fields")
    check([[int(f[0]), int(f[1]), f[2]] for f in body] ==
          [[a, b, t.replace("\t", " ").replace("\n", " ")] for a, b, t in zip(starts, ends, texts)],
          f"{base}.tsv: rows = segments")

    lines = open(base + ".lrc", encoding="utf-8").read().split("\n")
    check(lines[0] == "[by:whisper-c]" and lines[-1] == "", f"{base}.lrc: header, final newline")
    lrc = [re.fullmatch(r"\[(\d{2,}):([0-5]\d)\.(\d\d)\](.*)", l) for l in lines[1:-1]]
    check(all(lrc), f"{base}.lrc: [mm:ss.xx]text lines")
    if all(lrc):
        t = [int(m.group(1)) * 60000 + int(m.group(2)) * 1000 + int(m.group(3)) * 10 for m in lrc]
        check(t == [s // 10 * 10 for s in starts], f"{base}.lrc: times = segment starts")
        check([m.group(4) for m in lrc] == texts, f"{base}.lrc: texts")

    for srt in (True, False):
        path = base + (".srt" if srt else ".vtt")
        cues = parse_cues(path, srt)
        plain = [re.sub(r"</?u>", "", c[2]) for c in cues]
        if not want_words:
            check(cues == [(a, b, t) for a, b, t in zip(starts, ends, texts) if t],
                  f"{path}: a cue per segment")
            continue
        words = [w for s in segs for w in s["words"]]
        t_min = round(min(w["start"] for w in words) * 1000)
        t_max = round(max(w["end"] for w in words) * 1000)
        check(all(t_min <= c[0] and c[1] <= t_max for c in cues), f"{path}: cues within the words")
        if "--highlight-words" in opts:
            check(all(c[2].count("<u>") <= 1 for c in cues), f"{path}: at most one word underlined")
            continue
        # a line may break before a word without a leading space ("cold" "-hearted")
        joined = re.sub(r"\s+", "", "".join(plain))
        allw = re.sub(r"\s+", "", "".join(w["word"] for w in words))
        check(joined == allw, f"{path}: cues hold every word once")
        if "--max-line-width" in opts:
            width = int(opts[opts.index("--max-line-width") + 1])
            longest = max(len(w["word"].strip()) for w in words)
            check(all(len(l) <= max(width, longest) for p in plain for l in p.split("\n")),
                  f"{path}: lines at most {width} characters")
        if "--max-line-count" in opts:
            n = int(opts[opts.index("--max-line-count") + 1])
            check(all(len(p.split("\n")) <= n for p in plain), f"{path}: at most {n} lines a cue")
        if not opts or opts == ["-wt"]:
            check(plain == ["".join(w["word"] for w in s["words"]).strip() for s in segs if s["words"]],
                  f"{path}: a cue per segment, its words")


def one_case(tmp, audio, opts, tag):
    base = os.path.join(tmp, tag)
    outs = ["-otxt", "-osrt", "-ovtt", "-oj", "-ocsv", "-otsv", "-olrc"]
    r = run(["transcribe", "-m", model, "-t", "2", *opts, *outs, "-of", base, "-f", audio])
    if not check(r.returncode == 0, f"{tag}: exit 0 ({r.returncode}) {r.stderr.strip()[:300]}"):
        return
    check("Sanitizer" not in r.stderr and "runtime error" not in r.stderr, f"{tag}: no sanitizer report")
    want_words = "-wt" in opts
    d = check_json(base + ".json", want_words, False)
    check_outputs(base, d["segments"], want_words, opts)
    if "-ml" in opts:
        n = int(opts[opts.index("-ml") + 1])
        if "-sow" in opts:
            # as whisper.cpp: a cut only before a token that starts a word, made when that
            # token would pass the limit, so the text before the last word always fits (a
            # word of several tokens may then end past it)
            ok = all(len(s["text"].strip().rpartition(" ")[0]) <= n for s in d["segments"])
            check(ok, f"{tag}: segments within {n} characters but for their last word")
    print(f"ok      {tag}: {len(d['segments'])} segments")
    return d


exe, shared, what = sys.argv[1], testlib.shared_dir(sys.argv[2]), sys.argv[3]
model = os.path.join(shared, "models", "ggml-tiny.en.bin")
jfk = os.path.join(shared, "audio", "jfk", "jfk.wav")
ljspeech = os.path.join(shared, "audio", "ljspeech-dev", "wavs")
testlib.skip_unless_exist([model, jfk] + ([ljspeech] if what == "long" else []))

variants = [[], ["-wt"], ["-ml", "1"], ["-wt", "-ml", "24", "-sow"],
            ["-wt", "--max-line-width", "20", "--max-line-count", "2"],
            ["-wt", "--max-words-per-line", "3"], ["-wt", "--highlight-words"]]
tmp = tempfile.mkdtemp(prefix="wc_test_formats_")
try:
    if what == "long":
        audio = os.path.join(tmp, "long.wav")
        clips = sorted(os.path.join(ljspeech, f) for f in os.listdir(ljspeech) if f.endswith(".flac"))
        r = subprocess.run([sys.argv[4], "--write-wav", audio, *clips], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"NOT OK  run_transcribe --write-wav: {r.stderr.strip()}")
            sys.exit(1)
        variants = [["-bs", "1", "-wt", "-ml", "40", "-sow", "--max-line-width", "42",
                     "--max-line-count", "2"]]
    else:
        audio = jfk
    for k, opts in enumerate(variants):
        one_case(tmp, audio, opts, f"{what}{k}")

    if what == "jfk":
        # -ojf: model, params and token records (times with alignment)
        base = os.path.join(tmp, "full")
        r = run(["transcribe", "-m", model, "-t", "2", "-wt", "-ojf", "-np", "-of", base, jfk])
        if check(r.returncode == 0, f"-ojf: exit 0 {r.stderr.strip()[:300]}"):
            d = check_json(base + ".json", True, True)
            check(d["model"]["type"] == "tiny" and d["params"]["word_timestamps"] is True,
                  "-ojf: model and params")
            check(all(t["t0"] is not None for s in d["segments"] for t in s["tokens"]),
                  "-ojf: token times with -wt")
        # -pc: colours only when asked into a pipe; the text itself unchanged
        plain = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", jfk])
        auto = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-pc", jfk])
        forced = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "--print-colors=always", jfk])
        check(plain.returncode == auto.returncode == forced.returncode == 0, "-pc: exit 0")
        check(auto.stdout == plain.stdout, "-pc into a pipe: no colours")
        check("\033[38;5;" in forced.stdout, "--print-colors=always: colours")
        check(re.sub(r"\033\[[0-9;]*m", "", forced.stdout) == plain.stdout,
              "--print-colors=always: same text once the colours are removed")
        # --print-confidence (whisper.cpp's styles: inverse, underlined, dim) likewise; -ps adds
        # the timestamp tokens around each segment's text
        auto = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "--print-confidence", jfk])
        forced = run(["transcribe", "-m", model, "-t", "2", "-bs", "1",
                      "--print-confidence=always", jfk])
        styles = set(re.findall(r"\033\[([0-9;]*)m", forced.stdout))
        check(auto.stdout == plain.stdout and styles and styles <= {"0", "2", "4", "7"} and
              re.sub(r"\033\[[0-9;]*m", "", forced.stdout) == plain.stdout,
              f"--print-confidence: no styles into a pipe, =always: {sorted(styles)}, same text")
        last = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "--print-confidence=always",
                    "--print-colors=always", jfk])
        check("\033[38;5;" in last.stdout, "--print-confidence then -pc: the last one counts")
        special = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-ps", jfk])
        lines = special.stdout.splitlines()
        check(len(lines) == len(plain.stdout.splitlines()) and lines and
              all(re.search(r"\]  <\|\d+\.\d\d\|>.*<\|\d+\.\d\d\|>$", l) for l in lines) and
              re.sub(r"<\|\d+\.\d\d\|>", "", special.stdout) == plain.stdout,
              f"-ps: each segment between its timestamp tokens ({lines[:1]})")
        r = run(["transcribe", "-m", model, "--highlight-words", jfk])
        check(r.returncode == 2 and "-wt" in r.stderr, "--highlight-words without -wt refused")
        # openai-whisper's spelling takes its True or False
        srts = []
        for v in ("True", "False"):
            base = os.path.join(tmp, "hw" + v)
            r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-d", "3000", "-wt", "-np",
                     "-osrt", "-of", base, "--highlight_words", v, jfk])
            srts.append(open(base + ".srt").read() if r.returncode == 0 else "")
        check(srts[0].count("<u>") > 1 and srts[1] and "<u>" not in srts[1],
              "--highlight_words True / False (openai-whisper's spelling) read as a value")
        # batch: the new formats, json-full; -pc refused
        out = os.path.join(tmp, "batch")
        r = run(["batch", "-m", model, "-t", "2", "-q", "-o", out, "--formats", "csv,tsv,lrc",
                 "-ojf", "-wt", jfk])
        check(r.returncode == 0, f"batch new formats: exit 0 {r.stderr.strip()[:300]}")
        if r.returncode == 0:
            for ext in ("csv", "tsv", "lrc", "json"):
                check(os.path.exists(os.path.join(out, "jfk." + ext)), f"batch: jfk.{ext}")
            d = check_json(os.path.join(out, "jfk.json"), True, True)
            check(all(os.path.getsize(os.path.join(out, "jfk." + e)) > 0 for e in ("csv", "tsv", "lrc")),
                  "batch: outputs not empty")
        # past RLIMIT_FSIZE: an error naming the file, nothing left behind (SIGXFSZ ignored)
        small = os.path.join(tmp, "small")
        os.mkdir(small)
        limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
        r = subprocess.run([exe, "transcribe", "-m", model, "-t", "2", "-bs", "1", "-wt", "-ojf",
                            "-np", "-of", os.path.join(small, "o"), jfk], capture_output=True,
                           text=True, timeout=600, preexec_fn=limit)
        check(r.returncode == 1 and "o.json: cannot write: File too large" in r.stderr,
              f"file-size limit: an error ({r.returncode}, {r.stderr.strip()[:200]})")
        check(os.listdir(small) == [], "file-size limit: no file left")
        r = run(["batch", "-m", model, "-o", out, "-pc", jfk])
        check(r.returncode == 2 and "-pc" in r.stderr, "batch -pc refused")
        print("ok      -ojf, -pc, batch")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("formats: " + ("OK" if testlib.failures == 0 else f"{testlib.failures} NOT OK"))
sys.exit(testlib.exit_status())
