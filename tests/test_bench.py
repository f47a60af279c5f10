"""test_bench.py — whisper-c bench --synthetic's stage times on the CPU twin of the GPU timers.

Usage: test_bench.py WHISPER_C WRITE_SYNTH_MODEL

A random-weight model (tests/write_synth_model.c: tiny shapes, Whisper's context sizes) makes
the run take about a second and need no shared material. Checks that every stage reports host
and stream times that are finite and consistent (stream <= host: the CPU's marks sit inside the
host's interval), the per-step split, the real-time factor, the idle fraction in [0, 1] with
the busy and wall times it is computed from, and the encoder's batch sweep with its best batch.
The CUDA side prints the same lines (from events); docs/gpu-validation.md says what to look at.
"""

import math
import os
import re
import subprocess
import sys
import tempfile

import testlib
from testlib import check

NUM = r"(-?[0-9.]+|nan|-)"


def finite(*xs):
    return all(isinstance(x, float) and math.isfinite(x) for x in xs)


def bench(whisper_c, model, *args):
    r = subprocess.run([whisper_c, "bench", "--synthetic", "-m", model, "--device", "cpu",
                        "-t", "2", *args], capture_output=True, text=True, timeout=300)
    print(r.stdout, end="")
    return r


def stage(out, name):
    """(host min, host median, stream min) of a stage line, or None."""
    m = re.search(r"^  " + re.escape(name) + r" +" + NUM + r" +" + NUM + r" +" + NUM, out, re.M)
    return tuple(float(v) if v != "-" else None for v in m.groups()) if m else None


def main():
    whisper_c, writer = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="wc-bench-")
    model = os.path.join(tmp, "synth.bin")
    try:
        if not check(subprocess.run([writer, model]).returncode == 0, "synthetic model written"):
            return
        for bs in ("1", "2"):
            r = bench(whisper_c, model, "-bs", bs, "--tokens", "8", "--runs", "2",
                      "--batch-size", "3")
            out = r.stdout
            what = f"-bs {bs}"
            check(r.returncode == 0 and r.stderr == "", f"{what}: runs cleanly ({r.stderr!r})")
            check(re.search(r"^  device +cpu \(OpenBLAS \S+ kernels\)$", out, re.M) is not None,
                  f"{what}: device line names the BLAS kernels")
            for name in ("encoder", "cross K/V", "prompt", "decoder", "window"):
                t = stage(out, name)
                check(t is not None and finite(*t) and 0 <= t[2] <= t[0] + 0.5 and t[0] <= t[1],
                      f"{what}: {name}: host min <= median, 0 <= stream <= host ({t})")
            m = re.search(r"^  per step +host " + NUM + r" ms, stream " + NUM + r" ms \(forward "
                          + NUM + r" \+ pick " + NUM + r"\); host - stream " + NUM + " ms", out,
                          re.M)
            v = [float(x) for x in m.groups()] if m else []
            check(len(v) == 5 and finite(*v) and v[0] > 0 and 0 <= v[1] <= v[0] + 0.05
                  and abs(v[2] + v[3] - v[1]) < 0.01 and abs(v[0] - v[1] - v[4]) < 0.01,
                  f"{what}: per step host, stream = forward + pick, difference ({v})")
            m = re.search(r"^  RTF +" + NUM + r"  \(" + NUM + r"x real time", out, re.M)
            v = [float(x) for x in m.groups()] if m else []
            check(len(v) == 2 and finite(*v) and v[0] > 0 and abs(v[0] * v[1] - 1) < 0.01,
                  f"{what}: RTF and x real time ({v})")
            m = re.search(r"^  idle +" + NUM + r"  \(1 - busy / wall: busy " + NUM
                          + r" ms .*wall " + NUM + " ms", out, re.M | re.S)
            v = [float(x) for x in m.groups()] if m else []
            check(len(v) == 3 and finite(*v) and 0 <= v[0] <= 1 and 0 < v[1] <= v[2] + 0.5
                  and abs(max(0.0, 1 - v[1] / v[2]) - v[0]) < 0.002,
                  f"{what}: idle in [0, 1] = 1 - busy / wall ({v})")
            window = stage(out, "window")
            check(len(v) == 3 and window is not None and v[2] >= window[0] - 0.5,
                  f"{what}: wall covers the stages of the best window ({v}, {window})")
            m = re.search(r"^  batch step +host " + NUM + r" ms, stream " + NUM + r" ms", out,
                          re.M)
            v = [float(x) for x in m.groups()] if m else []
            check(len(v) == 2 and finite(*v) and v[0] > 0 and 0 <= v[1] <= v[0] + 0.05,
                  f"{what}: batch decoder step, host and stream ms ({v})")
            check(re.search(r"^  graphs +none on the cpu backend$", out, re.M) is not None,
                  f"{what}: no step graphs on the CPU")
            rows = [stage(out, b) for b in ("1 (alone)", "2", "3")]
            check(all(t is not None and finite(*t) and 0 <= t[2] <= t[0] + 0.5 for t in rows),
                  f"{what}: encoder at batch 1, 2, 3: host and stream ms per window ({rows})")
            m = re.search(r"^  best batch ([123]): " + NUM + " ms per window host, " + NUM
                          + r" stream \(" + NUM + "x batch 1\\)", out, re.M)
            check(m is not None and finite(*[float(x) for x in m.groups()[1:]])
                  and float(m.group(2)) == min(t[0] for t in rows),
                  f"{what}: the best batch is the fastest ({m and m.group(0)})")
        # no decoder steps: per step must not divide by zero
        r = bench(whisper_c, model, "-bs", "1", "--tokens", "0")
        check(r.returncode == 0 and "nan" not in r.stdout and "inf" not in r.stdout
              and "\nencoder, " not in r.stdout,
              "--tokens 0: finite numbers; no encoder sweep on the CPU without --batch-size")
    finally:
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)


main()
print(f"{testlib.failures} failure(s)")
sys.exit(testlib.exit_status())
