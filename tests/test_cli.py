#!/usr/bin/env python3
"""test_cli.py — the whisper-c command line: help/version, outputs, and failures.

usage: test_cli.py WHISPER_C SHARED_DIR

Every failure must print one clear line on stderr, exit nonzero and leave no output file (and no
temporary file) behind. Exits 77 (skip) when the shared model is missing.
"""
import array
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import wave

import testlib
from testlib import check


def run(args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([exe] + args, capture_output=True, text=True, env=e, timeout=600)


def expect_failure(what, args, tmp, env=None, needle=None):
    before = set(os.listdir(tmp))
    r = run(args, env)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode != 0, f"{what}: nonzero exit ({r.returncode})")
    check(len(lines) >= 1 and not r.stderr.startswith("AddressSanitizer"),
          f"{what}: an error line: {lines[:1]}")
    check("Sanitizer" not in r.stderr and "runtime error" not in r.stderr, f"{what}: no sanitizer report")
    if needle:
        check(any(needle in l for l in lines), f"{what}: message names {needle!r}")
    check(set(os.listdir(tmp)) == before, f"{what}: no file left behind ({set(os.listdir(tmp)) - before})")


exe, shared = sys.argv[1], testlib.shared_dir(sys.argv[2])
model = os.path.join(shared, "models", "ggml-tiny.en.bin")
jfk = os.path.join(shared, "audio", "jfk", "jfk.wav")
golden = os.path.join(shared, "golden", "tiny.en", "dev.jsonl")

r = run(["--help"])
check(r.returncode == 0 and "usage" in r.stdout, "--help")
r = run(["--version"])
check(r.returncode == 0 and r.stdout.startswith("whisper-c "), "--version")
r = run(["transcribe", "--no-such-option", "x.wav"])
check(r.returncode != 0 and r.stderr.strip() != "", "unknown option rejected")
r = run(["frobnicate"])
check(r.returncode != 0, "unknown command rejected")

if not (os.path.exists(model) and os.path.exists(jfk)):
    print(f"SKIP: {model} or {jfk} missing (set WHISPERC_SHARED)")
    sys.exit(77 if testlib.failures == 0 else 1)

