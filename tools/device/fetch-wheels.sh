#!/bin/sh
# fetch-wheels.sh — downloads (here, with pip and PyPI) the Python wheels that the GPU machine
# lacks for tools/device/compare-torch.py: openai-whisper (PyPI has only its sdist: pip builds
# the pure-Python wheel here) and more-itertools, for CPython 3.12, into .whl/. The GPU machine
# has torch, transformers, tiktoken, numba, numpy, scipy, tqdm and triton already
# (/work/.library/device KINDS.md); this script checks the wheels' Requires-Dist against that.
#
#   tools/device/fetch-wheels.sh        (from the repository root; about 1 MiB)
#
# .whl/ must be ignored by git, in the checkout the device tool sends (the lead's): run there,
# once, `echo /.whl/ >> .git/info/exclude` (a worktree shares that file: do it in the main
# checkout only). Each device call that needs the wheels carries .whl and begins with
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#       --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit;
set -eu
cd "$(dirname "$0")/../.."
DEST=.whl
WHISPER=openai-whisper==20250625   # the version that wrote ../shared/golden
MORE=more-itertools==11.2.1
# What the GPU machine's python has (KINDS.md pip list), by normalised name.
PRESENT="numba numpy tiktoken torch tqdm triton"

mkdir -p "$DEST"
rm -f "$DEST"/*.whl
python3 -m pip wheel -q --no-deps -w "$DEST" "$WHISPER"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
    -d "$DEST" "$MORE"

missing=""
for w in "$DEST"/*.whl; do
    # Requires-Dist lines without an extra; the name is what precedes a version or marker.
    for dep in $(unzip -p "$w" '*.dist-info/METADATA' | grep '^Requires-Dist:' |
        grep -v 'extra ==' | sed -E 's/^Requires-Dist: *([A-Za-z0-9_.-]+).*/\1/' |
        tr 'A-Z_.' 'a-z--'); do
        case " $PRESENT more-itertools " in
        *" $dep "*) ;;
        *) missing="$missing $dep" ;;
        esac
    done
done
ls -l "$DEST"
if [ -n "$missing" ]; then
    echo "fetch-wheels.sh: not on the GPU machine and not fetched:$missing" >&2
    exit 1
fi
if ! git check-ignore -q "$DEST/x.whl"; then
    echo "fetch-wheels.sh: $DEST is not ignored by git here: run" \
        "'echo /$DEST/ >> .git/info/exclude' in the main checkout" >&2
fi
n=$(find "$DEST" -type f -name '*.whl' | wc -l)
echo "fetch-wheels.sh: $n wheels in $DEST, $(du -sh "$DEST" | cut -f1)"
