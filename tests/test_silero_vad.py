#!/usr/bin/env python3
"""test_silero_vad.py — Silero VAD (params.vad_model_path, `-vm FILE`) from the silero-vad
package's wheel, fetched from PyPI once into CACHE_DIR (exit 77 when it cannot be had).

usage: test_silero_vad.py TOOLS_DIR SILERO_PROBS RUN_TRANSCRIBE SHARED_DIR CACHE_DIR

Checks: tools/convert-silero-vad writes whisper.cpp's layout (header, 15 tensors in its order,
the size of whisper.cpp's ggml-silero-v5.1.2.bin) and refuses other input in one line;
whisper-c's probabilities on two dev clips equal Silero's own (tests/data/silero_probs.json,
onnxruntime on the same f16-rounded weights: tools/gen-silero-golden.py) within 1e-5; a file not
of this kind is refused in one line; 3 threads give the same bits as 1; then tests/test_vad.py
end to end with the converted model.
"""
import glob
import json
import os
import struct
import subprocess
import sys
import tempfile

import testlib
from testlib import check

PACKAGE = "silero-vad==5.1.2"
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
            cur = line.split()[1]
            out[cur] = []
        else:
            out[cur].append(float(line))
    return out


def main():
    tools, silero_probs, runner, shared, cache = sys.argv[1:6]
    shared = testlib.shared_dir(shared)
    testlib.skip_unless_exist([os.path.join(shared, "audio", "jfk", "jfk.wav")])
    os.makedirs(cache, exist_ok=True)
    root = testlib.fetch_wheel(cache, PACKAGE, "silero-vad",
                               os.path.join("silero_vad", "data", "silero_vad.onnx"))
    wheels = glob.glob(os.path.join(cache, "download-silero-vad", "*.whl"))
    if not root or not wheels:
        print(f"SKIP: {PACKAGE} cannot be fetched from PyPI")
        return 77
    here = os.path.dirname(os.path.realpath(__file__))
    with open(os.path.join(here, "data", "silero_probs.json")) as f:
        golden = json.load(f)

    with tempfile.TemporaryDirectory(prefix="wc_test_silero_") as tmp:
        model = os.path.join(tmp, "ggml-silero-v5.1.2.bin")
        r = subprocess.run([sys.executable, os.path.join(tools, "convert-silero-vad"), wheels[0],
                            model], capture_output=True, text=True, timeout=120)
        if not check(r.returncode == 0, f"convert-silero-vad ({r.stderr.strip()[-200:]})"):
            return 1
        check(os.path.getsize(model) == FILE_BYTES,
              f"file size {os.path.getsize(model)} = whisper.cpp's {FILE_BYTES}")
        names = tensor_names(model)
        want = [f"_model.encoder.{i}.reparam_conv.{p}" for i in range(4)
                for p in ("weight", "bias")]
        want += [f"_model.decoder.rnn.{p}" for p in ("weight_ih", "weight_hh", "bias_ih",
                                                      "bias_hh")]
        want += ["_model.decoder.decoder.2.weight", "_model.decoder.decoder.2.bias",
                 "_model.stft.forward_basis_buffer"]
        check(names == want, f"whisper.cpp's tensors in its order ({len(names)} tensors)")

        clips = list(golden["clips"])
        got = probs(silero_probs, model, [os.path.join(shared, c) for c in clips])
        for clip, path in zip(clips, got):
            ref, mine = golden["clips"][clip]["ggml"], got[path]
            worst = max((abs(a - b) for a, b in zip(ref, mine)), default=1.0)
            check(len(ref) == len(mine) and worst <= TOL,
                  f"{clip}: {len(mine)} probabilities = Silero's (onnxruntime) within {TOL} "
                  f"(max diff {worst:.2g})")
            orig = golden["clips"][clip]["onnx"]
            drift = max(abs(a - b) for a, b in zip(orig, mine))
            check(drift < 0.01, f"{clip}: within 0.01 of the f32 model's ({drift:.2g}: the "
                  "file's f16 weights)")

        three = probs(silero_probs, model, [os.path.join(shared, c) for c in clips], threads=3)
        check(three == got, "3 threads: the same probabilities, bit for bit")

        # the converter on something else: one line naming it, no output left
        r = subprocess.run([sys.executable, os.path.join(tools, "convert-silero-vad"),
                            os.path.join(shared, clips[0]), os.path.join(tmp, "x.bin"),
                            "--version", "5.1.2"], capture_output=True, text=True, timeout=60)
        check(r.returncode == 1 and r.stderr.count("\n") == 1 and clips[0] in r.stderr
              and not os.path.exists(os.path.join(tmp, "x.bin")),
              f"convert-silero-vad on a WAV file: one line ({r.stderr.strip()!r})")

        # not a VAD file: one line, the file named
        whisper = os.path.join(tmp, "not-vad.bin")
        with open(whisper, "wb") as f:
            f.write(struct.pack("<Ii", 0x67676D6C, 2000) + b"\0" * 64)
        r = subprocess.run([silero_probs, whisper, os.path.join(shared, clips[0])],
                           capture_output=True, text=True)
        check(r.returncode == 1 and r.stdout.count("\n") == 1 and whisper in r.stdout,
              f"a non-VAD file refused in one line ({r.stdout.strip()!r})")

        e2e = subprocess.run([sys.executable, os.path.join(here, "test_vad.py"), runner, shared,
                              os.path.join(tools, "vad_testfile.py"), model], timeout=1800)
        check(e2e.returncode in (0, 77), "test_vad.py with the Silero model")
    return testlib.exit_status()


if __name__ == "__main__":
    sys.exit(main())
