#!/usr/bin/env python3
"""Writes tests/data/longform-greedy-MODEL.json: openai-whisper's transcribe() of the long-form
file (../shared/README.md: the 186 ljspeech-dev clips appended at 22050 Hz) with temperature 0
only (no fallback), every other option at its default.

Why: golden/*/longform.json was decoded with temperature fallback, and a fallback samples with
torch's random generator; from the first fallback on, the segmentation depends on the draw
(openai-whisper itself gives 207 segments with the golden run's draw and 109 with
torch.manual_seed(1) on tiny.en). Without fallback the reference is deterministic, so segment
boundaries can be compared over the whole file.

The audio is resampled with libsoxr (HQ), as whisper-c does, so the resampler is not a
difference either. Usage (needs openai-whisper, soundfile, soxr from PyPI):
    python3 tools/gen-longform-greedy.py tiny.en [SHARED_DIR]
"""
import glob
import json
import os
import struct
import sys

import numpy as np
import soundfile as sf
import soxr
import torch
from whisper.model import ModelDimensions, Whisper


def load_ggml(path):
    """A whisper.cpp ggml file as an openai-whisper model (f16 tensors widened to f32)."""
    d = open(path, "rb").read()
    o = 4
    hp = struct.unpack_from("<11i", d, o)
    o += 44
    n_mel, n_fft = struct.unpack_from("<2i", d, o)
    o += 8 + n_mel * n_fft * 4
    (n_tok,) = struct.unpack_from("<i", d, o)
    o += 4
    for _ in range(n_tok):
        (n,) = struct.unpack_from("<I", d, o)
        o += 4 + n
    sd = {}
    while o < len(d):
        n_dims, n_name, ttype = struct.unpack_from("<3i", d, o)
        o += 12
        ne = struct.unpack_from("<%di" % n_dims, d, o)
        o += 4 * n_dims
        name = d[o : o + n_name].decode()
        o += n_name
        n = int(np.prod(ne))
        dt = np.float16 if ttype == 1 else np.float32
        a = np.frombuffer(d, dtype=dt, count=n, offset=o).reshape(ne[::-1]).astype(np.float32)
        o += n * (2 if ttype == 1 else 4)
        if name.endswith(("conv1.bias", "conv2.bias")):
            a = a.reshape(-1)
        sd[name] = torch.from_numpy(a.copy())
    nv, nac, nas, nah, nal, ntc, nts, nth, ntl, nm, _ = hp
    dims = ModelDimensions(n_mels=nm, n_audio_ctx=nac, n_audio_state=nas, n_audio_head=nah,
                           n_audio_layer=nal, n_vocab=nv, n_text_ctx=ntc, n_text_state=nts,
                           n_text_head=nth, n_text_layer=ntl)
    m = Whisper(dims)
    m.load_state_dict(sd, strict=False)  # alignment heads are a buffer, not in the file
    return m.eval()


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: tools/gen-longform-greedy.py MODEL [SHARED_DIR]")
    model = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    shared = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "..", "shared")
    clips = sorted(glob.glob(os.path.join(shared, "audio", "ljspeech-dev", "wavs", "*.flac")))
    x = np.concatenate([sf.read(c, dtype="float32")[0] for c in clips])
    audio = soxr.resample(x, 22050, 16000, quality="HQ").astype(np.float32)
    m = load_ggml(os.path.join(shared, "models", "ggml-%s.bin" % model))
    r = m.transcribe(audio, temperature=0.0, language="en" if model.endswith(".en") else None,
                     verbose=None, fp16=False)
    out = {
        "model": model,
        "clips": len(clips),
        "options": "transcribe(temperature=0.0), other options default; audio resampled by libsoxr HQ",
        "language": r["language"],
        "segments": [{"start": round(s["start"], 2), "end": round(s["end"], 2), "text": s["text"],
                      "tokens": s["tokens"]} for s in r["segments"]],
    }
    path = os.path.join(here, "..", "tests", "data", "longform-greedy-%s.json" % model)
    with open(path, "w") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print("%s: %d segments -> %s" % (model, len(out["segments"]), path))


if __name__ == "__main__":
    main()
