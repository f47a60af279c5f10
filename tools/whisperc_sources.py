"""whisperc_sources — reads Whisper models in the formats the converters take, each as
(hparams, token bytes by id, get_tensor) where get_tensor(name) gives a tensor by its
openai-whisper state-dict name (whisperc_ggml.tensor_layout) as a numpy array.

  CTranslate2 (faster-whisper) directory: model.bin, vocabulary.{json,txt} or tokenizer.json
  Hugging Face (transformers) directory:  model.safetensors (or sharded), config.json, vocab.json
  OpenAI checkpoint:                      NAME.pt (torch zip: dims, model_state_dict), tiktoken

Readers follow the formats' documentation (CTranslate2 python/ctranslate2/specs/model_spec.py
_serialize; the safetensors format description; openai-whisper's load_model), and every
malformation becomes a ToolError naming the file.
"""
import base64
import importlib.util
import json
import math
import os
import re
import struct
import zipfile

import numpy as np

from whisperc_ggml import ToolError, check_hparams, tensor_layout, token_bytes

# ---------------------------------------------------------------------------------------------
# Raw arrays


def _bf16_to_f32(raw):
    """bfloat16 is the top half of a float32, so widening is exact."""
    return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view("<f4")


def _array(raw, dtype, shape):
    if dtype == "bfloat16":
        return _bf16_to_f32(raw).reshape(shape)
    return np.frombuffer(raw, dtype).reshape(shape)


def _read_at(path, offset, n_bytes):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(n_bytes)


# ---------------------------------------------------------------------------------------------
# CTranslate2 model.bin
#
#   u32 binary version (4 to 6), string spec name, u32 spec revision, u32 n_variables, then per
#   variable: string name, u8 rank, u32 dims[rank], u8 dtype id, u32 n_bytes, data; then u32
#   n_aliases and (alias, target) string pairs. A string is u16 length (NUL included), bytes, NUL.

_CT2_DTYPES = {0: "<f4", 1: "<i1", 2: "<i2", 3: "<i4", 4: "<f2", 5: "bfloat16"}
_CT2_DTYPE_NAMES = {0: "float32", 1: "int8", 2: "int16", 3: "int32", 4: "float16", 5: "bfloat16"}


class Ct2Model:
    """model.bin's variable index: {name: (shape, dtype id, offset, n_bytes)}; data on demand."""

    def __init__(self, path):
        self.path = path
        self.size = os.path.getsize(path)
        with open(path, "rb") as f:
            self._f = f
            version = self._u("I", "the header")
            if not 4 <= version <= 6:
                raise ToolError(f"{path}: not a CTranslate2 model.bin this tool reads (binary "
                                f"version {version}, expected 4 to 6)")
            self.spec = self._string("the header")
            if self.spec != "WhisperSpec":
                raise ToolError(f"{path}: a CTranslate2 {self.spec!r} model, not Whisper")
            self.revision = self._u("I", "the header")
            self.variables = {}
            for i in range(self._u("I", "the header")):
                what = f"variable #{i}"
                name = self._string(what)
                shape = tuple(self._u("I", what) for _ in range(self._u("B", what)))
                dtype, n_bytes = self._u("B", what), self._u("I", what)
                if dtype not in _CT2_DTYPES:
                    raise ToolError(f"{path}: variable {name}: unknown dtype id {dtype}")
                item = 2 if dtype == 5 else np.dtype(_CT2_DTYPES[dtype]).itemsize
                if n_bytes != math.prod(shape) * item:
                    raise ToolError(f"{path}: variable {name}: {n_bytes} bytes for shape "
                                    f"{list(shape)} {_CT2_DTYPE_NAMES[dtype]}")
                offset = f.tell()
                if offset + n_bytes > self.size:
                    raise ToolError(f"{path}: truncated: variable {name} needs {n_bytes} bytes at "
                                    f"offset {offset}, the file has {self.size}")
                f.seek(n_bytes, os.SEEK_CUR)
                self.variables[name] = (shape, dtype, offset, n_bytes)
            self.aliases = {}
            for _ in range(self._u("I", "the alias table")):
                alias = self._string("the alias table")
                self.aliases[alias] = self._string("the alias table")
            del self._f
        self._cache = (None, None)

    def _take(self, n, what):
        data = self._f.read(n)
        if len(data) != n:
            raise ToolError(f"{self.path}: truncated: the file ends inside {what} (offset "
                            f"{self._f.tell() - len(data)}, file is {self.size} bytes)")
        return data

    def _u(self, fmt, what):
        return struct.unpack("<" + fmt, self._take(struct.calcsize(fmt), what))[0]

    def _string(self, what):
        data = self._take(self._u("H", what), what)
        if not data or data[-1] != 0:
            raise ToolError(f"{self.path}: malformed string in {what}")
        return data[:-1].decode("utf-8", errors="replace")

    def shape(self, name):
        if name not in self.variables:
            raise ToolError(f"{self.path}: variable {name} missing")
        return self.variables[name][0]

    def array(self, name):
        """The variable as a float array (float16 stays float16); the last one read is kept,
        since fused q/k/v matrices are read once per part."""
        if self._cache[0] == name:
            return self._cache[1]
        self.shape(name)  # fails naming a missing variable
        shape, dtype, offset, n_bytes = self.variables[name]
        if dtype not in (0, 4, 5):
            raise ToolError(f"{self.path}: variable {name} is {_CT2_DTYPE_NAMES[dtype]}: a "
                            "quantized model; convert a float16 or float32 one (ct2 "
                            "--quantization float16)")
        value = _array(_read_at(self.path, offset, n_bytes), _CT2_DTYPES[dtype], shape)
        self._cache = (name, value)
        return value

    def scalar(self, name, default):
        if name not in self.variables or self.variables[name][3] == 0:
            return default
        shape, dtype, offset, n_bytes = self.variables[name]
        return int(np.frombuffer(_read_at(self.path, offset, n_bytes), _CT2_DTYPES[dtype])[0])


