"""whisperc_ggml — what the model tools share: whisper.cpp's ggml file (layout, streaming writer,
reader), the official model sizes, Slaney mel filters and the byte-level BPE vocabulary.

A ggml file (little-endian, no padding; src/model/model_file.h documents what whisper-c reads):
  u32 magic 0x67676d6c; i32 hparams in HPARAM_KEYS order; i32 n_mels, i32 201, f32 filters;
  i32 n_tokens, then per token u32 length + bytes; then tensors to the end of the file:
  i32 n_dims, i32 name length, i32 type (0 f32, 1 f16, or a QUANT_TYPES block type), i32
  ne[n_dims] (innermost first), name, data.

Reading the source formats (CTranslate2, Hugging Face, OpenAI .pt) is whisperc_sources.py.
"""
import os
import struct
import sys

import numpy as np

GGML_MAGIC = 0x67676D6C
HPARAM_KEYS = ("n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer",
               "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer", "n_mels", "ftype")
N_FFT_BINS = 201          # n_fft 400 at 16 kHz: rfft bins
N_STORED_TOKENS = 50257   # ggml files store the byte strings of ids 0..50256
EOT_TEXT = b"<|endoftext|>"
FTYPES = {"f32": 0, "f16": 1}
# ggml's block-quantized types that whisper.cpp's quantize writes and whisper-c reads: ggml_type,
# ggml_ftype (the hparams' ftype is 1000 * QUANT_VERSION + it), (values, bytes) a block.
QUANT_TYPES = {"q4_0": (2, 2, 32, 18), "q4_1": (3, 3, 32, 20), "q5_0": (6, 8, 32, 22),
               "q5_1": (7, 9, 32, 24), "q8_0": (8, 7, 32, 34)}
QUANT_VERSION = 2
TYPE_IDS = {"f32": 0, "f16": 1, **{k: v[0] for k, v in QUANT_TYPES.items()}}


class ToolError(Exception):
    """A problem with the tool's input or output: one line naming the file and what is wrong."""


# ---------------------------------------------------------------------------------------------
# Running a tool


def run_tool(main):
    """Runs main(argv); any failure becomes one line on stderr and exit status 1."""
    prog = os.path.basename(sys.argv[0])
    try:
        main(sys.argv[1:])
    except ToolError as e:
        sys.exit(f"{prog}: {e}")
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        sys.exit(f"{prog}: {where}{e.strerror or e}")
    except MemoryError:
        sys.exit(f"{prog}: out of memory")
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # a bug, not bad input: still one line, with a way to see more
        if os.environ.get("WHISPERC_TOOLS_DEBUG"):
            raise
        sys.exit(f"{prog}: internal error: {type(e).__name__}: {e} "
                 "(set WHISPERC_TOOLS_DEBUG=1 for a traceback)")


# ---------------------------------------------------------------------------------------------
# Model sizes and the tensor layout

# openai-whisper's _MODELS, as src/model/model_file.c model_size_hparams() lists them:
# (audio layers, state, mels, text layers, n_vocab of the multilingual model); heads = state / 64.
_SIZES = {
    "tiny": (4, 384, 80, 4, 51865),
    "base": (6, 512, 80, 6, 51865),
    "small": (12, 768, 80, 12, 51865),
    "medium": (24, 1024, 80, 24, 51865),
    "large-v1": (32, 1280, 80, 32, 51865),
    "large-v2": (32, 1280, 80, 32, 51865),
    "large-v3": (32, 1280, 128, 32, 51866),
    "large-v3-turbo": (32, 1280, 128, 4, 51866),
}
SIZE_NAMES = ("tiny.en", "tiny", "base.en", "base", "small.en", "small", "medium.en", "medium",
              "large-v1", "large-v2", "large-v3", "large-v3-turbo")


def size_hparams(name):
    """The hparams of an official model size (f16), or ToolError."""
    if name not in SIZE_NAMES:
        raise ToolError(f"unknown model size {name!r}; expected one of {', '.join(SIZE_NAMES)}")
    english = name.endswith(".en")
    n_audio_layer, state, n_mels, n_text_layer, n_vocab = _SIZES[name.removesuffix(".en")]
    return dict(n_vocab=51864 if english else n_vocab, n_audio_ctx=1500, n_audio_state=state,
                n_audio_head=state // 64, n_audio_layer=n_audio_layer, n_text_ctx=448,
                n_text_state=state, n_text_head=state // 64, n_text_layer=n_text_layer,
                n_mels=n_mels, ftype=1)


