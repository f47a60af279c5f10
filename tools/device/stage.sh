#!/bin/bash
# stage.sh — moves what a GPU check needs beyond the git tree to the lent machine: the .debs of
# tools/device/fetch-debs.sh, and the shared models, audio, golden and reference files (tests
# read them through WHISPERC_SHARED / -Dshared_dir). The device tool carries at most 64 MiB per
# call, so this packs one tar and splits it into parts of PART_MIB (default 58) MiB, one part
# carried per call; a warm machine keeps the parts between calls, and `unpack` joins them,
# checks the SHA-256 of the whole and of each model, and extracts.
#
#   here:       tools/device/stage.sh pack [MODEL...]   (default: tiny.en base; from ../shared or
#                                                         $WHISPERC_SHARED) -> .device/xfer/
#   on device:  tools/device/stage.sh unpack            -> .device/debs, .device/shared
set -euo pipefail
cd "$(dirname "$0")/../.."
XFER=.device/xfer

pack() {
    SHARED=${WHISPERC_SHARED:-../shared}
    [ -d "$SHARED/models" ] || { echo "stage.sh: $SHARED/models not found" >&2; exit 1; }
    SHARED=$(cd "$SHARED" && pwd) # tar's -C is relative to the previous one
    ls .device/debs/*.deb >/dev/null 2>&1 || tools/device/fetch-debs.sh
    [ $# -gt 0 ] || set -- tiny.en base
    files="audio golden reference models/SHA256SUMS"
    for m in "$@"; do
        [ -f "$SHARED/models/ggml-$m.bin" ] || { echo "stage.sh: no $SHARED/models/ggml-$m.bin" >&2; exit 1; }
        files="$files models/ggml-$m.bin"
    done
    rm -rf "$XFER" .device/vocab
    mkdir -p "$XFER" .device/vocab/models
    # Without base itself, its header and vocabulary alone (models/vocab-base.bin, 0.8 MiB: a
    # ggml file with no tensors), so that make-random-model can build multilingual shapes.
    case " $* " in
    *" base "*) ;;
    *) python3 - "$SHARED/models/ggml-base.bin" .device/vocab/models/vocab-base.bin <<'PY' ;;
import sys
sys.path.insert(0, "tools")
from whisperc_ggml import GgmlFile
n = GgmlFile(sys.argv[1]).tensors_offset
with open(sys.argv[1], "rb") as f, open(sys.argv[2], "wb") as out:
    out.write(f.read(n))
PY
    esac
    vocab=$(cd .device/vocab && find models -type f)
    # One stream: .device/debs as debs/, the shared files under shared/; parts of PART_MIB MiB.
    # $vocab and $files are lists of relative paths without spaces: splitting them is intended.
    # shellcheck disable=SC2086
    tar -cf - -C .device debs -C "$PWD/.device/vocab" $vocab \
        -C "$SHARED" --transform 's,^\(audio\|golden\|reference\|models\),shared/\1,' $files |
        split -b "${PART_MIB:-58}M" -d -a 2 - "$XFER/part."
    cat "$XFER"/part.* | sha256sum | cut -d' ' -f1 >"$XFER/tar.sha256"
    n=$(find "$XFER" -name 'part.*' | wc -l)
    echo "stage.sh: $n parts in $XFER ($(du -sh "$XFER" | cut -f1)); carry one per call, in order:"
    i=0
    for p in "$XFER"/part.*; do
        extra=""
        [ $i -eq 0 ] && extra=" + $XFER/tar.sha256"
        echo "  call $((i + 1)): carry $p$extra"
        i=$((i + 1))
    done
}

unpack() {
    [ -f "$XFER/tar.sha256" ] || { echo "stage.sh: $XFER/tar.sha256 missing (carried with part.00)" >&2; exit 1; }
    want=$(cat "$XFER/tar.sha256")
    got=$(cat "$XFER"/part.* | sha256sum | cut -d' ' -f1)
    if [ "$want" != "$got" ]; then
        echo "stage.sh: the joined parts do not match (sha256 $got, want $want): a part is" \
            "missing or the machine was not warm between calls; parts here:" >&2
        ls -l "$XFER" >&2
        exit 1
    fi
    rm -rf .device/debs .device/shared
    cat "$XFER"/part.* | tar -xf - -C .device
    (cd .device/shared/models && sha256sum --ignore-missing -c SHA256SUMS)
    echo "stage.sh: unpacked .device/debs ($(find .device/debs -name '*.deb' | wc -l) debs) and" \
        ".device/shared ($(du -sh .device/shared | cut -f1))"
}

case "${1:-}" in
pack) shift; pack "$@" ;;
unpack) unpack ;;
*) echo "usage: tools/device/stage.sh pack [MODEL...] | unpack" >&2; exit 2 ;;
esac
