#!/usr/bin/env python3
"""test_batch_jobs.py — `whisper-c batch -j 2 -t 2` on four short clips: two workers, each with
its own state and a CPU pool of two threads, share one model. Every item ok with a text, and no
sanitizer report: .ci/run runs it in the ThreadSanitizer build, where it is the race test of
the batch tool (work queue, results file, progress) and of the CPU pool. Then the same with
--batch-size 2 --read-threads 2 (each worker groups through whisperc_full_batch, the next
group read ahead on two threads; under TSan in CI): the same texts. Last, a run stopped by
SIGTERM once its first line is written (the handler's stop level is read by both workers and
the supervisor): exit 143, no sanitizer report, and a rerun completes it.

usage: test_batch_jobs.py WHISPER_C SHARED_DIR
Exits 77 (skip) when the shared model or audio is missing.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import testlib

exe, shared = sys.argv[1], testlib.shared_dir(sys.argv[2])
model = os.path.join(shared, "models", "ggml-tiny.en.bin")
clips = [os.path.join(shared, "audio", "ljspeech-dev", "wavs", f"LJ001-{i:04d}.flac")
         for i in (2, 8, 11, 13)]  # two items a worker (two groups of 2 with --batch-size 2)
testlib.skip_unless_exist([model, *clips])

texts = []
with tempfile.TemporaryDirectory() as tmp:
    for extra in ([], ["--batch-size", "2", "--read-threads", "2"]):
        out = os.path.join(tmp, "out" + str(len(extra)))
        r = subprocess.run([exe, "batch", "-m", model, "-j", "2", "-t", "2", "-bs", "1", *extra,
                            "-o", out, *clips], capture_output=True, text=True, timeout=900)
        lines = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"))] \
            if os.path.exists(os.path.join(out, "results.jsonl")) else []
        ok = [l for l in lines if l["status"] == "ok" and os.path.exists(
            os.path.join(out, l["id"] + ".txt")) and open(os.path.join(out, l["id"] + ".txt")).read().strip()]
        texts.append({l["id"]: open(os.path.join(out, l["id"] + ".txt")).read() for l in ok})
        report = "Sanitizer" in r.stderr or "runtime error" in r.stderr
        print(f"batch -j 2 -t 2 {' '.join(extra)}: exit {r.returncode}, {len(ok)}/{len(clips)} "
              f"items ok with a text, {'a' if report else 'no'} sanitizer report")
        if r.returncode != 0 or len(ok) != len(clips) or len(lines) != len(clips) or report:
            print(r.stderr[-8000:])
            sys.exit(1)
if texts[0] != texts[1]:
    print("--batch-size 2: texts differ from the run without it")
    sys.exit(1)

# SIGTERM while both workers run: the stop level is written by the handler (on whichever thread
# the signal lands) and read by the workers and the supervisor.
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "term")
    res = os.path.join(out, "results.jsonl")
    # --stop-timeout 300: under ThreadSanitizer on a loaded machine the running windows may take
    # longer than the default to notice the abort, and the timeout's immediate exit (_exit with
    # the workers still running) is then reported as a thread leak: this test is about the
    # graceful stop
    cmd = [exe, "batch", "-m", model, "-j", "2", "-t", "2", "-bs", "1", "--batch-size", "2",
           "--read-threads", "2", "--stop-timeout", "300", "-o", out, *clips]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 600
    while time.time() < deadline and p.poll() is None and not (
            os.path.exists(res) and open(res).read().count("\n") >= 1):
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=600)
    report = "Sanitizer" in err or "runtime error" in err
    # The run may have ended before the signal (a fast machine): then exit 0.
    print(f"SIGTERM after the first line: exit {p.returncode}, "
          f"{'a' if report else 'no'} sanitizer report")
    if p.returncode not in (143, 0) or report:
        print(err[-8000:])
        sys.exit(1)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    lines = [json.loads(l) for l in open(res)]
    report = "Sanitizer" in r.stderr or "runtime error" in r.stderr
    print(f"rerun: exit {r.returncode}, {len(lines)}/{len(clips)} lines")
    if r.returncode != 0 or report or sorted(l["id"] for l in lines) != sorted(texts[0]):
        print(r.stderr[-8000:])
        sys.exit(1)