def describe(hp):
    """"tiny.en", "large-v1/large-v2", or the dimensions of a custom model."""
    keys = HPARAM_KEYS[:-1]
    names = [n for n in SIZE_NAMES if all(size_hparams(n)[k] == hp[k] for k in keys)]
    if names:
        return "/".join(names)
    return (f"custom: {hp['n_audio_layer']}+{hp['n_text_layer']} layers, state "
            f"{hp['n_audio_state']}, {hp['n_mels']} mels, n_vocab {hp['n_vocab']}")


def is_multilingual(hp):
    return hp["n_vocab"] >= 51865


# whisper-c's loader bounds (src/model/model_file.c)
_LIMITS = dict(n_vocab=51866, n_audio_ctx=1500, n_audio_state=8192, n_audio_head=256,
               n_audio_layer=64, n_text_ctx=4096, n_text_state=8192, n_text_head=256,
               n_text_layer=64, n_mels=128)


def check_hparams(hp, where):
    """The checks whisper-c's loader makes, so a converter fails before writing, not after."""
    for key in HPARAM_KEYS[:-1]:
        value, limit = hp.get(key), _LIMITS[key]
        if type(value) is not int or not 1 <= value <= limit:
            raise ToolError(f"{where}: hparams: {key} is {value!r}, expected 1 to {limit}")
    if hp["n_mels"] not in (80, 128):
        raise ToolError(f"{where}: hparams: n_mels is {hp['n_mels']}, expected 80 or 128")
    if not 51864 <= hp["n_vocab"] <= 51866:
        raise ToolError(f"{where}: hparams: n_vocab is {hp['n_vocab']}, expected 51864 (.en), "
                        "51865 or 51866 (multilingual)")
    for part in ("audio", "text"):
        state, heads = hp[f"n_{part}_state"], hp[f"n_{part}_head"]
        if state % heads:
            raise ToolError(f"{where}: hparams: n_{part}_head {heads} does not divide "
                            f"n_{part}_state {state}")
    if hp["n_audio_state"] != hp["n_text_state"]:
        raise ToolError(f"{where}: hparams: n_audio_state {hp['n_audio_state']} differs from "
                        f"n_text_state {hp['n_text_state']}")


def _attention(prefix, s):
    return [(f"{prefix}.query.weight", (s, s)), (f"{prefix}.query.bias", (s,)),
            (f"{prefix}.key.weight", (s, s)), (f"{prefix}.value.weight", (s, s)),
            (f"{prefix}.value.bias", (s,)), (f"{prefix}.out.weight", (s, s)),
            (f"{prefix}.out.bias", (s,)), (f"{prefix}_ln.weight", (s,)), (f"{prefix}_ln.bias", (s,))]


def _block(prefix, s, cross):
    t = _attention(f"{prefix}.attn", s)
    if cross:
        t += _attention(f"{prefix}.cross_attn", s)
    return t + [(f"{prefix}.mlp.0.weight", (4 * s, s)), (f"{prefix}.mlp.0.bias", (4 * s,)),
                (f"{prefix}.mlp.2.weight", (s, 4 * s)), (f"{prefix}.mlp.2.bias", (s,)),
                (f"{prefix}.mlp_ln.weight", (s,)), (f"{prefix}.mlp_ln.bias", (s,))]


