#!/usr/bin/env python3
"""test_silero_vad.py — Silero VAD (params.vad_model_path, `-vm FILE`).

usage: test_silero_vad.py TOOLS_DIR SILERO_PROBS RUN_TRANSCRIBE SHARED_DIR CACHE_DIR

Offline: a file of seeded random weights (written by tools/convert-silero-vad's writer) gives,
through whisper-c (SILERO_PROBS), the probabilities of the network as written out in numpy below
(window by window, float64) within 1e-5 on jfk.wav, the same bits on 1, 2 (two rounds) and 3
threads; the converter refuses other input in one line; a file not of this kind is refused in
one line.

With the silero-vad wheel (PyPI, fetched once into CACHE_DIR; skipped offline): the converter
writes whisper.cpp's layout (header, 15 tensors in its order, the size of whisper.cpp's
ggml-silero-v5.1.2.bin); whisper-c's probabilities on two dev clips equal Silero's own
(tests/data/silero_probs.json, onnxruntime on the same f16-rounded weights:
tools/gen-silero-golden.py) within 1e-5; then tests/test_vad.py end to end with that model.
"""
import importlib.machinery
import importlib.util
import json
import os
import struct
import subprocess
import sys
import tempfile
import wave

import numpy as np

import testlib
from testlib import check

PACKAGE = "silero-vad==5.1.2"
WHEEL = "silero_vad-5.1.2-py3-none-any.whl"
FILE_BYTES = 885098  # whisper.cpp's ggml-silero-v5.1.2.bin
TOL = 1e-5


def tensor_names(path):
    """The tensor names of a ggml VAD file, in order (header as tools/convert-silero-vad's)."""
    with open(path, "rb") as f:
        data = f.read()
    (n_type,) = struct.unpack_from("<i", data, 4)
    at = 8 + n_type + 4 * (3 + 3 + 4 * 3 + 4)
    names = []
    while at < len(data):
        n_dims, n_name, ttype = struct.unpack_from("<3i", data, at)
        ne = struct.unpack_from(f"<{n_dims}i", data, at + 12)
        at += 12 + 4 * n_dims
        names.append(data[at:at + n_name].decode())
        at += n_name
        count = 1
        for d in ne:
            count *= d
        at += count * (2 if ttype == 1 else 4)
    return names


