#!/usr/bin/env python3
"""test_faults.py — `whisper-c transcribe` under a full disk and signals.

usage: test_faults.py WHISPER_C SHARED_DIR

  - a file-size limit (ulimit -f, set in the child) makes writing the outputs fail with one
    "File too large" line and a non-zero exit; the previous output files are intact and no
    temporary file is left
  - `whisper-c batch` with its results file 40 bytes short of that limit: exit 1, and the part
    of the item's line that fitted is taken back (no partial line for the next one to join)
  - SIGTERM and SIGINT while a 33 s file is being transcribed (after its first window) end the
    run with 143 / 130 and one line saying so, within 2 s also in a window of beam search (the
    run checks for a stop only between windows; the handler ends the process itself while no
    output is being written); no output file and no temporary file exist
  - `whisper-c batch` stopped by ONE SIGTERM while its item is in a first window of beam search
    5 / best-of 5 (about 7 s on one core): the abort is seen between decoder steps, so the run
    ends within 4 s (0.04 s here), exit 143, long before --stop-timeout 30 (its watchdog: test_gpu_faults, a
    hung GPU); no output or results line for the item; then the same command resumes it to a
    complete result
  - `whisper-c batch --batch-size 2 --read-threads 2` stopped by SIGTERM after a group: outputs
    only for the items with a results line (the group read ahead is dropped); the rerun
    completes every item once
Exits 77 (skip) when the shared model or audio is missing.
"""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import wave

import testlib
from testlib import check


exe, shared = os.path.abspath(sys.argv[1]), testlib.shared_dir(sys.argv[2])
model = os.path.join(shared, "models", "ggml-tiny.en.bin")
jfk = os.path.join(shared, "audio", "jfk", "jfk.wav")
testlib.skip_unless_exist([model, jfk])


def files(d):
    return sorted(os.listdir(d))


def no_sanitizer_report(err, what):
    check("Sanitizer" not in err and "runtime error" not in err, f"{what}: no sanitizer report")


def file_size_limit(tmp):
    out = os.path.join(tmp, "out")
    args = [exe, "transcribe", "-m", model, "-t", "2", "-bs", "1", "-np", "-otxt", "-oj", "-of",
            out, jfk]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    check(r.returncode == 0 and files(tmp) == ["out.json", "out.txt"],
          f"first run writes out.txt and out.json ({r.returncode}, {files(tmp)})")
    before = {f: open(os.path.join(tmp, f), "rb").read() for f in files(tmp)}
    limit = 64  # bytes: less than either output
    r = subprocess.run(args, capture_output=True, text=True, timeout=600,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE,
                                                             (limit, limit)))
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode not in (0, -signal.SIGXFSZ) and r.returncode > 0,
          f"ulimit -f: non-zero exit, not killed by SIGXFSZ ({r.returncode})")
    check(len(lines) == 1 and "File too large" in lines[0] and "out.txt" in lines[0],
          f"ulimit -f: one line naming the file and the error ({lines})")
    after = {f: open(os.path.join(tmp, f), "rb").read() for f in files(tmp)}
    check(after == before, f"ulimit -f: the previous outputs are intact, no temporary file "
          f"({files(tmp)})")
    no_sanitizer_report(r.stderr, "ulimit -f")


def batch_results_limit(tmp):
    """The results file at the file-size limit: its append fails (exit 1), and the part of the
    line that fitted is taken back, so no partial line is left for the next line to join."""
    out = os.path.join(tmp, "out")
    os.makedirs(out)
    res = os.path.join(out, "results.jsonl")
    def line(i):  # other items' lines, kept as they are
        return json.dumps({"id": f"other/x{i:04d}", "path": "x.wav", "status": "ok",
                           "duration": 1.0, "language": "en", "seconds": 1.0, "rtf": 1.0,
                           "error": None}) + "\n"
    limit = 8192
    with open(res, "w") as f:
        while f.tell() + len(line(0)) <= limit - 40:  # 40 bytes left: a line's start fits
            f.write(line(f.tell()))
    before = open(res, "rb").read()
    r = subprocess.run([exe, "batch", "-m", model, "-t", "2", "-bs", "1", "-q", "--formats", "txt",
                        "-o", out, jfk], capture_output=True, text=True, timeout=600,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE,
                                                             (limit, limit)))
    after = open(res, "rb").read()
    check(r.returncode == 1 and "cannot append to the results file" in r.stderr and
          after == before, f"batch, results file at the size limit: exit 1, no partial line "
          f"({r.returncode}, {len(before)} -> {len(after)} bytes, {r.stderr.strip()[-150:]})")
    no_sanitizer_report(r.stderr, "batch, results file at the size limit")


def long_wav(path, repeats):
    """jfk.wav repeated: several 30 s windows."""
    with wave.open(jfk) as w:
        params, frames = w.getparams(), w.readframes(w.getnframes())
    with wave.open(path, "wb") as w:
        w.setparams(params)
        w.writeframes(frames * repeats)