def tensor_layout(hp):
    """[(name, shape)] of openai-whisper's state dict, in its order (each module's own parameters
    and buffers before its children's), which is the order whisper.cpp files keep. Shapes are
    PyTorch order; conv biases are [n, 1] as whisper.cpp stores them."""
    sa, st = hp["n_audio_state"], hp["n_text_state"]
    t = [("encoder.positional_embedding", (hp["n_audio_ctx"], sa)),
         ("encoder.conv1.weight", (sa, hp["n_mels"], 3)), ("encoder.conv1.bias", (sa, 1)),
         ("encoder.conv2.weight", (sa, sa, 3)), ("encoder.conv2.bias", (sa, 1))]
    for i in range(hp["n_audio_layer"]):
        t += _block(f"encoder.blocks.{i}", sa, cross=False)
    t += [("encoder.ln_post.weight", (sa,)), ("encoder.ln_post.bias", (sa,)),
          ("decoder.positional_embedding", (hp["n_text_ctx"], st)),
          ("decoder.token_embedding.weight", (hp["n_vocab"], st))]
    for i in range(hp["n_text_layer"]):
        t += _block(f"decoder.blocks.{i}", st, cross=True)
    return t + [("decoder.ln.weight", (st,)), ("decoder.ln.bias", (st,))]


def stored_type(name, shape, outtype):
    """whisper.cpp's choice: vectors, conv biases and both positional embeddings stay f32 (they are
    added, not multiplied); matrices and conv kernels take the file's type."""
    if outtype == "f32" or len(shape) == 1 or name.endswith(("conv1.bias", "conv2.bias",
                                                             "positional_embedding")):
        return "f32"
    return "f16"


# ---------------------------------------------------------------------------------------------
# Mel filters


_F_SP = 200.0 / 3                  # Slaney: 3 mels per 200 Hz below 1 kHz ...
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = np.log(6.4) / 27.0      # ... and log-spaced above, 27 mels per factor 6.4


def _hz_to_mel(hz):
    hz = np.asarray(hz, np.float64)
    log_part = _MIN_LOG_MEL + np.log(np.maximum(hz, _MIN_LOG_HZ) / _MIN_LOG_HZ) / _LOGSTEP
    return np.where(hz >= _MIN_LOG_HZ, log_part, hz / _F_SP)


def _mel_to_hz(mel):
    mel = np.asarray(mel, np.float64)
    log_part = _MIN_LOG_HZ * np.exp(_LOGSTEP * (mel - _MIN_LOG_MEL))
    return np.where(mel >= _MIN_LOG_MEL, log_part, _F_SP * mel)


def mel_filters(n_mels, sample_rate=16000, n_fft=400):
    """Slaney-normalised triangular mel filters, float32 [n_mels][n_fft/2+1]: what
    librosa.filters.mel(sr, n_fft, n_mels) returns and OpenAI shipped as mel_filters.npz. The
    rounding steps follow librosa's (triangles rounded to float32, then scaled in float64 and
    rounded again), so the result is bit-identical, not merely close."""
    fft_hz = np.fft.rfftfreq(n_fft, 1.0 / sample_rate)
    edges_hz = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(sample_rate / 2), n_mels + 2))
    widths = np.diff(edges_hz)
    ramps = edges_hz[:, None] - fft_hz[None, :]
    filters = np.zeros((n_mels, fft_hz.size), np.float32)
    for i in range(n_mels):
        rising = -ramps[i] / widths[i]
        falling = ramps[i + 2] / widths[i + 1]
        filters[i] = np.maximum(0, np.minimum(rising, falling))
    filters *= (2.0 / (edges_hz[2:] - edges_hz[:-2]))[:, None]  # equal area per filter
    # Filter 0 at 0 Hz is -0.0 (np.maximum(0, -0.0)) in librosa's output and mel_filters.npz,
    # +0.0 in the ggml files: adding +0.0 turns -0.0 into +0.0 and changes nothing else.
    return filters + np.float32(0.0)


# ---------------------------------------------------------------------------------------------
# Byte-level BPE tokens


def _byte_alphabet():
    """GPT-2's byte-level alphabet: the printable Latin-1 bytes stand for themselves, the other 68
    bytes for U+0100, U+0101, ... in byte order (so a token is a printable string)."""
    kept = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {b: chr(b) for b in kept}
    for n, b in enumerate(b for b in range(256) if b not in table):
        table[b] = chr(0x100 + n)
    return table


BYTE_TO_CHAR = _byte_alphabet()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


def token_bytes(text, where):
    """The bytes a byte-level token string ("Ġthe") stands for."""
    try:
        return bytes(CHAR_TO_BYTE[c] for c in text)
    except KeyError:
        raise ToolError(f"{where}: token {text!r} is not a byte-level BPE token") from None