def _ct2_part(m, var, k, n, check_zero=False):
    """Part k of n of a fused variable ([q; k; v] or [k; v] stacked along the first axis)."""
    def get():
        whole = m.array(var)
        if whole.shape[0] % n:
            raise ToolError(f"{m.path}: variable {var}: {whole.shape[0]} rows do not split in {n}")
        rows = whole.shape[0] // n
        part = whole[k * rows:(k + 1) * rows]
        if check_zero and np.any(part):
            raise ToolError(f"{m.path}: variable {var}: the key projection has a nonzero bias, "
                            "which Whisper's has not")
        return part
    return get


def _ct2_attention(m, table, ct2, oa, fused_qkv):
    """ct2 'encoder/layer_0/self_attention' -> oa 'encoder.blocks.0.attn'. Self-attention fuses
    q, k, v in linear_0 and projects out in linear_1; cross-attention has q in linear_0, k and v
    fused in linear_1 and out in linear_2. The key has no bias in Whisper: CTranslate2 stores
    zeros there, checked and dropped."""
    if fused_qkv:
        w, b, n, out = f"{ct2}/linear_0/weight", f"{ct2}/linear_0/bias", 3, f"{ct2}/linear_1"
        q, k, v = (w, b, 0, n), (w, b, 1, n), (w, b, 2, n)
    else:
        w, b, out = f"{ct2}/linear_1/weight", f"{ct2}/linear_1/bias", f"{ct2}/linear_2"
        q = (f"{ct2}/linear_0/weight", f"{ct2}/linear_0/bias", 0, 1)
        k, v = (w, b, 0, 2), (w, b, 1, 2)
    table[f"{oa}.query.weight"] = _ct2_part(m, q[0], q[2], q[3])
    table[f"{oa}.query.bias"] = _ct2_part(m, q[1], q[2], q[3])
    key_bias = _ct2_part(m, k[1], k[2], k[3], check_zero=True)
    key_weight = _ct2_part(m, k[0], k[2], k[3])
    table[f"{oa}.key.weight"] = lambda: (key_bias(), key_weight())[1]
    table[f"{oa}.value.weight"] = _ct2_part(m, v[0], v[2], v[3])
    table[f"{oa}.value.bias"] = _ct2_part(m, v[1], v[2], v[3])
    table[f"{oa}.out.weight"] = lambda: m.array(f"{out}/weight")
    table[f"{oa}.out.bias"] = lambda: m.array(f"{out}/bias")
    table[f"{oa}_ln.weight"] = lambda: m.array(f"{ct2}/layer_norm/gamma")
    table[f"{oa}_ln.bias"] = lambda: m.array(f"{ct2}/layer_norm/beta")


