#!/usr/bin/env python3
"""Builds the VAD test file (docs/vad.md): 16 kHz dev clips separated by long stretches of
digital silence and of low-level noise, with every clip's true position written beside it.

usage: vad_testfile.py SHARED_DIR OUT.wav OUT.json [--gap SECONDS] [--noise-dbfs DB] [--clips N]

Layout: a short noise lead-in, then clip, separator, clip, … , a short noise tail. Separators
alternate between digital silence and white Gaussian noise at --noise-dbfs RMS (default -50
dBFS, about 100 LSB of 16-bit); each is --gap seconds (default 20). The clips are the dev set's
16 kHz wav files (audio/librivox/*.wav, then audio/jfk/jfk.wav), so no resampling is involved
and the positions are exact. OUT.json: {"sample_rate", "duration", "clips": [{"audio",
"start", "end", "reference"}]} with times in seconds. Deterministic (fixed noise seed).
Needs only the standard library (wave, array, random), so the tests can run it anywhere.
"""
import argparse
import array
import glob
import json
import os
import random
import sys
import wave

SR = 16000


def read_wav16k(path):
    with wave.open(path, "rb") as w:
        if w.getframerate() != SR or w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise SystemExit(f"{path}: expected 16 kHz mono 16-bit wav")
        x = array.array("h", w.readframes(w.getnframes()))
    if sys.byteorder == "big":
        x.byteswap()
    return x


def dev_clips(shared):
    """(audio path relative to shared, reference text) of the 16 kHz dev clips."""
    clips = []
    for wav in sorted(glob.glob(os.path.join(shared, "audio", "librivox", "*.wav"))):
        with open(wav[:-4] + ".txt") as f:
            clips.append((os.path.relpath(wav, shared), f.read().strip()))
    with open(os.path.join(shared, "audio", "jfk", "jfk.txt")) as f:
        clips.append(("audio/jfk/jfk.wav", f.read().strip()))
    return clips


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("shared")
    ap.add_argument("out_wav")
    ap.add_argument("out_json")
    ap.add_argument("--gap", type=float, default=20.0, help="separator length, seconds")
    ap.add_argument("--noise-dbfs", type=float, default=-50.0, help="noise RMS, dB full scale")
    ap.add_argument("--clips", type=int, default=0, help="use the first N clips (0: all)")
    a = ap.parse_args()
    if a.gap < 0 or a.clips < 0:
        ap.error("--gap and --clips must be >= 0")

    rng = random.Random(20240605)
    noise_lsb = 32768 * 10 ** (a.noise_dbfs / 20)
    clips = dev_clips(a.shared)
    if a.clips > 0:
        clips = clips[: a.clips]
    pcm, meta = array.array("h"), []

    def separator(i, seconds):
        n = int(round(seconds * SR))
        if i % 2:
            pcm.extend(array.array("h", bytes(2 * n)))
        else:
            pcm.extend(max(-32768, min(32767, round(rng.gauss(0.0, noise_lsb)))) for _ in range(n))

    separator(0, 2.0)
    for i, (rel, ref) in enumerate(clips):
        if i > 0:
            separator(i, a.gap)
        x = read_wav16k(os.path.join(a.shared, rel))
        meta.append({"audio": rel, "start": len(pcm) / SR, "end": (len(pcm) + len(x)) / SR,
                     "reference": ref})
        pcm.extend(x)
    separator(0, 2.0)

    if sys.byteorder == "big":
        pcm.byteswap()
    with wave.open(a.out_wav, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes(pcm.tobytes())
    with open(a.out_json, "w") as f:
        json.dump({"sample_rate": SR, "duration": len(pcm) / SR, "clips": meta}, f, indent=1)


if __name__ == "__main__":
    main()
