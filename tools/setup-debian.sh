#!/bin/sh
# Installs the Debian/Ubuntu packages whisper-c needs to build and run its tests.
set -eu
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
    build-essential pkg-config meson ninja-build python3 \
    libsndfile1-dev libsoxr-dev libfftw3-dev libopenblas-dev libpcre2-dev zlib1g-dev