def _ct2_block(m, table, ct2, oa, decoder):
    _ct2_attention(m, table, f"{ct2}/self_attention", f"{oa}.attn", fused_qkv=True)
    if decoder:
        _ct2_attention(m, table, f"{ct2}/attention", f"{oa}.cross_attn", fused_qkv=False)
    for oa_name, ct2_name in (("mlp.0.weight", "linear_0/weight"), ("mlp.0.bias", "linear_0/bias"),
                              ("mlp.2.weight", "linear_1/weight"), ("mlp.2.bias", "linear_1/bias"),
                              ("mlp_ln.weight", "layer_norm/gamma"),
                              ("mlp_ln.bias", "layer_norm/beta")):
        table[f"{oa}.{oa_name}"] = lambda v=f"{ct2}/ffn/{ct2_name}": m.array(v)


def _ct2_vars_used(n_audio_layer, n_text_layer):
    """The CTranslate2 variable names the mapping reads (for the unknown-variable check)."""
    used = {"encoder/conv1/weight", "encoder/conv1/bias", "encoder/conv2/weight",
            "encoder/conv2/bias", "encoder/position_encodings/encodings", "encoder/layer_norm/gamma",
            "encoder/layer_norm/beta", "decoder/embeddings/weight",
            "decoder/position_encodings/encodings", "decoder/layer_norm/gamma",
            "decoder/layer_norm/beta"}
    for side, n, parts in (("encoder", n_audio_layer, ("self_attention", "ffn")),
                           ("decoder", n_text_layer, ("self_attention", "attention", "ffn"))):
        for i in range(n):
            for part in parts:
                n_linear = {"self_attention": 2, "attention": 3, "ffn": 2}[part]
                p = f"{side}/layer_{i}/{part}"
                used |= {f"{p}/layer_norm/gamma", f"{p}/layer_norm/beta"}
                used |= {f"{p}/linear_{j}/{w}" for j in range(n_linear) for w in ("weight", "bias")}
    return used