def token_text(data):
    return "".join(BYTE_TO_CHAR[b] for b in data)


def ggml_vocab(tokens, n_vocab, where):
    """The N_STORED_TOKENS byte strings a ggml file holds, from the exact token bytes by id.

    An English-only vocabulary (GPT-2's 50256 ranks) stores <|endoftext|> as id 50256; a
    multilingual one has 50257 ranks, the last one empty. Tokens that are not valid UTF-8 alone
    (b"\\xa1", half a character) are stored as whisper.cpp's files hold them, decoded with
    U+FFFD replacement and re-encoded: lossy, but it keeps the files bit-identical
    (src/model/vocab_fix.c restores the exact bytes on load)."""
    multilingual = n_vocab >= 51865
    tokens = list(tokens[:N_STORED_TOKENS])
    if not multilingual and len(tokens) == N_STORED_TOKENS - 1:
        tokens.append(EOT_TEXT)
    kind = "a multilingual" if multilingual else "an English-only"
    if len(tokens) < N_STORED_TOKENS:
        need = N_STORED_TOKENS if multilingual else N_STORED_TOKENS - 1
        raise ToolError(f"{where}: {len(tokens)} BPE tokens, {kind} model (n_vocab {n_vocab}) "
                        f"needs {need}")
    if (tokens[-1] == EOT_TEXT) == multilingual:
        raise ToolError(f"{where}: token 50256 is {tokens[-1]!r}, wrong for {kind} model "
                        f"(n_vocab {n_vocab}): is this the other tokenizer?")
    return [t.decode("utf-8", errors="replace").encode() for t in tokens]


# ---------------------------------------------------------------------------------------------
# Writing


def write_ggml(path, hp, vocab, get_tensor, source, outtype="f16", layout_only=False):
    """Writes a ggml file at `path` (through path.part, renamed when complete, so a failure
    leaves nothing behind). get_tensor(name) returns each tensor of tensor_layout(hp) as a numpy
    float array in PyTorch order, one at a time, so memory holds one tensor, not the model.
    float16 data written as f16 keeps its bits; f32 <- f16 is exact; f16 <- f32 rounds.
    layout_only: every header is written, tensor data is left as a file hole (zeros): a
    full-size file costing little disk or time, for checking layouts. Returns the file size."""
    check_hparams(hp, source)
    hp = dict(hp, ftype=FTYPES[outtype])
    part = path + ".part"
    try:
        f = open(part, "wb")
    except OSError as e:
        raise ToolError(f"{path}: cannot write: {e.strerror}") from None
    try:
        with f:
            f.write(struct.pack("<I11i", GGML_MAGIC, *(hp[k] for k in HPARAM_KEYS)))
            filters = mel_filters(hp["n_mels"])
            f.write(struct.pack("<2i", *filters.shape))
            f.write(filters.astype("<f4").tobytes())
            f.write(struct.pack("<i", len(vocab)))
            for token in vocab:
                f.write(struct.pack("<I", len(token)) + token)
            for name, shape in tensor_layout(hp):
                ttype = stored_type(name, shape, outtype)
                write_tensor_header(f, name, shape, ttype)
                n_bytes = int(np.prod(shape)) * (2 if ttype == "f16" else 4)
                if layout_only:
                    f.seek(n_bytes, os.SEEK_CUR)
                    continue
                data = _as_stored(get_tensor(name), name, shape, ttype, source)
                f.write(data.tobytes())
            f.truncate()  # a trailing hole needs the size set explicitly
            size = f.tell()
        os.replace(part, path)
        return size
    except BaseException:
        if os.path.exists(part):
            os.remove(part)
        raise


def write_tensor_header(f, name, shape, ttype):
    """A tensor's record up to its data: shape in PyTorch order, ttype a TYPE_IDS name."""
    encoded = name.encode()
    ne = tuple(reversed(shape))  # ggml: innermost dimension first
    f.write(struct.pack(f"<3i{len(ne)}i", len(ne), len(encoded), TYPE_IDS[ttype], *ne) + encoded)


