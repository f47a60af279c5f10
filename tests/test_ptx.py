#!/usr/bin/env python3
"""test_ptx.py — every kernel the CUDA backend generates, for every official model size, must
assemble with ptxas for sm_80 and sm_90 with no errors, no warnings and no register spills, and
wait for the kernel before exactly once on sm_90 (dependent launch), never on sm_80.

usage: test_ptx.py WHISPER_C      (exit 77 when ptxas is not installed)
"""
import os
import shutil
import subprocess
import sys
import tempfile

SIZES = ["tiny.en", "tiny", "base.en", "base", "small.en", "small", "medium.en", "medium",
         "large-v1", "large-v2", "large-v3", "large-v3-turbo"]


def find_ptxas():
    for d in [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]:
        p = os.path.join(d, "bin", "ptxas")
        if d and os.access(p, os.X_OK):
            return p
    return shutil.which("ptxas")


def main():
    exe = sys.argv[1]
    ptxas = find_ptxas()
    if not ptxas:
        print("SKIP: ptxas not found (install the CUDA toolkit or set CUDA_HOME)")
        return 77
    failures, n = 0, 0
    tmp = tempfile.mkdtemp(prefix="wc_test_ptx_")
    try:
        for size in SIZES:
            for sm in (80, 90):
                out = os.path.join(tmp, "%s-sm%d" % (size, sm))
                r = subprocess.run([exe, "ptx", "--size", size, "--sm", str(sm), "--out", out],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    print("NOT OK  whisper-c ptx --size %s --sm %d: %s" % (size, sm, r.stderr.strip()))
                    failures += 1
                    continue
                for f in sorted(os.listdir(out)):
                    # sm_90: each kernel waits once for the kernel before (dependent launch,
                    # src/kernels/ptx.h ptx_grid_dep_wait), as its first instruction but in
                    # gemv_f16 and gemv_tc (which load weights first: test_ptx_emulated.py
                    # checks what);
                    # sm_80 has no such instruction
                    text = open(os.path.join(out, f)).read()
                    waits = text.count("griddepcontrol.wait")
                    body = text[text.index("{") + 1:].splitlines()
                    first = next(l.strip() for l in body if l.strip() and not l.strip().startswith(".reg"))
                    if waits != (1 if sm >= 90 else 0) or (
                            sm >= 90 and not f.startswith("gemv_") and first != "griddepcontrol.wait;"):
                        failures += 1
                        print("NOT OK  %s sm_%d %s: griddepcontrol.wait %d times, first %r"
                              % (size, sm, f, waits, first))
                    a = subprocess.run([ptxas, "-arch=sm_%d" % sm, "-v", "-Werror",
                                        os.path.join(out, f), "-o", os.devnull],
                                       capture_output=True, text=True)
                    log = a.stdout + a.stderr
                    spills = [l for l in log.splitlines() if "spill" in l and " 0 bytes spill stores, 0 bytes spill loads" not in l]
                    ok = a.returncode == 0 and not spills
                    n += 1
                    if not ok:
                        failures += 1
                        print("NOT OK  %s sm_%d %s:\n%s" % (size, sm, f, log))
        print("%d kernels assembled, %d failures" % (n, failures))
    finally:
        shutil.rmtree(tmp)
    return 1 if failures or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