def stopped_by(tmp, sig, code, name, decoding=("-bs", "1")):
    """decoding: beam search 5 makes each window take seconds on a CPU, a phase that the run
    itself checks for a stop only at its end: the process must still end within 2 s."""
    audio = os.path.join(tmp, "long.wav")
    long_wav(audio, 3)
    out = os.path.join(tmp, "out")
    p = subprocess.Popen([exe, "transcribe", "-m", model, "-t", "2", *decoding, "-otxt", "-osrt",
                          "-oj", "-of", out, audio], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()  # the first window's segments are out: mid-run
    t0 = time.monotonic()
    p.send_signal(sig)
    stdout, err = p.communicate(timeout=300)
    waited = time.monotonic() - t0
    lines = [l for l in err.splitlines() if l.strip()]
    check(first.startswith("[00:00:00.000") and p.returncode == code,
          f"{name} mid-run: exit {code} ({p.returncode})")
    check(waited < 2.0, f"{name}: ended {waited:.2f} s after the signal (under 2 s)")
    check(len(lines) == 1 and f"stopped by {name}" in lines[0] and "long.wav" in lines[0],
          f"{name}: one line saying so ({lines})")
    check(files(tmp) == ["long.wav"], f"{name}: no output and no temporary file ({files(tmp)})")
    no_sanitizer_report(err, name)
    os.unlink(audio)


def batch_one_sigterm(tmp):
    """`timeout` and schedulers send one SIGTERM: the batch ends soon, also in a long window (a
    window of beam search 5, best-of 5: about 7 s on one core of this machine, several seconds
    anywhere), as the abort is seen between decoder steps. (One window, jfk twice: the resumed
    run decodes it again: 82 s under ASan, 110 s with three times.)"""
    inputs = os.path.join(tmp, "in")
    os.mkdir(inputs)
    long_wav(os.path.join(inputs, "long.wav"), 2)
    out = os.path.join(tmp, "out")
    cmd = [exe, "batch", "-m", model, "-j", "1", "-t", "1", "-bs", "5", "-bo", "5",
           "--stop-timeout", "30", "-o", out, inputs]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)  # the model loaded, the first window decoding (also under a sanitizer)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=300)
    waited = time.monotonic() - t0
    check(p.returncode == 143, f"batch, one SIGTERM: exit 143 ({p.returncode})")
    # (under a sanitizer the signal may land in the encoder's pass, which is not cut: 1.3 s)
    check(waited < 4, f"batch, one SIGTERM: ended {waited:.2f} s after it, mid-window (under 4 s)")
    check("terminated" in err and "did not stop" not in err,
          f"batch, one SIGTERM: the items aborted, no watchdog ({err.strip().splitlines()[-3:]})")
    left = sorted(os.path.relpath(os.path.join(d, f), out)
                  for d, _, fs in os.walk(out) for f in fs)
    results = os.path.join(out, "results.jsonl")
    check(all(f.startswith(".batch/") or f == "results.jsonl" for f in left) and
          os.path.getsize(results) == 0 and not [f for f in left if "/w0." in f],
          f"batch, one SIGTERM: no output, no staged file, no results line ({left})")
    no_sanitizer_report(err, "batch, one SIGTERM")

    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = open(results).read().splitlines()
    check(r.returncode == 0 and len(lines) == 1 and '"ok"' in lines[0],
          f"batch resumed: exit 0, one ok line ({r.returncode}, {lines}, {r.stderr[-200:]})")
    text = open(os.path.join(out, "long.txt")).read() if os.path.exists(
        os.path.join(out, "long.txt")) else ""
    js = os.path.join(out, "long.json")
    check(text.count("fellow Americans") == 2 and os.path.exists(js) and
          json.load(open(js))["text"].count("fellow Americans") == 2,
          "batch resumed: long.txt and long.json whole (twice the speech)")
    no_sanitizer_report(r.stderr, "batch resumed")


def batch_read_ahead_sigterm(tmp):
    """--batch-size 2 --read-threads 2: SIGTERM while a group runs and the next one is being read
    (or was read) ends the run with 143; every item with outputs has its line and the next group,
    read but not started, has neither; the same command then completes every item once."""
    inputs = os.path.join(tmp, "in")
    os.mkdir(inputs)
    for i in range(8):
        shutil.copy(jfk, os.path.join(inputs, f"c{i}.wav"))
    out = os.path.join(tmp, "out")
    cmd = [exe, "batch", "-m", model, "-j", "1", "-t", "1", "-bs", "1", "-l", "en",
           "--batch-size", "2", "--read-threads", "2", "--formats", "txt", "-o", out, inputs]
    results = os.path.join(out, "results.jsonl")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120 and p.poll() is None and not (
            os.path.exists(results) and open(results).read().count("\n") >= 2):
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=300)
    lines = [json.loads(l) for l in open(results).read().splitlines()]
    done = sorted(l["id"] for l in lines)
    txts = sorted(f[:-4] for f in os.listdir(out) if f.endswith(".txt"))
    check(p.returncode == 143 and 2 <= len(done) < 8,
          f"batch, read ahead, SIGTERM: exit 143 after {len(done)} of 8 items ({p.returncode})")
    check(txts == done and all(l["status"] == "ok" for l in lines),
          f"batch, read ahead, SIGTERM: outputs exactly for the items with a line ({txts}, {done})")
    no_sanitizer_report(err, "batch, read ahead, SIGTERM")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = [json.loads(l) for l in open(results).read().splitlines()]
    ids = sorted(l["id"] for l in lines)
    check(r.returncode == 0 and ids == [f"c{i}" for i in range(8)] and
          all("fellow Americans" in open(os.path.join(out, i + ".txt")).read() for i in ids),
          f"batch, read ahead, resumed: every item once, whole ({r.returncode}, {ids})")
    no_sanitizer_report(r.stderr, "batch, read ahead, resumed")


for test in (batch_one_sigterm,
             batch_read_ahead_sigterm,
             file_size_limit,
             batch_results_limit,
             lambda t: stopped_by(t, signal.SIGTERM, 143, "SIGTERM"),
             lambda t: stopped_by(t, signal.SIGINT, 130, "SIGINT"),
             lambda t: stopped_by(t, signal.SIGTERM, 143, "SIGTERM", ("-bs", "5", "-bo", "5"))):
    tmp = tempfile.mkdtemp(prefix="wc_faults_")
    try:
        test(tmp)
    finally:
        shutil.rmtree(tmp)
print(f"{testlib.failures} failure(s)")
sys.exit(testlib.exit_status())