tmp = tempfile.mkdtemp(prefix="wc_test_cli_")
try:
    out = os.path.join(tmp, "out")
    outs = ["-otxt", "-osrt", "-ovtt", "-oj", "-of", out]
    garbage = os.path.join(tmp, "garbage.bin")
    with open(garbage, "wb") as f:
        f.write(b"this is not a model" * 100)
    truncated = os.path.join(tmp, "truncated.bin")
    with open(model, "rb") as f, open(truncated, "wb") as g:
        g.write(f.read(5 << 20))
    textfile = os.path.join(tmp, "notes.wav")
    with open(textfile, "w") as f:
        f.write("not audio at all\n" * 50)
    empty = os.path.join(tmp, "empty.wav")
    open(empty, "w").close()

    expect_failure("missing model", ["transcribe", "-m", os.path.join(tmp, "nope.bin"), *outs, jfk],
                   tmp, needle="nope.bin")
    expect_failure("garbage model", ["transcribe", "-m", garbage, *outs, jfk], tmp,
                   needle="garbage.bin")
    expect_failure("truncated model", ["transcribe", "-m", truncated, *outs, jfk], tmp,
                   needle="truncated.bin")
    expect_failure("missing audio", ["transcribe", "-m", model, *outs, os.path.join(tmp, "no.wav")],
                   tmp, needle="no.wav")
    expect_failure("non-audio file", ["transcribe", "-m", model, *outs, textfile], tmp,
                   needle="notes.wav")
    expect_failure("empty audio file", ["transcribe", "-m", model, *outs, empty], tmp,
                   needle="empty.wav")
    expect_failure("default model missing", ["transcribe", jfk], tmp,
                   env={"WHISPERC_MODEL": os.path.join(tmp, "nomodel.bin")}, needle="nomodel.bin")
    for f in (garbage, truncated, textfile, empty):
        os.unlink(f)

    # jfk: stdout segments, every output format, the reference's text (beam 5 by default, as
    # whisper.cpp; openai-whisper's dev.beam5 run), and greedy with -bs 1 (its dev run)
    def reference_text(path):
        with open(path) as f:
            for line in f:
                d = json.loads(line)
                if d["audio"].endswith("jfk/jfk.wav"):
                    return d["text"].strip()
    want = reference_text(golden.replace("dev.jsonl", "dev.beam5.jsonl"))
    want_greedy = reference_text(golden)
    r = run(["transcribe", "-m", model, "-t", "2", *outs, jfk])
    check(r.returncode == 0, f"jfk: exit 0 ({r.stderr.strip()[-300:]})")
    check(r.stdout.startswith("[00:00:00.000 --> 00:00:"), "jfk: whisper.cpp-style segment lines")
    check(sorted(os.listdir(tmp)) == ["out.json", "out.srt", "out.txt", "out.vtt"],
          f"jfk: exactly the four outputs ({sorted(os.listdir(tmp))})")
    if os.path.exists(out + ".txt"):
        txt = open(out + ".txt").read()
        check(" ".join(txt.split()) == " ".join(want.split()), f"jfk: txt is the reference text ({txt.strip()!r})")
    if os.path.exists(out + ".srt"):
        srt = open(out + ".srt").read()
        check(srt.startswith("1\n00:00:00,000 --> "), "jfk: srt format")
    if os.path.exists(out + ".vtt"):
        vtt = open(out + ".vtt").read()
        check(vtt.startswith("WEBVTT\n\n00:00:00.000 --> "), "jfk: vtt format")
    if os.path.exists(out + ".json"):
        j = json.load(open(out + ".json"))
        check(isinstance(j, dict) and len(j.get("transcription", j.get("segments", []))) >= 1, "jfk: json parses with segments")

    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-bo", "1", "-np", "-otxt", "-of",
             out + "-greedy", jfk])
    txt = open(out + "-greedy.txt").read() if os.path.exists(out + "-greedy.txt") else ""
    check(r.returncode == 0 and " ".join(txt.split()) == " ".join(want_greedy.split()),
          f"jfk -bs 1: txt is the greedy reference text ({txt.strip()!r})")

    # --device: without a usable GPU, cuda is a clear error and auto falls back to the CPU; with
    # one, both run on it and greedy jfk still reads as the reference
    r = run(["transcribe", "-m", model, "--device", "cuda", "-bs", "1", "-bo", "1", "-np", "-otxt",
             "-of", out + "-cuda", jfk])
    if r.returncode != 0:
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(len(lines) == 1 and "CUDA" in lines[0] and "Sanitizer" not in r.stderr,
              f"--device cuda without a GPU: one clear error ({r.stderr.strip()!r})")
        check(not os.path.exists(out + "-cuda.txt"), "--device cuda without a GPU: no output file")
    else:
        txt = open(out + "-cuda.txt").read() if os.path.exists(out + "-cuda.txt") else ""
        check(" ".join(txt.split()) == " ".join(want_greedy.split()),
              f"--device cuda: greedy jfk is the reference text ({txt.strip()!r})")
    r = run(["transcribe", "-m", model, "--device", "auto", "-t", "2", "-bs", "1", "-bo", "1",
             "-np", "-otxt", "-of", out + "-auto", jfk])
    txt = open(out + "-auto.txt").read() if os.path.exists(out + "-auto.txt") else ""
    check(r.returncode == 0 and " ".join(txt.split()) == " ".join(want_greedy.split()),
          f"--device auto: greedy jfk is the reference text ({txt.strip()!r})")

    # -dl: the top 5 languages (multilingual models), a clear error on English-only ones
    r = run(["transcribe", "-m", model, "-dl", jfk])
    check(r.returncode == 1 and "English-only" in r.stderr and r.stdout == "",
          f"-dl on an English-only model: one clear error ({r.stderr.strip()!r})")
    base = os.path.join(shared, "models", "ggml-base.bin")
    if os.path.exists(base):
        de = os.path.join(shared, "audio", "multilingual", "de.wav")
        r = run(["transcribe", "-m", base, "-t", "2", "-dl", de])
        top = r.stdout.split(":", 1)[-1].split(",")
        check(r.returncode == 0 and len(top) == 5 and top[0].split()[0] == "de",
              f"-dl: five languages, German first ({r.stdout.strip()!r})")

    # standard input ("-"): the file's transcript; a format without -of goes to stdout (as
    # whisper.cpp's); read once; a terminal is never waited on
    with open(jfk, "rb") as fh:
        r = subprocess.run([exe, "transcribe", "-m", model, "-t", "2", "-bs", "1", "-bo", "1",
                            "-np", "-otxt", "-of", os.path.join(tmp, "stdin"), "-"], stdin=fh,
                           capture_output=True, text=True, timeout=600)
    txt = open(os.path.join(tmp, "stdin.txt")).read() if r.returncode == 0 else ""
    check(" ".join(txt.split()) == " ".join(want_greedy.split()),
          f"jfk.wav through stdin: the reference text ({txt.strip()!r}, {r.stderr.strip()!r})")
    with open(jfk, "rb") as fh:
        r = subprocess.run([exe, "transcribe", "-m", model, "-t", "2", "-bs", "1", "-bo", "1",
                            "-osrt", "-"], stdin=fh, capture_output=True, text=True, timeout=600)
    check(r.returncode == 0 and r.stdout.startswith("1\n00:00:00,000 --> ") and
          "[00:" not in r.stdout and not os.path.exists("-.srt"),
          f"-osrt for stdin without -of: the srt on stdout, no segments printed ({r.stdout[:80]!r})")
    r = run(["transcribe", "-m", model, "-otxt", "-", jfk])
    check(r.returncode == 2 and "-of" in r.stderr, f"-otxt for stdin among other inputs without "
          f"-of: usage error ({r.stderr.strip()!r})")
    # whisper.cpp's console flags: -np prints the results still (only them), -nt runs the texts
    # on without timestamps, -of - puts the first format on stdout and names the others
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-bo", "1", "-np", "-nt", jfk])
    check(r.returncode == 0 and r.stdout.count("\n") == 1 and "[" not in r.stdout and
          r.stdout.endswith("for your country.\n") and "Americans ask not" in r.stdout,
          f"-np -nt: the text on one line, no timestamps ({r.stdout!r})")
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-bo", "1", "-otxt", "-ovtt",
             "-of", "-", jfk])
    check(r.returncode == 0 and " ".join(r.stdout.split()) == " ".join(want_greedy.split()) and
          "vtt not written" in r.stderr and not os.path.exists("-.txt"),
          f"-of - with -otxt -ovtt: the txt on stdout, the vtt named as not written "
          f"({r.stdout!r}, {r.stderr.strip()!r})")
    r = run(["transcribe", "-m", model, "-", "-"])
    check(r.returncode == 2 and "once" in r.stderr, f"stdin twice: usage error ({r.stderr.strip()!r})")
    # -of as whisper.cpp's, repeatable: the k-th names the k-th input's outputs, "" or none the
    # input's own name; more -of than inputs refused
    flac = os.path.join(tmp, "jfk.flac")
    shutil.copy(os.path.join(shared, "audio", "jfk", "jfk.flac"), flac)
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "-otxt", "-of", out + "-a",
             "-of", "", jfk, flac])
    ta = open(out + "-a.txt").read() if os.path.exists(out + "-a.txt") else ""
    tb = open(flac + ".txt").read() if os.path.exists(flac + ".txt") else ""
    check(r.returncode == 0 and ta and ta == tb,
          f"-of A -of '' a.wav b.flac: A.txt and b.flac.txt, the same text ({r.stderr.strip()!r})")
    os.unlink(flac)
    if os.path.exists(flac + ".txt"):
        os.unlink(flac + ".txt")
    r = run(["transcribe", "-m", model, "-otxt", "-of", "a", "-of", "b", jfk])
    check(r.returncode == 2 and "2 -of for 1 input" in r.stderr,
          f"two -of for one input: usage error ({r.stderr.strip()!r})")
    # what cannot work is said before any input is read: params the model cannot take once
    # (exit 2), outputs where they cannot be written before the file's transcription
    r = run(["transcribe", "-m", model, "-l", "xx", jfk, jfk])
    check(r.returncode == 2 and r.stderr.count("unknown language 'xx'") == 1 and not r.stdout,
          f"-l xx over two inputs: one usage error ({r.stderr.strip()!r})")
    r = run(["transcribe", "-m", model, "-otxt", "-of", os.path.join(tmp, "nodir", "x"), jfk])
    check(r.returncode == 1 and "cannot write its outputs there" in r.stderr and not r.stdout,
          f"-of in a missing directory: the file not transcribed ({r.stderr.strip()!r})")
    r = run(["transcribe", "-m", model, "--batch-size", "4", jfk])
    check(r.returncode == 2 and "bench option" in r.stderr and "whisper-c batch" in r.stderr,
          f"transcribe --batch-size: usage error pointing at batch ({r.stderr.strip()!r})")
    # results that could not be printed (a full disk) are an error
    with open("/dev/full", "w") as full:
        r = subprocess.run([exe, "transcribe", "-m", model, "-t", "2", "-bs", "1", jfk],
                           stdout=full, stderr=subprocess.PIPE, text=True, timeout=600)
    check(r.returncode == 1 and "standard output: cannot write" in r.stderr,
          f"stdout on /dev/full: exit 1 ({r.returncode}, {r.stderr.strip()!r})")
    with open("/dev/full", "w") as full:
        r = subprocess.run([exe, "transcribe", "-m", model, "-t", "2", "-bs", "1", "-otxt", "-of",
                            "-", jfk], stdout=full, stderr=subprocess.PIPE, text=True, timeout=600)
    said = [l for l in r.stderr.splitlines() if "cannot write" in l]
    check(r.returncode == 1 and len(said) == 1,
          f"-of - on /dev/full: exit 1, said once ({r.returncode}, {r.stderr.strip()!r})")
    r = subprocess.run([exe, "transcribe", "-m", model, "-"], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and r.stderr.startswith("whisper-c: -: empty"),
          f"empty stdin: one line naming '-' ({r.stderr.strip()!r})")
    # endless input stops at the memory budget; a non-blocking pipe written slowly is waited on
    with open("/dev/zero", "rb") as fh:
        r = subprocess.run([exe, "transcribe", "-m", model, "--max-memory", "200", "-"],
                           stdin=fh, capture_output=True, text=True, timeout=120)
    check(r.returncode == 1 and "-: more input than the 200 MiB" in r.stderr,
          f"/dev/zero on stdin: refused at the budget ({r.stderr.strip()!r})")
    import fcntl
    import threading
    rfd, wfd = os.pipe()
    fcntl.fcntl(rfd, fcntl.F_SETFL, fcntl.fcntl(rfd, fcntl.F_GETFL) | os.O_NONBLOCK)
    data = open(jfk, "rb").read()

    def feed():
        for i in range(0, len(data), 65536):
            os.write(wfd, data[i:i + 65536])
            time.sleep(0.05)
        os.close(wfd)

    t = threading.Thread(target=feed)
    t.start()
    r = subprocess.run([exe, "transcribe", "-m", model, "-t", "2", "-bs", "1", "-bo", "1", "-nt",
                        "-"], stdin=rfd, capture_output=True, text=True, timeout=600)
    t.join()
    os.close(rfd)
    check(r.returncode == 0 and "country" in r.stdout,
          f"a non-blocking pipe fed slowly: transcribed ({r.stderr.strip()[:200]!r})")

    # bench --synthetic --batch-size: the encoder per window, one by one and in one pass
    # and --throughput 3: 3 windows, 2 lanes at a time (waves of 2 and 1), 2 steps each
    r = run(["bench", "--synthetic", "-m", model, "-t", "2", "-bs", "1", "--tokens", "2",
             "--batch-size", "2", "--throughput", "3"])
    check(r.returncode == 0 and "encoder, 2 windows" in r.stdout and "\n  1 (alone) " in r.stdout
          and "\n  2 " in r.stdout and "\n  best batch " in r.stdout,
          f"bench --synthetic --batch-size 2: encoder alone and batched ({r.stdout[-200:]!r})")
    check("batched throughput: 3 windows of random log-Mel, 2 lanes, 2 decoder steps" in r.stdout
          and "(4 steps in 2 waves" in r.stdout and "6 tokens)" in r.stdout and
          "x real time)" in r.stdout,
          f"bench --synthetic --throughput 3: windows, waves, steps ({r.stdout[-400:]!r})")
    # OpenBLAS's kernels named; where it fell back to Prescott's (SSE3) on a CPU with AVX2 and
    # FMA, the library had it choose again as it was loaded (src/cpu/blas_core.c), or the
    # command started again with OPENBLAS_CORETYPE (blas_reexec.c): not Prescott's
    head = r.stdout.splitlines()[0] if r.stdout else ""
    flags = set()
    if os.path.exists("/proc/cpuinfo"):
        flags = set(open("/proc/cpuinfo").read().split())
    check("(OpenBLAS " in head and " kernels)" in head, f"bench names the BLAS kernels ({head!r})")
    if {"avx2", "fma"} <= flags and "OPENBLAS_CORETYPE" not in os.environ:
        check("OpenBLAS Prescott" not in head,
              f"an AVX2 CPU never runs OpenBLAS's Prescott fallback ({head!r})")
    r = run(["bench", "--synthetic", "-m", model, "-t", "2", "-bs", "1", "--tokens", "1"],
            env={"OPENBLAS_CORETYPE": "Prescott"})
    check(r.returncode == 0 and "(OpenBLAS Prescott kernels)" in r.stdout,
          f"OPENBLAS_CORETYPE set by the user is kept ({r.stdout[:120]!r})")
    # with OpenBLAS made to say "Prescott" (tests/fake_corename.c, preloaded) and its choice not
    # made again in the process (WHISPERC_BLAS_RESELECT=0, as where OpenBLAS has no functions
    # for it; test_blas_core checks those): the command starts again with the variable set,
    # once, so the model load has nothing to warn about; started through the dynamic loader it
    # cannot, and warns. (A sanitizer's runtime must be loaded first: not there.)
    shim = os.environ.get("WHISPERC_FAKE_CORENAME", "")
    ldso = "/lib64/ld-linux-x86-64.so.2"
    if ({"avx2", "fma"} <= flags and os.path.exists(shim) and os.path.exists(ldso)
            and os.environ.get("WHISPERC_SANITIZE", "none") == "none"):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        env["LD_PRELOAD"] = shim
        env["WHISPERC_BLAS_RESELECT"] = "0"
        args = ["transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "-oj", "-of",
                os.path.join(tmp, "reexec"), jfk]
        r = subprocess.run([exe] + args, capture_output=True, text=True, env=env, timeout=600)
        check(r.returncode == 0 and "does not recognise" not in r.stderr
              and os.path.exists(os.path.join(tmp, "reexec.json")),
              f"OpenBLAS on Prescott's kernels: started again with OPENBLAS_CORETYPE, no "
              f"warning ({r.returncode}, {r.stderr.strip()[:200]!r})")
        r = subprocess.run([ldso, exe] + args, capture_output=True, text=True, env=env,
                           timeout=600)
        check(r.returncode == 0 and "OPENBLAS_CORETYPE=" in r.stderr,
              f"the same through ld.so: not started again, the warning says what to set "
              f"({r.returncode}, {r.stderr.strip()[:200]!r})")
    # a long-form window's prompt (previous text): prefilled, the rest as before
    r = run(["bench", "--synthetic", "-m", model, "-t", "2", "-bs", "1", "--tokens", "2",
             "--batch-size", "2", "--throughput", "2", "--context-tokens", "20"])
    check(r.returncode == 0 and "prompt of 24 tokens" in r.stdout
          and "(2 steps in 1 waves" in r.stdout,
          f"bench --throughput --context-tokens 20: 24-token prompts ({r.stdout[-400:]!r})")
    r = run(["bench", "--synthetic", "-m", model, "--context-tokens", "20"])
    check(r.returncode == 2 and "--context-tokens" in r.stderr,
          f"--context-tokens without --throughput: a usage error ({r.stderr.strip()!r})")
    r = run(["transcribe", "--throughput", "3", jfk])
    check(r.returncode == 2 and "--throughput" in r.stderr,
          f"--throughput outside bench --synthetic: a usage error ({r.stderr.strip()!r})")

    # the fallback's flags (whisper.cpp's -tp -tpi -lpt -nth): the parameters as asked (-ojf),
    # sampling from the first window at -tp 0.5 the same for the same --seed, and a bad value
    # a usage error
    samp = ["transcribe", "-m", model, "-t", "2", "-bs", "1", "-bo", "2", "-np", "-tp", "0.5",
            "-tpi", "0.25", "-lpt", "-0.5", "-nth", "0.7", "--compression-ratio-threshold", "2.0",
            "--seed", "7", "-ojf"]
    r = run(samp + ["-of", out + "-tp1", jfk])
    r2 = run(samp + ["-of", out + "-tp2", jfk])
    j = json.load(open(out + "-tp1.json")) if os.path.exists(out + "-tp1.json") else {}
    prm = j.get("params", {})
    check(r.returncode == 0 and prm.get("temperatures") == [0.5, 0.75, 1.0] and
          prm.get("logprob_threshold") == -0.5 and prm.get("no_speech_threshold") == 0.7 and
          prm.get("compression_ratio_threshold") == 2.0,
          f"-tp 0.5 -tpi 0.25 -lpt -nth --compression-ratio-threshold: the parameters ({prm})")
    segs = j.get("segments", [])
    check(r2.returncode == 0 and len(segs) >= 1 and
          open(out + "-tp2.json").read() == open(out + "-tp1.json").read(),
          f"-tp 0.5 --seed 7 twice: the same sampled transcript ({len(segs)} segments)")
    r = run(["transcribe", "-m", model, "-tp", "1.5", jfk])
    check(r.returncode == 2 and "-tp" in r.stderr, f"-tp 1.5: a usage error ({r.stderr.strip()!r})")
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "-tpi", "0", "-ojf", "-of",
             out + "-tpi0", jfk])
    prm = json.load(open(out + "-tpi0.json")).get("params", {}) if r.returncode == 0 else {}
    check(prm.get("temperatures") == [0.0], f"-tpi 0: no fallback ({prm.get('temperatures')})")
    r = run(["transcribe", "-m", model, "-tpi", "0.05", jfk])
    check(r.returncode == 2 and "more than 16 temperatures" in r.stderr,
          f"-tpi 0.05 (21 temperatures): a usage error, not a list cut at 16 ({r.stderr.strip()!r})")
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "-mc", "-1", "-l", "AUTO",
             "-ojf", "-of", out + "-mc", jfk])
    prm = json.load(open(out + "-mc.json")).get("params", {}) if r.returncode == 0 else {}
    check(r.returncode == 0 and prm.get("max_context") == -1,
          f"-mc -1 (whisper.cpp's default) and -l AUTO run ({prm.get('max_context')}, "
          f"{r.stderr.strip()!r})")

    # --suppress-regex (whisper.cpp's) and --suppress-tokens (openai-whisper's list, -1 the
    # non-speech set): the parameters as asked (-ojf), the regex's tokens gone from the text;
    # a regex that does not compile, a bad list and an id past the vocabulary refused
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "-ojf", "--suppress-regex",
             " ?[Aa]sk", "--suppress-tokens", "-1,13", "-of", out + "-sup", jfk])
    j = json.load(open(out + "-sup.json")) if r.returncode == 0 else {}
    prm = j.get("params", {})
    check(prm.get("suppress_regex") == " ?[Aa]sk" and prm.get("suppress_tokens") == [-1, 13] and
          not re.search(r"\b[Aa]sk\b|\.", j.get("text", "ask")) and "country" in j.get("text", ""),
          f"--suppress-regex ' ?[Aa]sk' --suppress-tokens -1,13: {prm.get('suppress_tokens')}, "
          f"{j.get('text')!r}")
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "-ojf", "--suppress-tokens",
             "", "-of", out + "-sup0", jfk])
    prm = json.load(open(out + "-sup0.json")).get("params", {}) if r.returncode == 0 else {}
    check(prm.get("suppress_tokens") == [], f"--suppress-tokens '': none ({prm.get('suppress_tokens')})")
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "-ojf", "--suppress-tokens",
             "", "-sns", "-of", out + "-sup1", jfk])
    prm = json.load(open(out + "-sup1.json")).get("params", {}) if r.returncode == 0 else {}
    check(prm.get("suppress_tokens") == [-1],
          f"--suppress-tokens '' -sns: the non-speech set ({prm.get('suppress_tokens')})")
    for bad, needle in ((["--suppress-regex", "("], "suppress_regex '('"),
                        (["--suppress-tokens", "1,x"], "--suppress-tokens"),
                        (["--suppress-tokens", "-2"], "--suppress-tokens"),
                        (["--suppress-tokens", "99999"], "outside the vocabulary")):
        expect_failure(" ".join(bad), ["transcribe", "-m", model, "-t", "2", "-bs", "1"] + bad +
                       [jfk], tmp, needle=needle)

    # -dtw NAME (whisper.cpp's, its dotted large names too): token times in -ojf (t0, t1 and
    # whisper.cpp's t_dtw in centiseconds, -1 on timestamps) and the segments of a run without
    # it; a name that is not this model's shape refused
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "-ojf", "-dtw", "tiny.en",
             "-ls", "-osrt", "-on", "41", "-of", out + "-dtw", jfk])
    j = json.load(open(out + "-dtw.json")) if r.returncode == 0 else {}
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "-ojf", "-of", out + "-nodtw",
             jfk])
    plain = json.load(open(out + "-nodtw.json")) if r.returncode == 0 else {}
    toks = [t for s in j.get("segments", []) for t in s["tokens"]]
    text = [t for t in toks if not t["text"].startswith("<|")]
    check(j.get("params", {}).get("dtw_token_timestamps") is True and len(text) > 10 and
          all(t["t_dtw"] == round(t["t0"] * 100) and t["t1"] >= t["t0"] for t in text) and
          all(t["t_dtw"] == -1 for t in toks if t["text"].startswith("<|")) and
          [(s["start"], s["end"], s["text"]) for s in j.get("segments", [])] ==
          [(s["start"], s["end"], s["text"]) for s in plain.get("segments", [])] and
          "words" not in j.get("segments", [{}])[0],
          f"-dtw tiny.en: token times, segments unchanged ({text[:2]})")
    # -ls (whisper.cpp's --log-score): FILE.score.txt, each token and its probability a line
    score = open(out + "-dtw.score.txt").read().splitlines() if r.returncode == 0 else []
    pairs = [l.rsplit("\t", 1) for l in score]
    check(len(pairs) == len(toks) and all(len(x) == 2 and x[0] == t["text"] and
                                          abs(float(x[1]) - t["p"]) < 2e-6
                                          for x, t in zip(pairs, toks)),
          f"-ls: a line a token, text<TAB>p ({score[:2]}, {len(score)} of {len(toks)})")
    # -on N (whisper.cpp's --offset-n): srt cues numbered from N + 1
    srt = open(out + "-dtw.srt").read().split("\n\n") if r.returncode == 0 else []
    check([c.split("\n")[0] for c in srt if c.strip()] == ["42", "43"],
          f"-on 41: srt cues 42 and 43 ({srt[:1]})")
    expect_failure("-dtw large.v3", ["transcribe", "-m", model, "-t", "2", "-bs", "1", "-dtw",
                                     "large.v3", jfk], tmp, needle="large-v3")

    # -di (whisper.cpp's stereo diarization): jfk's first 7.6 s on the left channel, the rest
    # on the right; each segment labelled with its channel in every format, "?" where both
    # channels carry the same; a mono file warned about; standard input and --batch-size refused
    def stereo(path, cut_s):
        with wave.open(jfk) as w:
            rate, x = w.getframerate(), array.array("h", w.readframes(w.getnframes()))
        st = array.array("h", bytes(4 * len(x)))
        for i, v in enumerate(x):
            if cut_s is None:
                st[2 * i] = st[2 * i + 1] = v
            else:
                st[2 * i + (i >= cut_s * rate)] = v
        with wave.open(path, "wb") as w:
            w.setnchannels(2), w.setsampwidth(2), w.setframerate(rate), w.writeframes(st)
    split, both = os.path.join(tmp, "split.wav"), os.path.join(tmp, "both.wav")
    stereo(split, 7.6), stereo(both, None)
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-di", "-osrt", "-ovtt", "-ocsv",
             "-otxt", "-ojf", "-of", out + "-di", split])
    ok = r.returncode == 0
    srt = open(out + "-di.srt").read() if ok else ""
    vtt = open(out + "-di.vtt").read() if ok else ""
    csv_ = open(out + "-di.csv").read() if ok else ""
    txt = open(out + "-di.txt").read() if ok else ""
    full = json.load(open(out + "-di.json")) if ok else {}
    segs = full.get("segments", [])
    want = ["0" if s["start"] < 7.0 else "1" for s in segs]
    check(ok and len(segs) >= 2 and want[0] == "0" and want[-1] == "1" and
          full["params"]["diarize"] is True and
          [s.get("speaker") for s in segs] == want and
          re.findall(r"\(speaker (.)\)", r.stdout) == want and
          re.findall(r"^\(speaker (.)\) ", srt, re.M) == want and
          re.findall(r"^<v Speaker(.)>", vtt, re.M) == want and
          re.findall(r"^\(speaker (.)\) ", txt, re.M) == want and
          csv_.startswith("start,end,speaker,text\n") and
          re.findall(r"^\d+,\d+,(.),", csv_, re.M) == want,
          f"-di on a two-channel file: speakers {want} in stdout, srt, vtt, txt, csv, json "
          f"({r.stderr.strip()[-200:]!r})")
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-di", "-wt", "-osrt", "-ovtt",
             "-of", out + "-diw", split])
    srt = open(out + "-diw.srt").read() if r.returncode == 0 else ""
    vtt = open(out + "-diw.vtt").read() if r.returncode == 0 else ""
    check(re.findall(r"^\(speaker (.)\) ", srt, re.M) == want and
          re.findall(r"^<v Speaker(.)>", vtt, re.M) == want,
          f"-di -wt: word cues labelled too ({srt[:300]!r})")
    r = run(["bench", "-m", model, "-di", split])
    check(r.returncode == 2 and "-di" in r.stderr, f"bench -di refused ({r.stderr.strip()!r})")
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-di", "-oj", "-of", out + "-di2",
             both])
    segs = json.load(open(out + "-di2.json"))["segments"] if r.returncode == 0 else []
    check(segs and all(s.get("speaker") == "?" for s in segs),
          f"-di, the same on both channels: (speaker ?) ({[s.get('speaker') for s in segs]})")
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-di", "-oj", "-of", out + "-di3",
             jfk])
    segs = json.load(open(out + "-di3.json"))["segments"] if r.returncode == 0 else []
    check(segs and all("speaker" not in s for s in segs) and
          "not a two-channel recording" in r.stderr and "(speaker" not in r.stdout,
          f"-di on a mono file: no speakers, a warning ({r.stderr.strip()[-160:]!r})")
    r = subprocess.run([exe, "transcribe", "-m", model, "-di", "-"], input=b"", capture_output=True,
                       timeout=60)
    check(r.returncode == 2 and b"-di" in r.stderr, f"-di with standard input refused ({r.stderr!r})")
    r = run(["batch", "-m", model, "-q", "-di", "--batch-size", "2", "-o", out + "-di-batch", split])
    check(r.returncode == 2 and "-di" in r.stderr, f"batch -di --batch-size 2 refused ({r.stderr!r})")
    r = run(["batch", "-m", model, "-t", "2", "-bs", "1", "-q", "-di", "--formats", "json", "-o",
             out + "-di-batch", split])
    jpath = os.path.join(out + "-di-batch", "split.json")
    segs = json.load(open(jpath))["segments"] if os.path.exists(jpath) else []
    check(r.returncode == 0 and [s.get("speaker") for s in segs][:1] == ["0"],
          f"batch -di: speakers in the json ({r.stderr.strip()[-160:]!r})")

    # whisper.cpp's -vm (a Silero model file; tests/test_silero_vad.py runs a real one): a file
    # that is missing is an error naming it; without --vad it has no effect, and says so
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "--vad", "-vm",
             out + "-missing-silero.bin", jfk])
    check(r.returncode == 1 and "missing-silero.bin: cannot open the VAD model" in r.stderr,
          f"--vad -vm MISSING: an error naming the file ({r.stderr.strip()[-160:]!r})")
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "-vm", "x.bin", jfk])
    check(r.returncode == 0 and "-vm x.bin has no effect without --vad" in r.stderr,
          f"-vm without --vad: runs, says it has no effect ({r.stderr.strip()[-160:]!r})")

    # whisper.cpp's -ng, -fa, -nfa, -sns and -dev N run (the same text as without them)
    base_args = ["transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "-otxt"]
    r1 = run(base_args + ["-of", out + "-plain", jfk])
    r2 = run(base_args + ["-ng", "-fa", "-nfa", "-sns", "-dev", "0", "-of", out + "-wcpp", jfk])
    same = (r1.returncode == 0 and r2.returncode == 0 and
            open(out + "-plain.txt").read() == open(out + "-wcpp.txt").read())
    check(same, f"-ng -fa -nfa -sns -dev 0: accepted, the same text ({r2.stderr.strip()[-160:]!r})")
    # whisper.cpp's -wt N (word threshold, not whisper-c's -wt flag), -vmsd N and -vo N: checked,
    # said to be unused, the same srt (no word timing) as without them
    srt = ["transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "-osrt"]
    r1 = run(srt + ["-of", out + "-srt-plain", jfk])
    r2 = run(srt + ["-wt", "0.01", "-vmsd", "10", "-vo", "0.1", "-of", out + "-srt-wcpp", jfk])
    same = (r1.returncode == 0 and r2.returncode == 0 and
            open(out + "-srt-plain.srt").read() == open(out + "-srt-wcpp.srt").read())
    check(same and r2.stderr.count("not used here") == 3,
          f"-wt 0.01 -vmsd 10 -vo 0.1: accepted, unused, the same srt ({r2.stderr.strip()[-120:]!r})")
    # -et N, -ac N, -p N and -oved NAME likewise (said to be unused), -ac 0 and -p 1 silently:
    # they ask for what whisper-c does anyway
    r2 = run(srt + ["-et", "2.4", "--audio-ctx", "512", "-p", "4", "-ac", "0", "--processors", "1",
                    "-oved", "GPU", "-of", out + "-srt-wcpp2", jfk])
    same = (r2.returncode == 0 and
            open(out + "-srt-plain.srt").read() == open(out + "-srt-wcpp2.srt").read())
    check(same and r2.stderr.count("not used here") == 4 and "-ac 0" not in r2.stderr,
          f"-et 2.4 --audio-ctx 512 -p 4 -ac 0 --processors 1 -oved GPU: accepted, the same srt "
          f"({r2.stderr.strip()[-200:]!r})")

    # default model via the environment, no flags
    r = run(["transcribe", "-np", jfk], env={"WHISPERC_MODEL": model})
    check(r.returncode == 0, "default model from WHISPERC_MODEL")
finally:
    shutil.rmtree(tmp)

print(f"{testlib.failures} failure(s)")
sys.exit(testlib.exit_status())