def probs(tool, model, files, threads=1):
    r = subprocess.run([tool, "-t", str(threads), model, *files], capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        sys.exit(f"silero_probs failed: {r.stdout}{r.stderr}")
    out, cur = {}, None
    for line in r.stdout.splitlines():
        if line.startswith("# "):
            cur = line[2:].rsplit(" ", 1)[0]
            out[cur] = []
        else:
            out[cur].append(float(line))
    return out


def load_converter(tools):
    loader = importlib.machinery.SourceFileLoader("convert_silero_vad",
                                                  os.path.join(tools, "convert-silero-vad"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def random_weights(conv, seed=7):
    """Every tensor of the converter's table, N(0, s^2), s chosen so that the probabilities on
    speech vary (about 0.4 to 0.93) rather than sit at 0.5 or saturate."""
    rng = np.random.default_rng(seed)
    w = {}
    for name, shape, _ in conv.TENSORS:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 128
        gain = 2.0 if "encoder" in name or "rnn" in name else 4.0
        scale = 1.0 if name.startswith("stft") else gain / np.sqrt(fan_in)
        w[name] = (rng.standard_normal(shape) * scale).astype(np.float32)
    return w


def reference(conv, w, pcm):
    """Silero's network, window by window in float64, from the weights as the file holds them."""
    def stored(name):
        t = next(t for n, _, t in conv.TENSORS if n == name)
        a = w[name].astype(np.float16) if t == "f16" else w[name]
        return a.astype(np.float64)
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))
    basis = stored("stft.forward_basis_buffer")[:, 0, :]
    n = -(-len(pcm) // 512)
    x = np.zeros(64 + n * 512)
    x[64:64 + len(pcm)] = pcm
    h, c, out = np.zeros(128), np.zeros(128), []
    for i in range(n):
        seg = x[i * 512:i * 512 + 576]
        seg = np.concatenate([seg, seg[574:510:-1]])  # reflect about the last sample
        spec = np.stack([seg[f * 128:f * 128 + 256] for f in range(4)]) @ basis.T
        a = np.sqrt(spec[:, :129] ** 2 + spec[:, 129:] ** 2).T  # (129 bins, 4 frames)
        for layer, stride in enumerate((1, 2, 2, 1)):
            k = stored(f"encoder.{layer}.reparam_conv.weight")
            b = stored(f"encoder.{layer}.reparam_conv.bias")
            p = np.pad(a, ((0, 0), (1, 1)))
            cols = [np.einsum("oik,ik->o", k, p[:, t * stride:t * stride + 3])
                    for t in range((a.shape[1] - 1) // stride + 1)]
            a = np.maximum(np.stack(cols, 1) + b[:, None], 0.0)
        g = (stored("decoder.rnn.weight_ih") @ a[:, 0] + stored("decoder.rnn.bias_ih")
             + stored("decoder.rnn.weight_hh") @ h + stored("decoder.rnn.bias_hh"))
        gi, gf, gg, go = np.split(g, 4)
        c = sig(gf) * c + sig(gi) * np.tanh(gg)
        h = sig(go) * np.tanh(c)
        out.append(sig(stored("decoder.decoder.2.weight") @ np.maximum(h, 0.0)
                       + stored("decoder.decoder.2.bias")))
    return out


def read_wav16(path):
    with wave.open(path) as f:
        return np.frombuffer(f.readframes(f.getnframes()), "<i2") / 32768.0


def part_offline(tools, silero_probs, shared, tmp):
    conv = load_converter(tools)
    w = random_weights(conv)
    model = os.path.join(tmp, "random-silero.bin")
    conv.write(model, w, (5, 1, 2), "random")
    jfk = os.path.join(shared, "audio", "jfk", "jfk.wav")
    want = reference(conv, w, read_wav16(jfk))
    got = {t: probs(silero_probs, model, [jfk], threads=t)[jfk] for t in (1, 2, 3)}
    worst = max((abs(a - b) for a, b in zip(want, got[1])), default=1.0)
    spread = float(np.std(want))
    check(len(got[1]) == len(want) and worst <= TOL and spread > 0.05,
          f"random weights: {len(want)} probabilities = the numpy network's within {TOL} "
          f"(max diff {worst:.2g}; their spread {spread:.2g})")
    check(got[1] == got[2] == got[3], "1, 2 (two rounds) and 3 threads: the same bits")

    # the converter on something else: one line naming it, no output left
    r = subprocess.run([sys.executable, os.path.join(tools, "convert-silero-vad"), jfk,
                        os.path.join(tmp, "x.bin"), "--version", "5.1.2"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and r.stderr.count("\n") == 1 and jfk in r.stderr
          and not os.path.exists(os.path.join(tmp, "x.bin"))
          and not os.path.exists(os.path.join(tmp, "x.bin.part")),
          f"convert-silero-vad on a WAV file: one line ({r.stderr.strip()!r})")

    # not a VAD file: one line, the file named
    whisper = os.path.join(tmp, "not-vad.bin")
    with open(whisper, "wb") as f:
        f.write(struct.pack("<Ii", 0x67676D6C, 2000) + b"\0" * 64)
    r = subprocess.run([silero_probs, whisper, jfk], capture_output=True, text=True)
    check(r.returncode == 1 and r.stdout.count("\n") == 1 and whisper in r.stdout,
          f"a non-VAD file refused in one line ({r.stdout.strip()!r})")


def main():
    tools, silero_probs, runner, shared, cache = sys.argv[1:6]
    shared = testlib.shared_dir(shared)
    testlib.skip_unless_exist([os.path.join(shared, "audio", "jfk", "jfk.wav")])
    here = os.path.dirname(os.path.realpath(__file__))
    with tempfile.TemporaryDirectory(prefix="wc_test_silero_") as tmp:
        part_offline(tools, silero_probs, shared, tmp)
        os.makedirs(cache, exist_ok=True)
        root = testlib.fetch_wheel(cache, PACKAGE, "silero-vad",
                                   os.path.join("silero_vad", "data", "silero_vad.onnx"))
        wheel = os.path.join(cache, "download-silero-vad", WHEEL)
        if not root or not os.path.exists(wheel):
            print(f"SKIP (the rest): {PACKAGE} cannot be fetched from PyPI")
            return testlib.exit_status()
        with open(os.path.join(here, "data", "silero_probs.json")) as f:
            golden = json.load(f)
        part_wheel(tools, silero_probs, runner, shared, tmp, here, wheel, golden)
    return testlib.exit_status()


def part_wheel(tools, silero_probs, runner, shared, tmp, here, wheel, golden):
    model = os.path.join(tmp, "ggml-silero-v5.1.2.bin")
    r = subprocess.run([sys.executable, os.path.join(tools, "convert-silero-vad"), wheel, model],
                       capture_output=True, text=True, timeout=120)
    if not check(r.returncode == 0, f"convert-silero-vad ({r.stderr.strip()[-200:]})"):
        return
    check(os.path.getsize(model) == FILE_BYTES,
          f"file size {os.path.getsize(model)} = whisper.cpp's {FILE_BYTES}")
    names = tensor_names(model)
    want = [f"_model.encoder.{i}.reparam_conv.{p}" for i in range(4) for p in ("weight", "bias")]
    want += [f"_model.decoder.rnn.{p}" for p in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    want += ["_model.decoder.decoder.2.weight", "_model.decoder.decoder.2.bias",
             "_model.stft.forward_basis_buffer"]
    check(names == want, f"whisper.cpp's tensors in its order ({len(names)} tensors)")

    clips = list(golden["clips"])
    paths = [os.path.join(shared, c) for c in clips]
    got = probs(silero_probs, model, paths)
    for clip, path in zip(clips, paths):
        ref, mine = golden["clips"][clip]["ggml"], got.get(path, [])
        worst = max((abs(a - b) for a, b in zip(ref, mine)), default=1.0)
        check(len(ref) == len(mine) and worst <= TOL,
              f"{clip}: {len(mine)} probabilities = Silero's (onnxruntime) within {TOL} "
              f"(max diff {worst:.2g})")
        orig = golden["clips"][clip]["onnx"]
        drift = max((abs(a - b) for a, b in zip(orig, mine)), default=1.0)
        check(drift < 0.01, f"{clip}: within 0.01 of the f32 model's ({drift:.2g}: the file's "
              "f16 weights)")

    e2e = subprocess.run([sys.executable, os.path.join(here, "test_vad.py"), runner, shared,
                          os.path.join(tools, "vad_testfile.py"), model], timeout=840)
    check(e2e.returncode in (0, 77), "test_vad.py with the Silero model")


if __name__ == "__main__":
    sys.exit(main())
