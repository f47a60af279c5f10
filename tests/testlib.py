"""testlib.py — what the Python tests share: the check counter and skips for missing material.

The tests run as scripts (python3 tests/test_x.py), so this directory is on sys.path.
"""

import os
import sys

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
