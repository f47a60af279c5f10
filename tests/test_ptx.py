#!/usr/bin/env python3
"""test_ptx.py — every kernel the CUDA backend generates, for every official model size, must
assemble with ptxas for sm_80 and sm_90 with no errors, no warnings and no register spills, and
wait for the kernel before exactly once on sm_90 (dependent launch), never on sm_80.

usage: test_ptx.py WHISPER_C [SANITIZER]   (exit 77 when ptxas is not installed)

Under a sanitizer (SANITIZER not "none") the kernels are generated and checked, not assembled.
"""
import concurrent.futures
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


def check_waits(size, sm, name, text):
    """sm_90: each kernel waits once for the kernel before (dependent launch,
    src/kernels/ptx.h ptx_grid_dep_wait), as its first instruction but in gemv_f16 and gemv_tc
    (which load weights first) and a step's attentions attn_rows[_tc] and attn_gather (their
    tables and K/V first; test_ptx_emulated.py checks what they read before it); sm_80 has no
    such instruction."""
    waits = text.count("griddepcontrol.wait")
    body = text[text.index("{") + 1:].splitlines()
    first = next(l.strip() for l in body if l.strip() and not l.strip().startswith(".reg"))
    if waits != (1 if sm >= 90 else 0) or (
            sm >= 90 and not name.startswith(("gemv_", "attn_rows_", "attn_gather_"))
            and first != "griddepcontrol.wait;"):
        print("NOT OK  %s sm_%d %s: griddepcontrol.wait %d times, first %r"
              % (size, sm, name, waits, first))
        return False
    return True


def assemble(ptxas, size, sm, path):
    a = subprocess.run([ptxas, "-arch=sm_%d" % sm, "-v", "-Werror", path, "-o", os.devnull],
                       capture_output=True, text=True)
    log = a.stdout + a.stderr
    spills = [l for l in log.splitlines()
              if "spill" in l and " 0 bytes spill stores, 0 bytes spill loads" not in l]
    if a.returncode == 0 and not spills:
        return True
    print("NOT OK  %s sm_%d %s:\n%s" % (size, sm, os.path.basename(path), log))
    return False


def main():
    exe = sys.argv[1]
    # under a sanitizer (CI's second build) the generators are what runs instrumented: ptxas
    # sees the same text as in the release build's run of this test, so it is left to that one
    sanitized = len(sys.argv) > 2 and sys.argv[2] not in ("", "none")
    ptxas = find_ptxas()
    if not ptxas and not sanitized:
        print("SKIP: ptxas not found (install the CUDA toolkit or set CUDA_HOME)")
        return 77
    failures, jobs = 0, []
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
                    path = os.path.join(out, f)
                    failures += not check_waits(size, sm, f, open(path).read())
                    jobs.append((size, sm, path))
        if sanitized:
            print("%d kernels generated under %s (ptxas: the release build's run), %d failures"
                  % (len(jobs), sys.argv[2], failures))
        else:
            # ptxas is single-threaded: one per core
            with concurrent.futures.ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
                oks = list(pool.map(lambda j: assemble(ptxas, *j), jobs))
            failures += oks.count(False)
            print("%d kernels assembled, %d failures" % (len(jobs), failures))
    finally:
        shutil.rmtree(tmp)
    return 1 if failures or not jobs else 0


if __name__ == "__main__":
    sys.exit(main())
