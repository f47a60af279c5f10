#!/usr/bin/env python3
"""test_sass.py — a budget of SASS instructions for the hot kernels (tools/sass-stats, no GPU):
the encoder's attention, per warp and 64-key tile of its main loop, must issue its 64 HMMA
among at most a fixed number of instructions, with no spill. It guards the issue slots a
change to a generator costs where no GPU can time it (on 2026-11-28: 407 for the fp16 form
with cp.async staging and ex2.approx.ftz, 509 before .ftz).

usage: test_sass.py WHISPER_C TOOLS_DIR CACHE_DIR [SANITIZER]
cuobjdump and nvdisasm come from PyPI (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm), fetched
once into CACHE_DIR; exit 77 without ptxas, offline, or under a sanitizer (the generators run
instrumented in test_ptx.py).
"""
import os
import re
import shutil
import stat
import subprocess
import sys

import testlib
from testlib import check

WHEELS = ("nvidia-cuda-cuobjdump==13.2.51", "nvidia-cuda-nvdisasm==13.2.51")
# kernel -> (instructions of the main loop at most, HMMA in it), sm_90, base's shapes
BUDGET = {"attn_tc_h8_d64_kvh_oh": (420, 64), "attn_tc_h8_d64_kvh": (420, 64),
          "attn_tc_h8_d64": (660, 64)}

whisper_c, tools_dir, cache_dir = sys.argv[1:4]
if len(sys.argv) > 4 and sys.argv[4] not in ("", "none"):
    print("under %s: skipped" % sys.argv[4])
    sys.exit(77)
if not (os.access("/usr/local/cuda/bin/ptxas", os.X_OK) or shutil.which("ptxas")):
    print("no ptxas: skipped")
    sys.exit(77)
bins = []
for pkg in WHEELS:
    name = pkg.split("==")[0]
    tool = name.split("-")[-1]
    root = testlib.fetch_wheel(cache_dir, pkg, name, os.path.join("nvidia", "cu13", "bin", tool))
    if not root:
        print("%s not fetched: skipped" % pkg)
        sys.exit(77)
    path = os.path.join(root, "nvidia", "cu13", "bin", tool)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)  # zip extraction drops the bit
    bins.append(os.path.dirname(path))
env = dict(os.environ, PATH=os.pathsep.join(bins + ["/usr/local/cuda/bin", os.environ["PATH"]]))
r = subprocess.run([sys.executable, os.path.join(tools_dir, "sass-stats"), "--whisper-c",
                    whisper_c, "--size", "base", "--sm", "90"] + ["^%s$" % k for k in BUDGET],
                   capture_output=True, text=True, env=env, timeout=300)
print(r.stdout, r.stderr, sep="")
check(r.returncode == 0, "sass-stats ran (exit %d)" % r.returncode)
rows = {l.split()[0]: l for l in r.stdout.splitlines()[1:] if l.strip()}
for k, (most, hmma) in BUDGET.items():
    m = re.match(r"\S+\s+(\d+)\s+(\d+)\s+\d+\s+[\d ]+/ (\d+) (\d+)", rows.get(k, ""))
    check(m and m.group(2) == "0" and int(m.group(3)) <= most and int(m.group(4)) == hmma,
          "%s: no spill, its main loop %s instructions (at most %d) with %s HMMA (%d)"
          % (k, m.group(3) if m else "?", most, m.group(4) if m else "?", hmma))
sys.exit(testlib.exit_status())
