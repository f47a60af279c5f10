#!/usr/bin/env python3
"""compare-torch.py — whisper-c side by side with openai-whisper and Hugging Face transformers on
the same ggml weights and the same audio (docs/gpu-validation.md, "PyTorch side by side").

  tools/device/compare-torch.py -m MODEL.bin [options] AUDIO...    (files or directories)

Engines, each timed after an untimed warm-up, with torch.cuda.synchronize around every timed
call; audio is read and resampled to 16 kHz before any timing, model loading is not timed:
  openai     openai-whisper model.transcribe(), batch 1, file by file: its defaults (greedy at
             temperature 0, fallback to 0.2 ... 1.0 on compression ratio > 2.4 or mean
             log-probability < -1, conditioning on the previous text), fp16=True on cuda
             (openai-whisper keeps float32 weights and casts them per layer, as load_model
             does). This is whisper-c's default decoding (-bs 1 -bo 1, the library's default).
  hf         transformers WhisperForConditionalGeneration.generate, batch 1, file by file:
             WhisperFeatureExtractor (torch, on the device), float16 weights on cuda, SDPA
             attention, greedy with timestamps, through transformers' sequential long-form
             generation for every file (30 s windows seeking by the last timestamp, each
             window's log-Mel padded with zeros: openai's transcribe(), also under 30 s);
             the language (multilingual models, no --language) detected as openai's is,
             by transformers' detect_language on the first 30 s, timed with the rest.
             Fallback as the transformers docs give for openai's behaviour: temperatures 0 ...
             1.0, compression_ratio_threshold 1.35 (transformers measures it on token ids, not
             on text), logprob_threshold -1, no_speech_threshold 0.6, condition_on_prev_tokens.
  hf-batch   the same, --batch-size files per generate call (transformers' batched long-form:
             the files padded to the longest, an attention mask).
  whisper-c  with --whisper-c BIN: `BIN bench -bs 1 -bo 1 --batch-size N FILES` (one by one,
             then whisperc_full_batch; best of --runs) for the times, and `BIN batch` for the
             transcripts. whisper-c decodes the files itself (libsndfile + soxr): give it 16 kHz
             WAVs (build/tests/run_transcribe --write-wav) so that every engine sees the same
             samples.
--no-fallback: temperature 0 only everywhere (whisper-c -nf).

Output: one summary line per engine (seconds, real-time factor, speed as a multiple of real
time, WER of its transcripts against whisper-c's or openai-whisper's), speed ratios of
whisper-c to each engine, and with --json FILE everything, transcripts included. WER uses the
"simple" normaliser of ../shared/README.md; it is a sanity check (fp16 kernels differ), not a
result. --device cpu runs it anywhere (float32), for testing.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), ".."))
from whisperc_ggml import GgmlFile, ToolError, describe, run_tool  # noqa: E402
import whisperc_torch  # noqa: E402

AUDIO_EXT = (".wav", ".flac", ".mp3", ".ogg", ".opus", ".m4a")
TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


# ---------------------------------------------------------------------------------------------
# Audio


def list_audio(inputs, limit):
    files = []
    for p in inputs:
        if os.path.isdir(p):
            for root, _, names in sorted(os.walk(p)):
                files += [os.path.join(root, n) for n in sorted(names)
                          if n.lower().endswith(AUDIO_EXT)]
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise ToolError(f"{p}: no such file or directory")
    if not files:
        raise ToolError("no audio files given")
    return files[:limit] if limit else files


def read_audio(path):
    """float32 mono samples at 16 kHz. soundfile where installed; else scipy's WAV reader (the
    GPU machine has scipy, not soundfile: give it WAVs)."""
    import numpy as np
    try:
        import soundfile
        data, rate = soundfile.read(path, dtype="float32", always_2d=True)
    except ImportError:
        if not path.lower().endswith(".wav"):
            raise ToolError(f"{path}: only WAV files can be read without the soundfile "
                            "package") from None
        from scipy.io import wavfile
        with warnings.catch_warnings():  # libsndfile's PEAK chunk: "not understood, skipping"
            warnings.simplefilter("ignore")
            rate, data = wavfile.read(path)
        if data.dtype.kind in "iu":
            data = data.astype(np.float32) / float(np.iinfo(data.dtype).max + 1)
        data = data.reshape(len(data), -1).astype(np.float32)
    mono = data.mean(axis=1, dtype=np.float32)
    if rate != 16000:
        from scipy.signal import resample_poly
        g = np.gcd(int(rate), 16000)
        mono = resample_poly(mono, 16000 // g, int(rate) // g).astype(np.float32)
    return mono


# ---------------------------------------------------------------------------------------------
# WER ("simple" normaliser of ../shared/README.md)


def normalise(text):
    text = text.lower().replace("\u2019", "'")
    text = re.sub(r"[^a-z0-9' ]", " ", text)
    return " ".join(w.strip("'") for w in text.split() if w.strip("'"))


def wer(hyps, refs):
    """Word edits over reference words, summed over all pairs (None: no reference words)."""
    edits = words = 0
    for h, r in zip(hyps, refs):
        h, r = normalise(h).split(), normalise(r).split()
        row = list(range(len(h) + 1))
        for i, rw in enumerate(r, 1):
            prev, row[0] = row[0], i
            for j, hw in enumerate(h, 1):
                prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (rw != hw))
        edits, words = edits + row[len(h)], words + len(r)
    return edits / words if words else None


# ---------------------------------------------------------------------------------------------
# Engines: each returns (seconds, texts)


class Clock:
    def __init__(self, torch, device):
        self.sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def __call__(self, fn):
        self.sync()
        t0 = time.perf_counter()
        out = fn()
        self.sync()
        return time.perf_counter() - t0, out


def run_openai(g, audio, a, torch, clock):
    model = whisperc_torch.openai_model(g, a.device)
    opts = dict(fp16=a.dtype == "float16", language=a.language, verbose=None,
                temperature=0.0 if a.no_fallback else TEMPERATURES)
    model.transcribe(audio[0], **opts)  # warm-up
    total, texts = 0.0, []
    for x in audio:
        dt, r = clock(lambda: model.transcribe(x, **opts))
        total += dt
        texts.append(r["text"])
    return total, texts


def hf_generate(model, fe, tok, batch, a, torch):
    """One generate call on a list of 16 kHz arrays; returns their texts. The features of the
    whole files, padded to the longest, with an attention mask: transformers' long-form recipe,
    used for short files too (whisperc_torch.hf_feature_extractor says why)."""
    feats = fe(batch, sampling_rate=16000, return_tensors="pt", device=a.device,
               truncation=False, padding="longest", return_attention_mask=True)
    gen = dict(return_timestamps=True, attention_mask=feats["attention_mask"].to(a.device))
    if not model.generation_config.is_multilingual:
        pass  # transformers refuses language and task for English-only models
    elif a.language:
        gen.update(language=a.language, task="transcribe")
    else:
        gen.update(language=whisperc_torch.hf_languages(model, fe, tok, batch, a.device,
                                                        getattr(torch, a.dtype)),
                   task="transcribe")
    if not a.no_fallback:
        gen.update(temperature=TEMPERATURES, compression_ratio_threshold=1.35,
                   logprob_threshold=-1.0, no_speech_threshold=0.6, condition_on_prev_tokens=True)
    with torch.inference_mode():
        out = model.generate(feats["input_features"].to(a.device, getattr(torch, a.dtype)), **gen)
    seqs = out["sequences"] if isinstance(out, dict) else out
    return [tok.decode([t for t in row.tolist() if t < tok.eot]) for row in seqs]


def run_hf(g, audio, a, torch, clock, batch_size):
    model = whisperc_torch.hf_model(g, getattr(torch, a.dtype), a.device)
    fe, tok = whisperc_torch.hf_feature_extractor(g), whisperc_torch.tokenizer(g)
    hf_generate(model, fe, tok, audio[:batch_size], a, torch)  # warm-up
    total, texts = 0.0, []
    for i in range(0, len(audio), batch_size):
        dt, t = clock(lambda: hf_generate(model, fe, tok, audio[i:i + batch_size], a, torch))
        total += dt
        texts += t
    return total, texts


def run_whisper_c(files, a):
    """{"seconds": one by one, "seconds_batched": whisperc_full_batch, "texts": [...]}."""
    common = ["-m", a.model, "--device", a.device.split(":")[0], "-bs", "1", "-bo", "1"]
    common += ["-l", a.language] if a.language else []
    common += ["-nf"] if a.no_fallback else []
    common += ["-t", str(a.threads)] if a.threads else []
    cmd = [a.whisper_c, "bench", *common, "--runs", str(a.runs), "--batch-size",
           str(a.batch_size), *files]
    r = subprocess.run(cmd, capture_output=True, text=True)
    bench_out = r.stdout
    totals = [float(x) for x in re.findall(r"^\s+total\s+([\d.]+) ms", bench_out, re.M)]
    if r.returncode != 0 or len(totals) != 2:
        raise ToolError(f"{' '.join(cmd[:3])} ...: exit {r.returncode}: "
                        f"{(r.stderr or r.stdout).strip()[-400:]}")
    with tempfile.TemporaryDirectory() as out:
        manifest = os.path.join(out, "inputs.jsonl")
        with open(manifest, "w") as f:
            for i, p in enumerate(files):
                f.write(json.dumps({"path": os.path.abspath(p), "id": f"f{i:05}"}) + "\n")
        cmd = [a.whisper_c, "batch", *common, "-j", "1", "-q", "--formats", "txt", "-o", out,
               "--manifest", manifest]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise ToolError(f"{' '.join(cmd[:2])}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
        texts = []
        for i in range(len(files)):
            with open(os.path.join(out, f"f{i:05}.txt"), encoding="utf-8") as f:
                texts.append(" ".join(f.read().split()))
    return {"seconds": totals[0] / 1e3, "seconds_batched": totals[1] / 1e3, "texts": texts,
            "bench": bench_out}


# ---------------------------------------------------------------------------------------------


def main(argv):
    ap = argparse.ArgumentParser(prog="compare-torch.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("audio", nargs="+", help="audio files or directories (searched recursively)")
    ap.add_argument("-m", "--model", required=True, help="whisper.cpp ggml .bin file")
    ap.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    ap.add_argument("--dtype", choices=("float16", "float32"),
                    help="default float16 on cuda, float32 on cpu")
    ap.add_argument("--engines", default="openai,hf,hf-batch",
                    help="comma-separated: openai, hf, hf-batch (default all three)")
    ap.add_argument("--batch-size", type=int, default=16, help="hf-batch and whisper-c batched")
    ap.add_argument("-l", "--language", help="spoken language (default: detected; en for .en)")
    ap.add_argument("--no-fallback", action="store_true", help="temperature 0 only")
    ap.add_argument("--limit", type=int, default=0, help="the first N files only")
    ap.add_argument("--whisper-c", metavar="BIN", help="also run this whisper-c binary")
    ap.add_argument("--runs", type=int, default=2, help="whisper-c bench: best of N (default 2)")
    ap.add_argument("-t", "--threads", type=int, default=0, help="whisper-c CPU threads")
    ap.add_argument("--json", metavar="FILE", help="write everything here")
    a = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        raise ToolError("PyTorch is not installed") from None
    a.device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    a.dtype = a.dtype or ("float16" if a.device.startswith("cuda") else "float32")
    engines = [e for e in a.engines.split(",") if e]
    for e in engines:
        if e not in ("openai", "hf", "hf-batch"):
            raise ToolError(f"--engines: unknown engine {e!r}")

    g = GgmlFile(a.model)
    files = list_audio(a.audio, a.limit)
    audio = [read_audio(f) for f in files]
    audio_s = sum(len(x) for x in audio) / 16000
    clock = Clock(torch, a.device)
    gpu = torch.cuda.get_device_name(a.device) if a.device.startswith("cuda") else None
    print(f"{len(files)} files, {audio_s:.1f} s of audio; {describe(g.hp)}; {a.device} "
          f"{gpu or ''} {a.dtype}; torch {torch.__version__}", flush=True)

    results = {}
    ref_name = "whisper-c" if a.whisper_c else "openai" if "openai" in engines else None

    def report(name, r):  # printed as each engine ends: a timeout keeps the lines before it
        results[name] = r
        r["rtf"] = r["seconds"] / audio_s
        r["x_realtime"] = audio_s / r["seconds"]
        w = None
        if ref_name in results and name != ref_name and r["texts"] is not None:
            w = r[f"wer_vs_{ref_name}"] = wer(r["texts"], results[ref_name]["texts"])
        print(f"{name:16s} batch {r['batch_size']:3d}  {r['seconds']:9.3f} s  RTF "
              f"{r['rtf']:.5f}  {r['x_realtime']:8.1f}x real time" +
              (f"  WER vs {ref_name} {100 * w:.2f}%" if w is not None else ""), flush=True)

    if a.whisper_c:
        wc = run_whisper_c(files, a)
        report("whisper-c", dict(batch_size=1, seconds=wc["seconds"], texts=wc["texts"]))
        # whisperc_full_batch gives each file whisperc_full's transcript (tests/test_batch.c)
        report("whisper-c-batch", dict(batch_size=a.batch_size, seconds=wc["seconds_batched"],
                                       texts=None, bench=wc["bench"]))
    for e in engines:
        bs = a.batch_size if e == "hf-batch" else 1
        if e == "openai":
            s, texts = run_openai(g, audio, a, torch, clock)
        else:
            s, texts = run_hf(g, audio, a, torch, clock, bs)
        report(e, dict(batch_size=bs, seconds=s, texts=texts))
        if a.device.startswith("cuda"):
            torch.cuda.empty_cache()

    ratios = {}
    for wc_name in ("whisper-c", "whisper-c-batch"):
        for name in results:
            if wc_name in results and not name.startswith("whisper-c"):
                key = f"{wc_name} vs {name}"
                ratios[key] = results[name]["seconds"] / results[wc_name]["seconds"]
                print(f"speed {key}: {ratios[key]:.2f}x")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(dict(model=os.path.basename(a.model), size=describe(g.hp), device=a.device,
                           gpu=gpu, dtype=a.dtype, torch=torch.__version__,
                           transformers=_version("transformers"),
                           openai_whisper=_version("whisper"), audio_seconds=audio_s,
                           fallback=not a.no_fallback, language=a.language, files=files,
                           engines=results, ratios=ratios), f, indent=1, ensure_ascii=False)


def _version(module):
    try:
        return __import__(module).__version__
    except Exception:  # not installed, or no __version__
        return None


run_tool(main)
