#!/bin/sh
# fetch-debs.sh — downloads (here, on a Debian/Ubuntu machine with apt) the .deb files that a
# bare GPU machine lacks to build whisper-c: the -dev packages of its dependencies, their
# runtime libraries and pkgconf, into .device/debs/ (ignored by git; the device tool carries it).
# tools/device/setup.sh unpacks them there into a private prefix; nothing is installed.
#
#   tools/device/fetch-debs.sh        (from the repository root; about 20 MiB)
set -eu
cd "$(dirname "$0")/../.."
DEST=.device/debs

# Runtime libraries first, then headers/.pc files. Left out on purpose: libc6, libgcc-s1,
# libstdc++6 (any machine with a C compiler has them); libfftw3-double3/-long3/-quad3 and
# libfftw3-bin (libfftw3-dev depends on them, whisper-c uses single precision only);
# libout123-0/libsyn123-0 (libmpg123-dev's other .pc files, unused).
PACKAGES="
libsndfile1 libflac12 libogg0 libvorbis0a libvorbisenc2 libvorbisfile3 libopus0 libmpg123-0
libmp3lame0
libsoxr0 libsoxr-lsr0 libgomp1
libfftw3-single3
libopenblas0 libopenblas0-pthread libgfortran5 libquadmath0
libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
zlib1g
libsndfile1-dev libflac-dev libogg-dev libvorbis-dev libopus-dev libmpg123-dev
libsoxr-dev libfftw3-dev libopenblas-dev libopenblas-pthread-dev libpcre2-dev zlib1g-dev
pkgconf pkgconf-bin libpkgconf3
"

mkdir -p "$DEST"
rm -f "$DEST"/*.deb
# apt-get download writes into the current directory; word splitting of $PACKAGES is wanted.
# shellcheck disable=SC2086
(cd "$DEST" && apt-get download $PACKAGES)
n=$(find "$DEST" -name '*.deb' | wc -l)
echo "$DEST: $n packages, $(du -sh "$DEST" | cut -f1)"
