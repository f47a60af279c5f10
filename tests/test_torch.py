#!/usr/bin/env python3
"""test_torch.py — tools/ggml-to-torch: the PyTorch models that tools/device/compare-torch.py
compares whisper-c with, built from ggml-tiny.en.bin and ggml-base.bin.

usage: test_torch.py TOOLS_DIR SHARED_DIR

For tiny.en and base (multilingual: language detected by both engines), each:
  openai-whisper checkpoint: dims = the file's hparams, every tensor of the layout with OpenAI's
      shape (conv biases [n]), float16, equal to the file's; whisper.load_model(PATH) on it
      transcribes jfk.wav (float32, CPU, transcribe() defaults) to the golden tokens exactly
  Hugging Face directory (when transformers is installed): the saved model's generate (greedy,
      timestamps; language by whisperc_torch.hf_languages) gives the golden jfk tokens exactly,
      timestamps included

Needs torch and openai-whisper: without them exit 77 (CI installs neither, so it skips there).
$WHISPERC_TORCH_PYTHON names a python that has them: the test runs itself under it, e.g.
  WHISPERC_TORCH_PYTHON=/tmp/venv/bin/python meson test -C build tools_torch
SHARED_DIR is overridden by $WHISPERC_SHARED; without ggml-tiny.en.bin there, exit 77.
"""
import json
import os
import subprocess
import sys
import tempfile
import wave

import testlib  # noqa: E402
from testlib import check  # noqa: E402


def read_wav16(path):
    """16-bit PCM WAV as float32 (jfk.wav): openai-whisper's load_audio would need ffmpeg."""
    import numpy as np
    with wave.open(path) as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1 and w.getframerate() == 16000
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768


def golden_jfk(shared, size):
    with open(os.path.join(shared, "golden", size, "dev.jsonl"), encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if d["audio"] == "audio/jfk/jfk.wav":
                return d
    raise RuntimeError(f"jfk.wav not in golden/{size}/dev.jsonl")


def check_checkpoint(pt, model_path):
    import numpy as np
    import torch
    from whisperc_ggml import GgmlFile, tensor_layout
    g = GgmlFile(model_path)
    ck = torch.load(pt, map_location="cpu", weights_only=True)
    check(ck["dims"] == {k: g.hp[k] for k in ck["dims"]} and len(ck["dims"]) == 10,
          f"checkpoint dims: {ck['dims']}")
    sd = ck["model_state_dict"]
    layout = [(n, s[:1] if n.endswith(("conv1.bias", "conv2.bias")) else s)
              for n, s in tensor_layout(g.hp)]
    bad = [n for n, s in layout if n not in sd or tuple(sd[n].shape) != s]
    check(not bad and len(sd) == len(layout),
          f"checkpoint: {len(sd)} tensors, OpenAI's names and shapes ({bad[:3]})")
    bad = [n for n, _ in layout if sd[n].dtype != torch.float16 or not np.array_equal(
        sd[n].numpy().astype(np.float32).reshape(-1), g.tensor(n).astype(np.float32).reshape(-1))]
    check(not bad, f"checkpoint: float16 throughout, values equal to the file's ({bad[:3]})")


def check_model(tools_dir, model, gold, audio, have_hf):
    import torch
    import whisper
    name = os.path.basename(model)
    gold_tokens = [t for s in gold["segments"] for t in s["tokens"]]
    with tempfile.TemporaryDirectory() as tmp:
        pt, hf = os.path.join(tmp, "model.pt"), os.path.join(tmp, "hf")
        args = [sys.executable, os.path.join(tools_dir, "ggml-to-torch"), model, "--openai", pt]
        r = subprocess.run(args + (["--hf", hf] if have_hf else []), capture_output=True,
                           text=True, timeout=600)
        check(r.returncode == 0 and os.path.isfile(pt), f"{name}: ggml-to-torch: exit "
              f"{r.returncode}{' ' + r.stderr.strip()[-300:] if r.returncode else ''}")
        if r.returncode:
            return
        check_checkpoint(pt, model)

        m = whisper.load_model(pt, device="cpu")
        res = m.transcribe(audio, fp16=False, verbose=None)
        tokens = [t for s in res["segments"] for t in s["tokens"]]
        check(tokens == gold_tokens and res["language"] == gold["language"],
              f"{name}: openai-whisper on the checkpoint: jfk language {res['language']}, "
              f"tokens as golden ({len(tokens)}){'' if tokens == gold_tokens else str(tokens)}")
        check(res["text"] == gold["text"], f"{name}: openai-whisper: text {res['text']!r}")
        if not have_hf:
            return
        from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration
        import whisperc_torch
        hfm = WhisperForConditionalGeneration.from_pretrained(hf, dtype=torch.float32).eval()
        fe = WhisperFeatureExtractor.from_pretrained(hf)
        feats = fe(audio, sampling_rate=16000, return_tensors="pt", truncation=False,
                   padding="longest", return_attention_mask=True)
        tok = whisperc_torch.tokenizer(whisperc_torch.load(model))
        gen = {}
        with torch.inference_mode():
            if hfm.generation_config.is_multilingual:
                gen["language"] = whisperc_torch.hf_languages(hfm, fe, tok, [audio])
                check(gen["language"] == [gold["language"]], f"{name}: Hugging Face "
                      f"detect_language: {gen['language']}")
            out = hfm.generate(feats.input_features, attention_mask=feats.attention_mask,
                               return_timestamps=True, **gen)
        out = out["sequences"] if isinstance(out, dict) else out
        got = [t for t in out[0].tolist() if t != tok.eot]
        check(got == gold_tokens, f"{name}: Hugging Face generate: jfk tokens as golden: "
              f"{tok.decode([t for t in got if t < tok.eot])!r}"
              f"{'' if got == gold_tokens else ' ' + str(got)}")


def main():
    py = os.environ.get("WHISPERC_TORCH_PYTHON")
    if py and not os.environ.get("WHISPERC_TORCH_REEXEC"):  # a venv's python: a symlink
        os.environ["WHISPERC_TORCH_REEXEC"] = "1"
        os.execv(py, [py, *sys.argv])
    tools_dir, shared = sys.argv[1], testlib.shared_dir(sys.argv[2])
    model = os.path.join(shared, "models", "ggml-tiny.en.bin")
    testlib.skip_unless_exist([model])
    try:
        import torch  # noqa: F401
        import whisper  # noqa: F401
    except ImportError as e:
        print(f"SKIP: {e.name} not installed (set WHISPERC_TORCH_PYTHON to a python with torch "
              "and openai-whisper)")
        return 77
    try:
        import transformers  # noqa: F401
        have_hf = True
    except ImportError:
        print("SKIP: the Hugging Face part (transformers not installed)")
        have_hf = False
    sys.path.insert(0, tools_dir)
    audio = read_wav16(os.path.join(shared, "audio", "jfk", "jfk.wav"))
    for size in ("tiny.en", "base"):  # English-only, multilingual (language detection)
        model = os.path.join(shared, "models", f"ggml-{size}.bin")
        if os.path.isfile(model):
            check_model(tools_dir, model, golden_jfk(shared, size), audio, have_hf)
        else:
            print(f"SKIP: {model} not found")
    print(f"{testlib.failures} failed")
    return testlib.exit_status()


sys.exit(main())