def _as_stored(array, name, shape, ttype, source):
    array = np.asarray(array)
    if array.shape != shape and not (shape[1:] == (1,) and array.shape == shape[:1]):
        raise ToolError(f"{source}: tensor {name}: expected shape {list(shape)}, found "
                        f"{list(array.shape)}")
    if array.dtype.kind != "f":
        raise ToolError(f"{source}: tensor {name}: dtype {array.dtype}, expected a float type")
    return np.ascontiguousarray(array, "<f2" if ttype == "f16" else "<f4")


# ---------------------------------------------------------------------------------------------
# Reading


class GgmlFile:
    """A ggml file's header, filters and vocab, and an index of its tensors (data read on demand).
    tensors: {name: (shape in PyTorch order, "f16"|"f32", offset, n_bytes)} in file order."""

    def __init__(self, path):
        self.path = path
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(48)
            if len(head) < 48 or struct.unpack_from("<I", head)[0] != GGML_MAGIC:
                raise ToolError(f"{path}: not a ggml model file")
            self.hp = dict(zip(HPARAM_KEYS, struct.unpack_from("<11i", head, 4)))
            n_mels, n_bins = self._ints(f, 2, "the mel filter header")
            self.filters = np.frombuffer(self._take(f, 4 * n_mels * n_bins, "the mel filters"),
                                         "<f4").reshape(n_mels, n_bins)
            (n_tokens,) = self._ints(f, 1, "the vocabulary")
            self.vocab = []
            for _ in range(n_tokens):
                (n,) = self._ints(f, 1, "the vocabulary")
                self.vocab.append(self._take(f, n, "the vocabulary"))
            self.tensors_offset = f.tell()
            self.tensors = {}
            while f.tell() < size:
                n_dims, name_len, ttype = self._ints(f, 3, "a tensor header")
                ne = self._ints(f, n_dims, "a tensor header")
                name = self._take(f, name_len, "a tensor name").decode(errors="replace")
                tname = _TYPE_NAMES.get(ttype)
                if tname is None:
                    raise ToolError(f"{path}: tensor {name} has ggml type {ttype}, not f32, f16 "
                                    f"or one of {', '.join(QUANT_TYPES)}")
                n_bytes = int(np.prod(ne)) * (2 if ttype == 1 else 4)
                if tname in QUANT_TYPES:
                    _, _, block, block_bytes = QUANT_TYPES[tname]
                    n_bytes = int(np.prod(ne)) // block * block_bytes
                if f.tell() + n_bytes > size:
                    raise ToolError(f"{path}: truncated: tensor {name} runs past the end")
                self.tensors[name] = (tuple(reversed(ne)), tname, f.tell(), n_bytes)
                f.seek(n_bytes, os.SEEK_CUR)

    def _take(self, f, n, what):
        data = f.read(n)
        if len(data) != n:
            raise ToolError(f"{self.path}: truncated: the file ends inside {what}")
        return data

    def _ints(self, f, n, what):
        return struct.unpack(f"<{n}i", self._take(f, 4 * n, what))

    def raw(self, name):
        """The tensor's bytes as stored."""
        _, _, offset, n_bytes = self.tensors[name]
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read(n_bytes)

    def tensor(self, name):
        """The tensor as stored: float16 or float32 numpy array, PyTorch-order shape; quantized
        blocks widened to float32 by the gguf package (ggml's values exactly)."""
        shape, ttype, _, _ = self.tensors[name]
        data = self.raw(name)
        if ttype in QUANT_TYPES:
            quants, qtype = gguf_quants(ttype)
            blocks = np.frombuffer(data, np.uint8).reshape(shape[0], -1)
            return quants.dequantize(blocks, qtype).reshape(shape)
        return np.frombuffer(data, "<f2" if ttype == "f16" else "<f4").reshape(shape)


_TYPE_NAMES = {v: k for k, v in TYPE_IDS.items()}


def gguf_quants(type_name):
    """(gguf.quants, its GGMLQuantizationType) for a QUANT_TYPES name: llama.cpp's Python package
    (PyPI gguf) implements ggml's block formats in numpy, bit for bit as ggml's C reference."""
    try:
        from gguf import quants
        from gguf.constants import GGMLQuantizationType
    except ImportError as e:
        raise ToolError(f"{type_name} tensors need the gguf package (pip install gguf): {e}") \
            from None
    return quants, GGMLQuantizationType[type_name.upper()]
