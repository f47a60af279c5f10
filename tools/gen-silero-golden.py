#!/usr/bin/env python3
"""Writes tests/data/silero_probs.json: Silero VAD's own speech probabilities (onnxruntime on the
silero-vad wheel's silero_vad.onnx, fed as silero-vad's OnnxWrapper feeds it: 512 samples a
call after the 64 before them, the state carried, the last chunk padded with zeros) for a few
dev-set clips. tests/test_silero_vad.py checks whisper-c's probabilities against them.

Two sets: "onnx" with the model's weights as they are, and "ggml" with the weights that the
ggml file stores as f16 (the conv kernels, the STFT basis, the output layer) rounded to half
first, which is exactly the model a whisper.cpp ggml VAD file holds.

Run by hand (not in CI): needs onnx, onnxruntime and numpy (pip install onnx onnxruntime).

example: gen-silero-golden.py silero_vad-5.1.2-py3-none-any.whl ../shared tests/data/silero_probs.json
"""
import argparse
import json
import os
import wave
import zipfile

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper

CLIPS = ["audio/jfk/jfk.wav", "audio/librivox/sense_and_sensibility_01_austen_64kb-0870.wav"]
F16_STORED = ("reparam_conv.weight", "stft.forward_basis_buffer", "decoder.decoder.2.weight")


def read_wav(path):
    with wave.open(path) as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768.0


def round_f16(model):
    """Every Constant tensor named like an f16-stored weight, rounded to half, in both branches."""
    def walk(graph):
        for node in graph.node:
            for a in node.attribute:
                if node.op_type == "Constant" and a.t.name.endswith(F16_STORED):
                    arr = numpy_helper.to_array(a.t).astype(np.float16).astype(np.float32)
                    a.t.CopyFrom(numpy_helper.from_array(arr, a.t.name))
                if a.g is not None:
                    walk(a.g)
    walk(model.graph)
    return model


def probs(session, pcm):
    state = np.zeros((2, 1, 128), np.float32)
    context = np.zeros(64, np.float32)
    out = []
    for i in range(0, len(pcm), 512):
        chunk = np.zeros(512, np.float32)
        part = pcm[i:i + 512]
        chunk[:len(part)] = part
        x = np.concatenate([context, chunk])[None, :]
        p, state = session.run(None, {"input": x, "state": state, "sr": np.array(16000)})
        context = x[0, -64:]
        out.append(float(p[0, 0]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("wheel")
    ap.add_argument("shared")
    ap.add_argument("output")
    args = ap.parse_args()
    with zipfile.ZipFile(args.wheel) as z:
        data = z.read("silero_vad/data/silero_vad.onnx")
    result = {"source": os.path.basename(args.wheel), "clips": {}}
    for kind in ("onnx", "ggml"):
        model = onnx.load_from_string(data)
        if kind == "ggml":
            model = round_f16(model)
        opts = onnxruntime.SessionOptions()
        opts.inter_op_num_threads = opts.intra_op_num_threads = 1
        session = onnxruntime.InferenceSession(model.SerializeToString(), opts,
                                               providers=["CPUExecutionProvider"])
        for clip in CLIPS:
            p = probs(session, read_wav(os.path.join(args.shared, clip)))
            result["clips"].setdefault(clip, {})[kind] = [round(v, 7) for v in p]
    with open(args.output, "w") as f:
        json.dump(result, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