def read_ct2(model_dir):
    """A faster-whisper / CTranslate2 Whisper directory."""
    path = os.path.join(model_dir, "model.bin")
    if not os.path.isdir(model_dir):
        raise ToolError(f"{model_dir}: not a directory")
    if not os.path.isfile(path):
        raise ToolError(f"{path}: missing (not a CTranslate2 model directory?)")
    m = Ct2Model(path)

    def n_layers(side):
        return len({int(x) for x in re.findall(rf"^{side}/layer_(\d+)/", "\n".join(m.variables),
                                               re.M)})

    n_vocab, n_text_state = _dims(m, "decoder/embeddings/weight", 2)
    n_audio_ctx, n_audio_state = _dims(m, "encoder/position_encodings/encodings", 2)
    n_text_ctx, _ = _dims(m, "decoder/position_encodings/encodings", 2)
    _, n_mels, _ = _dims(m, "encoder/conv1/weight", 3)
    hp = dict(n_vocab=n_vocab, n_audio_ctx=n_audio_ctx, n_audio_state=n_audio_state,
              n_audio_head=m.scalar("encoder/num_heads", n_audio_state // 64),
              n_audio_layer=n_layers("encoder"), n_text_ctx=n_text_ctx, n_text_state=n_text_state,
              n_text_head=m.scalar("decoder/num_heads", n_text_state // 64),
              n_text_layer=n_layers("decoder"), n_mels=n_mels, ftype=1)
    check_hparams(hp, path)

    table = {
        "encoder.positional_embedding": "encoder/position_encodings/encodings",
        "encoder.conv1.weight": "encoder/conv1/weight", "encoder.conv1.bias": "encoder/conv1/bias",
        "encoder.conv2.weight": "encoder/conv2/weight", "encoder.conv2.bias": "encoder/conv2/bias",
        "encoder.ln_post.weight": "encoder/layer_norm/gamma",
        "encoder.ln_post.bias": "encoder/layer_norm/beta",
        "decoder.positional_embedding": "decoder/position_encodings/encodings",
        "decoder.token_embedding.weight": "decoder/embeddings/weight",
        "decoder.ln.weight": "decoder/layer_norm/gamma", "decoder.ln.bias": "decoder/layer_norm/beta",
    }
    table = {k: (lambda v=v: m.array(v)) for k, v in table.items()}
    for i in range(hp["n_audio_layer"]):
        _ct2_block(m, table, f"encoder/layer_{i}", f"encoder.blocks.{i}", decoder=False)
    for i in range(hp["n_text_layer"]):
        _ct2_block(m, table, f"decoder/layer_{i}", f"decoder.blocks.{i}", decoder=True)

    used = _ct2_vars_used(hp["n_audio_layer"], hp["n_text_layer"])
    for name, (shape, dtype, _, _) in m.variables.items():
        if name.endswith("_scale") or (dtype in (1, 2) and name.endswith("weight")):
            raise ToolError(f"{path}: variable {name} is {_CT2_DTYPE_NAMES[dtype]}: a quantized "
                            "model; convert a float16 or float32 one (ct2 --quantization float16)")
        if name not in used and shape != ():  # shape () holds settings such as num_heads
            raise ToolError(f"{path}: unknown variable {name} {list(shape)}")
    for alias, target in m.aliases.items():
        if alias != "decoder/projection/weight" or target != "decoder/embeddings/weight":
            raise ToolError(f"{path}: unexpected alias {alias} -> {target}")

    return hp, _ct2_tokens(model_dir), _getter(table, path)


def _dims(m, name, rank):
    shape = m.shape(name)
    if len(shape) != rank:
        raise ToolError(f"{m.path}: variable {name} has shape {list(shape)}, expected {rank} dims")
    return shape


def _ct2_tokens(model_dir):
    """Token bytes by id from vocabulary.json (a list), vocabulary.txt (a token a line) or
    tokenizer.json, whichever the directory has."""
    json_path = os.path.join(model_dir, "vocabulary.json")
    txt_path = os.path.join(model_dir, "vocabulary.txt")
    if os.path.isfile(json_path):
        texts = _load_json(json_path)
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise ToolError(f"{json_path}: expected a JSON list of token strings")
        return [token_bytes(t, json_path) for t in texts]
    if os.path.isfile(txt_path):
        with open(txt_path, encoding="utf-8", newline="") as f:
            texts = f.read().split("\n")  # not splitlines(): only "\n" separates tokens here
        if texts and texts[-1] == "":
            texts.pop()
        return [token_bytes(t, txt_path) for t in texts]
    return hf_tokens(model_dir)


def _getter(table, source):
    def get(name):
        if name not in table:
            raise ToolError(f"{source}: tensor {name} missing")
        return table[name]()
    return get


def _load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ToolError(f"{path}: not valid JSON ({e})") from None


# ---------------------------------------------------------------------------------------------
# Hugging Face: safetensors, config.json, vocab.json
#
# A .safetensors file: u64 header length N, N bytes of JSON {name: {dtype, shape, data_offsets:
# [begin, end]}, "__metadata__": {...}}, then the data, offsets counted from its start.

_ST_DTYPES = {"F16": "<f2", "F32": "<f4", "F64": "<f8", "BF16": "bfloat16"}


def read_safetensors_index(path):
    """{name: (dtype, shape, absolute offset, n_bytes)} of one .safetensors file."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        n = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
        if not 2 <= n <= min(size - 8, 100 << 20):
            raise ToolError(f"{path}: not a safetensors file (header length {n}, file {size} "
                            "bytes)")
        try:
            header = json.loads(f.read(n))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ToolError(f"{path}: not a safetensors file (header: {e})") from None
    if not isinstance(header, dict):
        raise ToolError(f"{path}: not a safetensors file (header is not a JSON object)")
    index = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, end) = info["dtype"], tuple(info["shape"]), info["data_offsets"]
        except (TypeError, KeyError, ValueError):
            raise ToolError(f"{path}: tensor {name}: malformed header entry") from None
        item = {"F16": 2, "BF16": 2, "F32": 4, "F64": 8}.get(dtype)
        if item is None:
            raise ToolError(f"{path}: tensor {name} has dtype {dtype}; expected F16, BF16, F32")
        if end - begin != math.prod(shape) * item or 8 + n + end > size or begin < 0:
            raise ToolError(f"{path}: tensor {name}: data [{begin}, {end}) does not fit shape "
                            f"{list(shape)} {dtype} or runs past the end (truncated?)")
        index[name] = (_ST_DTYPES[dtype], shape, 8 + n + begin, end - begin)
    return index


# openai-whisper name -> transformers' WhisperForConditionalGeneration name (without "model.")
_HF_TOP = {
    "encoder.positional_embedding": "encoder.embed_positions.weight",
    "encoder.ln_post.weight": "encoder.layer_norm.weight",
    "encoder.ln_post.bias": "encoder.layer_norm.bias",
    "decoder.positional_embedding": "decoder.embed_positions.weight",
    "decoder.token_embedding.weight": "decoder.embed_tokens.weight",
    "decoder.ln.weight": "decoder.layer_norm.weight",
    "decoder.ln.bias": "decoder.layer_norm.bias",
}
_HF_BLOCK = {
    "attn.query": "self_attn.q_proj", "attn.key": "self_attn.k_proj",
    "attn.value": "self_attn.v_proj", "attn.out": "self_attn.out_proj",
    "attn_ln": "self_attn_layer_norm",
    "cross_attn.query": "encoder_attn.q_proj", "cross_attn.key": "encoder_attn.k_proj",
    "cross_attn.value": "encoder_attn.v_proj", "cross_attn.out": "encoder_attn.out_proj",
    "cross_attn_ln": "encoder_attn_layer_norm",
    "mlp.0": "fc1", "mlp.2": "fc2", "mlp_ln": "final_layer_norm",
}


def hf_name(name):
    """openai-whisper state-dict name -> Hugging Face name (without the "model." prefix)."""
    if name in _HF_TOP:
        return _HF_TOP[name]
    m = re.fullmatch(r"(encoder|decoder)\.blocks\.(\d+)\.(.+)\.(weight|bias)", name)
    if m:
        return f"{m[1]}.layers.{m[2]}.{_HF_BLOCK[m[3]]}.{m[4]}"
    return name  # conv1, conv2 keep their names


def read_hf(model_dir):
    """A Hugging Face openai/whisper-* directory."""
    if not os.path.isdir(model_dir):
        raise ToolError(f"{model_dir}: not a directory")
    config_path = os.path.join(model_dir, "config.json")
    if not os.path.isfile(config_path):
        raise ToolError(f"{config_path}: missing (not a Hugging Face model directory?)")
    config = _load_json(config_path)
    keys = dict(n_vocab="vocab_size", n_audio_ctx="max_source_positions", n_audio_state="d_model",
                n_audio_head="encoder_attention_heads", n_audio_layer="encoder_layers",
                n_text_ctx="max_target_positions", n_text_state="d_model",
                n_text_head="decoder_attention_heads", n_text_layer="decoder_layers",
                n_mels="num_mel_bins")
    if not isinstance(config, dict):
        raise ToolError(f"{config_path}: expected a JSON object")
    for key in keys.values():
        if key not in config:
            raise ToolError(f"{config_path}: {key} missing")
    hp = {k: config[v] for k, v in keys.items()}
    hp["ftype"] = 1
    check_hparams(hp, config_path)

    files = _hf_weight_files(model_dir)
    index = {}
    for path in files:
        for name, entry in read_safetensors_index(path).items():
            index[name.removeprefix("model.")] = entry + (path,)
    known = {hf_name(n): n for n, _ in tensor_layout(hp)}
    table = {}
    for name, (dtype, shape, offset, n_bytes, path) in index.items():
        if name in known:
            table[known[name]] = lambda e=(dtype, shape, offset, n_bytes, path): \
                _array(_read_at(e[4], e[2], e[3]), e[0], e[1])
        elif name == "proj_out.weight":
            pass  # the output projection is tied to the token embedding
        elif re.fullmatch(r"(en|de)coder\.layers\.\d+\.(self|encoder)_attn\.k_proj\.bias", name):
            if np.any(_array(_read_at(path, offset, n_bytes), dtype, shape)):
                raise ToolError(f"{path}: tensor {name}: a nonzero key bias, which Whisper has not")
        else:
            raise ToolError(f"{path}: unknown tensor {name} {list(shape)}")
    return hp, hf_tokens(model_dir), _getter(table, files[0] if len(files) == 1 else model_dir)


def _hf_weight_files(model_dir):
    single = os.path.join(model_dir, "model.safetensors")
    index_path = single + ".index.json"
    if os.path.isfile(single):
        return [single]
    if os.path.isfile(index_path):
        weight_map = _load_json(index_path).get("weight_map")
        if not isinstance(weight_map, dict):
            raise ToolError(f"{index_path}: weight_map missing")
        files = [os.path.join(model_dir, f) for f in sorted(set(weight_map.values()))]
        for f in files:
            if not os.path.isfile(f):
                raise ToolError(f"{f}: missing (listed in {index_path})")
        return files
    raise ToolError(f"{single}: missing (only safetensors weights are read; no "
                    "pytorch_model.bin)")


def hf_tokens(model_dir):
    """Token bytes by id from vocab.json ({token: id}) or tokenizer.json (model.vocab)."""
    vocab_path = os.path.join(model_dir, "vocab.json")
    tok_path = os.path.join(model_dir, "tokenizer.json")
    if os.path.isfile(vocab_path):
        path, vocab = vocab_path, _load_json(vocab_path)
    elif os.path.isfile(tok_path):
        path, tok = tok_path, _load_json(tok_path)
        vocab = tok.get("model", {}).get("vocab") if isinstance(tok, dict) else None
    else:
        raise ToolError(f"{vocab_path}: missing (and no tokenizer.json): the vocabulary is needed")
    if not isinstance(vocab, dict):
        raise ToolError(f"{path}: expected a {{token: id}} vocabulary")
    by_id = {}
    for text, i in vocab.items():
        if not isinstance(i, int) or i < 0:
            raise ToolError(f"{path}: token {text!r} has id {i!r}")
        by_id[i] = text
    tokens = []
    while len(tokens) in by_id:
        tokens.append(token_bytes(by_id[len(tokens)], path))
    return tokens


# ---------------------------------------------------------------------------------------------
# OpenAI checkpoint (.pt) and tiktoken ranks

_DIMS = ("n_mels", "n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer",
         "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer")


def read_pt(path):
    """openai-whisper's checkpoint: {"dims": {...}, "model_state_dict": {...}} saved by torch."""
    if not os.path.isfile(path):
        raise ToolError(f"{path}: no such file")
    try:
        import torch
    except ImportError:
        raise ToolError("reading .pt checkpoints needs PyTorch (pip install torch)") from None
    is_zip = zipfile.is_zipfile(path)
    with open(path, "rb") as f:
        is_pickle = f.read(1) == b"\x80"  # pickle protocol 2+, torch's format before 1.6
    if not is_zip and not is_pickle:
        raise ToolError(f"{path}: not a PyTorch checkpoint (neither a torch zip archive nor a "
                        "pickle)")
    try:
        # weights_only: a checkpoint is data, and must not run code; mmap: no copy in memory
        ck = torch.load(path, map_location="cpu", weights_only=True, mmap=is_zip)
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ToolError(f"{path}: not a readable PyTorch checkpoint ({first[:200]})") from None
    if not isinstance(ck, dict) or not isinstance(ck.get("dims"), dict) or \
            not isinstance(ck.get("model_state_dict"), dict):
        raise ToolError(f"{path}: not an openai-whisper checkpoint (needs dims and "
                        "model_state_dict)")
    dims, state = ck["dims"], ck["model_state_dict"]
    for key in _DIMS:
        if key not in dims:
            raise ToolError(f"{path}: dims: {key} missing")
    hp = {k: dims[k] for k in _DIMS}
    hp["ftype"] = 1
    check_hparams(hp, path)
    known = {n for n, _ in tensor_layout(hp)}
    for name, value in state.items():
        if name not in known:
            raise ToolError(f"{path}: unknown tensor {name} "
                            f"{list(getattr(value, 'shape', []))}")

    def get(name):
        if name not in state:
            raise ToolError(f"{path}: tensor {name} missing")
        t = state[name]
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise ToolError(f"{path}: tensor {name} is not a float tensor")
        if t.dtype not in (torch.float16, torch.float32):
            t = t.float()  # bfloat16, float64
        return t.contiguous().numpy()
    return hp, get


def read_tiktoken(path):
    """Token bytes by rank from a tiktoken file: a "base64 rank" line per token."""
    ranks = {}
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                text, rank = line.split()
                ranks[int(rank)] = base64.b64decode(text, validate=True)
            except ValueError:
                raise ToolError(f"{path}:{n}: expected \"base64 rank\"") from None
    if sorted(ranks) != list(range(len(ranks))):
        raise ToolError(f"{path}: ranks are not 0..{len(ranks) - 1}")
    return [ranks[i] for i in range(len(ranks))]


def whisper_tiktoken(multilingual):
    """openai-whisper's own asset, when the package is installed (found without importing it)."""
    spec = importlib.util.find_spec("whisper")
    if spec is None or not spec.origin:
        return None
    name = "multilingual.tiktoken" if multilingual else "gpt2.tiktoken"
    path = os.path.join(os.path.dirname(spec.origin), "assets", name)
    return path if os.path.isfile(path) else None
