#!/usr/bin/env python3
"""test_kill.py — `whisper-c batch` killed with SIGKILL at 20 random moments, then resumed.

usage: test_kill.py WHISPER_C SHARED_DIR [N_KILLS [SEED]]

Over the 12 shortest ljspeech-dev clips (tiny.en, greedy, -j 2 -t 1): 20 runs are each killed
with SIGKILL after a random delay (model loading, decoding, writing, appending results all get
hit); after every kill the outputs present are whole and partial files exist only under
.batch/. A last run completes: every input has exactly one results line and one complete txt
and json, none duplicated or truncated, and no temporary file is left. The seed is printed, so a
failure can be replayed. Exits 77 (skip) when the shared model or audio is missing.
"""
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import testlib
from testlib import check


exe, shared = os.path.abspath(sys.argv[1]), testlib.shared_dir(sys.argv[2])
n_kills = int(sys.argv[3]) if len(sys.argv) > 3 else 20
seed = int(sys.argv[4]) if len(sys.argv) > 4 else int(time.time())
model = os.path.join(shared, "models", "ggml-tiny.en.bin")
clips = glob.glob(os.path.join(shared, "audio", "ljspeech-dev", "wavs", "*.flac"))
if not os.path.exists(model) or len(clips) < 12:
    print(f"SKIP: {model} or the ljspeech-dev clips missing (set WHISPERC_SHARED)")
    sys.exit(77)
clips = sorted(clips, key=os.path.getsize)[:12]
ids = sorted(os.path.basename(c).rsplit(".", 1)[0] for c in clips)
print(f"seed {seed} (replay: test_kill.py WHISPER_C SHARED {n_kills} {seed})")
rng = random.Random(seed)


def results(out):
    """Complete lines of results.jsonl; a partial last line (allowed after SIGKILL) is left out."""
    p = os.path.join(out, "results.jsonl")
    if not os.path.exists(p):
        return []
    return [json.loads(l) for l in open(p, "rb").read().decode().split("\n")[:-1] if l]


def files_under(out):
    found = []
    for root, _, names in os.walk(out):
        found += [os.path.relpath(os.path.join(root, n), out) for n in names]
    return found


def broken_outputs(out):
    """Outputs outside .batch/ that are not whole: json that does not parse or disagrees with
    its txt, or a txt without its json."""
    bad = []
    for f in files_under(out):
        if f.startswith(".batch/") or f == "results.jsonl" or f == ".lock":
            continue
        p = os.path.join(out, f)
        if f.endswith(".json"):
            try:
                d = json.load(open(p))
                t = p[:-5] + ".txt"
                if not os.path.exists(t) or " ".join(open(t).read().split()) != " ".join(
                        d["text"].split()):
                    bad.append(f)
            except (ValueError, KeyError):
                bad.append(f)
        elif not (f.endswith(".txt") and os.path.exists(p[:-4] + ".json")):
            bad.append(f)
    return bad


tmp = tempfile.mkdtemp(prefix="wc_test_kill_")
try:
    inputs = os.path.join(tmp, "in")
    out = os.path.join(tmp, "out")
    os.makedirs(inputs)
    for c in clips:
        os.symlink(c, os.path.join(inputs, os.path.basename(c)))
    cmd = [exe, "batch", "-m", model, "-j", "2", "-t", "1", "-bs", "1", "-o", out, inputs]
    t0 = time.time()
    done_before = []
    for k in range(n_kills):
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        delay = rng.uniform(0.05, 1.0 + 0.35 * k)  # later and later: past loading, into items
        time.sleep(delay)
        p.kill()
        p.wait()
        n = len(results(out))
        bad = broken_outputs(out)
        if bad or n < len(done_before):
            check(False, f"kill {k + 1} after {delay:.2f} s: whole outputs only ({bad[:3]}), "
                  f"results never shrink ({len(done_before)} -> {n})")
        done_before = results(out)
        if len(done_before) == len(ids):
            break
    print(f"        {k + 1} kills in {time.time() - t0:.0f} s, {len(done_before)} of {len(ids)} "
          "items finished meanwhile")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, f"resumed run: exit 0 ({r.stderr.strip()[-300:]})")
    check("Sanitizer" not in r.stderr and "runtime error" not in r.stderr,
          "resumed run: no sanitizer report")
    lines = results(out)
    got = sorted(l["id"] for l in lines)
    check(got == ids, f"one results line per input, none duplicated ({len(got)} lines, "
          f"{len(set(got))} ids, {len(ids)} inputs)")
    check(all(l["status"] == "ok" for l in lines), "every results line ok")
    want = sorted([f"{i}.txt" for i in ids] + [f"{i}.json" for i in ids] + ["results.jsonl"])
    have = sorted(f for f in files_under(out) if f != ".lock")
    check(have == want, f"exactly one txt and one json per input, no temporary file "
          f"(extra {sorted(set(have) - set(want))[:5]}, missing {sorted(set(want) - set(have))[:5]})")
    check(not broken_outputs(out), f"every output complete ({broken_outputs(out)[:3]})")
    print(f"        total {time.time() - t0:.0f} s")
finally:
    shutil.rmtree(tmp)
print(f"{testlib.failures} failure(s)")
sys.exit(testlib.exit_status())
