#!/bin/sh
# setup.sh — builds whisper-c on a machine without the -dev packages (the lent GPU machine):
# unpacks .device/debs/*.deb (tools/device/fetch-debs.sh) into .device/prefix, points the
# carried pkgconf at that prefix only, writes .device/env.sh (the variables a run needs, to
# source before running anything built) and runs meson setup + ninja.
#
#   tools/device/setup.sh [BUILD_DIR [MESON_OPTION...]]     default: build-device
#
# -Dcuda=enabled (a build without the CUDA backend is no use there) and -Dwerror=false (a newer
# compiler's new warning must not cost a GPU session; the style gate is the CI build's) come
# before MESON_OPTIONs, which can override them. Runs here too, as a test of the same steps:
# pkg-config then sees only the prefix, so the build links against the unpacked libraries.
set -eu
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
P="$ROOT/.device/prefix"
BUILD=${1:-build-device}
[ $# -gt 0 ] && shift
ARCH=x86_64-linux-gnu
LIB="$P/usr/lib/$ARCH"

if ! ls .device/debs/*.deb >/dev/null 2>&1; then
    echo "setup.sh: no .deb files in .device/debs (run tools/device/fetch-debs.sh here and" \
        "carry .device/debs)" >&2
    exit 1
fi

# ---- unpack (again only when the debs changed) ----
STAMP="$P/.unpacked"
if [ ! -f "$STAMP" ] || [ -n "$(find .device/debs -name '*.deb' -newer "$STAMP")" ]; then
    rm -rf "$P"
    mkdir -p "$P"
    for f in .device/debs/*.deb; do
        if command -v dpkg-deb >/dev/null; then
            dpkg-deb -x "$f" "$P"
        else # not a Debian-based image: a .deb is an ar archive holding data.tar.xz
            ar p "$f" "$(ar t "$f" | grep '^data\.tar')" | tar -xJf - -C "$P"
        fi
    done
    # Static archives (76 MiB) are never linked: the build uses the shared libraries.
    find "$P" -name '*.a' -delete
    # Debian's .pc files hard-code /usr (prefix=, and libdir/includedir/-L/-I in some, e.g.
    # openblas, soxr); pkgconf's --define-prefix cannot infer a multiarch prefix, so rewrite.
    find "$P" -name '*.pc' | while read -r pc; do
        sed -i -E "s#(^[A-Za-z_]+=|-I|-L)/usr#\\1$P/usr#g" "$pc"
    done
    # libopenblas-dev installs its openblas.pc and libopenblas.so via update-alternatives,
    # which dpkg-deb -x does not run: link the pthread flavour the way the alternative would.
    ln -sf openblas-pthread/pkgconfig/openblas.pc "$LIB/pkgconfig/openblas.pc"
    touch "$STAMP"
fi

# ---- environment: written to a file so that later commands in the session can source it ----
CUDA_LIB=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    if [ -d "$d" ]; then CUDA_LIB="$CUDA_LIB:$d"; fi
done
cat >.device/env.sh <<ENV
# written by tools/device/setup.sh: the unpacked prefix, then CUDA's libraries (cuBLAS)
export PKG_CONFIG="$P/usr/bin/pkgconf"
export PKG_CONFIG_LIBDIR="$LIB/pkgconfig:$LIB/openblas-pthread/pkgconfig:$P/usr/share/pkgconfig"
export LD_LIBRARY_PATH="$LIB:$LIB/openblas-pthread:$P/lib/$ARCH$CUDA_LIB\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export LIBRARY_PATH="$LIB:$LIB/openblas-pthread\${LIBRARY_PATH:+:\$LIBRARY_PATH}"
export CPATH="$P/usr/include:$P/usr/include/$ARCH\${CPATH:+:\$CPATH}"
ENV
if [ -d .device/shared ]; then # tools/device/stage.sh unpack: the tests' ../shared
    echo "export WHISPERC_SHARED=\"$ROOT/.device/shared\"" >>.device/env.sh
    set -- "-Dshared_dir=$ROOT/.device/shared" "$@"
fi
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
# shellcheck disable=SC1091
. .device/env.sh

echo "setup.sh: pkgconf $("$PKG_CONFIG" --version), prefix $P"
for pc in sndfile soxr fftw3f openblas zlib libpcre2-8; do
    if ! "$PKG_CONFIG" --exists "$pc"; then
        "$PKG_CONFIG" --print-errors --exists "$pc" || true
        echo "setup.sh: $pc not found in the prefix" >&2
        exit 1
    fi
done

# ---- build ----
if [ -d "$BUILD/meson-info" ]; then
    meson setup --reconfigure "$BUILD" -Dcuda=enabled -Dwerror=false "$@"
else
    meson setup "$BUILD" -Dcuda=enabled -Dwerror=false "$@"
fi
ninja -C "$BUILD"
echo "setup.sh: built $BUILD; run '. .device/env.sh' before running what it built"
