#!/usr/bin/env python3
"""test_hostile.py — whisper-c against hostile model files, audio files and arguments.

usage: test_hostile.py WHISPER_C SHARED_DIR [B_SANITIZE] [--update-doc]

Every input is made at run time in a temporary folder. Each case must exit with the status it
expects (non-zero for a refusal, 0 where the input is valid), print one stderr line that names
the problem, trip no sanitizer and end within 10 s (60 s in a sanitizer build, B_SANITIZE not
"none"). docs/reliability.md holds the table of what
the user is told; the test fails when the table is out of date (--update-doc rewrites it).
Exits 77 (skip) when the shared model or header-only test model is missing.
"""
import base64
import math
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import tempfile

from iff_files import aiff, caf, caf_chunk, ext80, iff_chunk
import time

import testlib
from testlib import check

sanitized = len(sys.argv) > 3 and sys.argv[3] not in ("", "none", "--update-doc")
TIMEOUT_S = 60 if sanitized else 10
DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "reliability.md")
BEGIN, END = "<!-- hostile-table:begin -->", "<!-- hostile-table:end -->"

exe = os.path.abspath(sys.argv[1])
shared = testlib.shared_dir(sys.argv[2])
update_doc = "--update-doc" in sys.argv[3:]
model = os.path.join(shared, "models", "ggml-tiny.en.bin")
header_only = os.path.join(shared, "reference", "for-tests-ggml-tiny.en.bin")
jfk = os.path.join(shared, "audio", "jfk", "jfk.wav")
testlib.skip_unless_exist([model, header_only, jfk])


# ---- hostile files -------------------------------------------------------------------------

HP = ["n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer", "n_text_ctx",
      "n_text_state", "n_text_head", "n_text_layer", "n_mels", "ftype"]


def ggml_layout(b):
    """Offsets in a ggml file: (mel filters, vocabulary, end of vocabulary)."""
    o_mel = 48
    n_mel, n_fft = struct.unpack_from("<ii", b, o_mel)
    o_vocab = o_mel + 8 + n_mel * n_fft * 4
    n, = struct.unpack_from("<i", b, o_vocab)
    o = o_vocab + 4
    for _ in range(n):
        ln, = struct.unpack_from("<I", b, o)
        o += 4 + ln
    return o_mel, o_vocab, o


HDR = open(header_only, "rb").read()
O_MEL, O_VOCAB, O_TENSORS = ggml_layout(HDR)


def with_hparam(name, value):
    b = bytearray(HDR)
    struct.pack_into("<i", b, 4 + 4 * HP.index(name), value)
    return bytes(b)


def tensor(name, ne, ttype=0, n_dims=None, name_len=None, data=None):
    """One ggml tensor record: n_dims, name length, type, ne[] (ggml order), name, data."""
    nb = name.encode() if isinstance(name, str) else name
    h = struct.pack("<iii", len(ne) if n_dims is None else n_dims,
                    len(nb) if name_len is None else name_len, ttype)
    h += b"".join(struct.pack("<i", d) for d in ne) + nb
    if data is None:
        data = b"\0" * (4 * max(1, math.prod(max(d, 0) for d in ne)))
    return h + data


# Silero VAD files (tools/convert-silero-vad's layout): name, ggml shape, type (1: f16)
SILERO = [(f"_model.encoder.{i}.reparam_conv.{p}", ne, t)
          for i, (ci, co) in enumerate(((129, 128), (128, 64), (64, 64), (64, 128)))
          for p, ne, t in (("weight", [3, ci, co], 1), ("bias", [co], 0))]
SILERO += [("_model.decoder.rnn.weight_ih", [128, 512], 0),
           ("_model.decoder.rnn.weight_hh", [128, 512], 0),
           ("_model.decoder.rnn.bias_ih", [512], 0), ("_model.decoder.rnn.bias_hh", [512], 0),
           ("_model.decoder.decoder.2.weight", [128], 1), ("_model.decoder.decoder.2.bias", [], 0),
           ("_model.stft.forward_basis_buffer", [256, 1, 258], 1)]


def silero(kind=b"silero-16k", skip=None, shape=None, value=None):
    """A Silero VAD file of zero weights; skip drops a tensor, shape replaces the first one's,
    value fills the last one's data with a 4-byte pattern."""
    h = struct.pack("<Ii", 0x67676D6C, len(kind)) + kind + struct.pack("<3i", 5, 1, 2)
    h += struct.pack("<3i", 512, 64, 4) + struct.pack("<12i", 129, 128, 3, 128, 64, 3, 64, 64,
                                                         3, 64, 128, 3)
    h += struct.pack("<4i", 128, 128, 128, 1)
    for i, (name, ne, t) in enumerate(SILERO):
        if name == skip:
            continue
        ne = shape if shape and i == 0 else ne
        n = (2 if t else 4) * math.prod(ne)
        data = value * (n // 4) if value and i == len(SILERO) - 1 else b"\0" * n
        h += tensor(name, ne, t, data=data)
    return h


def wav(rate, channels, frames, fmt="s16", value=0.0, bad=None):
    """A RIFF WAVE file: PCM s16, or IEEE float ("f32") with `bad` written at frame 10."""
    if fmt == "s16":
        bits, tag = 16, 1
        data = struct.pack("<h", int(value * 32767)) * (frames * channels)
    else:
        bits, tag = 32, 3
        vals = [value] * (frames * channels)
        if bad is not None and frames > 10:
            vals[10 * channels] = bad
        data = struct.pack(f"<{len(vals)}f", *vals)
    ba = channels * bits // 8
    fmt_chunk = struct.pack("<HHIIHH", tag, channels, rate, rate * ba, ba, bits)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt_chunk)) + fmt_chunk
    body += b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


LIST_LOOP_WAV = ("UklGRkZfBQBXQVZFZm10IBAAAAABAAEAgD4Aen0AAAACABAATElTVBoAAABJTkZPSVFGVPj///+z"
                 "noGZNTkuMjcuMTAwAGRhdGEAAACiAAAAAAAAAAD/6w==")


def wav_with_list(marker, text):
    """1 s of silence at 16 kHz after a LIST INFO chunk holding one sub-chunk; an odd-sized text
    gets no pad byte of its own, only the LIST's, as some writers do."""
    pcm = wav(16000, 1, 16000)
    fmt_end = 12 + 8 + 16
    body = b"INFO" + marker + struct.pack("<I", len(text)) + text
    lst = b"LIST" + struct.pack("<I", len(body)) + body + b"\0" * (len(body) & 1)
    out = pcm[:fmt_end] + lst + pcm[fmt_end:]
    return out[:4] + struct.pack("<I", len(out) - 8) + out[8:]


# ---- AIFF and CAF (libsndfile's aiff.c and caf.c; the audit is in docs/reliability.md) ----

def sparse(path, head, total):
    """A file of `total` bytes that is `head` and then a hole: gigabytes that take no disk."""
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(total)
    return path


# ---- the cases -------------------------------------------------------------------------------
# (id, what the input is, setup -> argv, expected exit: 0 or "fail", words the message must hold)

def T(*args):
    return ["transcribe", "-np", "-t", "2", *args]


def cases(tmp):
    def f(name, content, mode=None):
        p = os.path.join(tmp, name)
        with open(p, "wb") as fh:
            fh.write(content)
        if mode is not None:
            os.chmod(p, mode)
        return p

    fifo = os.path.join(tmp, "fifo.wav")
    os.mkfifo(fifo)
    subdir = os.path.join(tmp, "dir.wav")
    os.mkdir(subdir)
    with open(model, "rb") as fh:
        real5m = fh.read(5 << 20)
    ln_bias = tensor("encoder.ln_post.bias", [384])
    c = []
    add = lambda *a: c.append(a)

    # model files
    add("model-missing", "model file does not exist",
        T("-m", os.path.join(tmp, "nope.bin"), jfk), "fail", ["nope.bin", "No such file"])
    add("model-dir", "model path is a directory", T("-m", subdir, jfk), "fail",
        ["not a regular file"])
    add("model-fifo", "model path is a FIFO with no writer", T("-m", fifo, jfk), "fail",
        ["not a regular file"])
    add("model-devzero", "model is /dev/zero", T("-m", "/dev/zero", jfk), "fail",
        ["not a regular file"])
    add("model-empty", "model file of 0 bytes", T("-m", f("empty.bin", b""), jfk), "fail",
        ["empty"])
    add("model-3bytes", "model file of 3 bytes", T("-m", f("3.bin", b"ggm"), jfk), "fail",
        ["not a ggml model file"])
    add("model-magic", "wrong magic number", T("-m", f("magic.bin", b"GGUF" + HDR[4:]), jfk),
        "fail", ["magic"])
    for off in (6, 47, 52, 1000, O_VOCAB + 2, O_VOCAB + 200000, O_TENSORS - 1):
        add(f"model-trunc-{off}", f"header-only model cut at byte {off}",
            T("-m", f(f"trunc{off}.bin", HDR[:off]), jfk), "fail", ["truncated"])
    add("model-trunc-data", "real model cut at 5 MiB (inside tensor data)",
        T("-m", f("trunc5m.bin", real5m), jfk), "fail", ["runs past the end of the file"])
    for name, val, words in (
            ("n_vocab", 2**31 - 1, ["n_vocab is 2147483647"]),
            ("n_vocab", -1, ["n_vocab is -1"]),
            ("n_audio_state", -384, ["n_audio_state is -384"]),
            ("n_audio_head", 0, ["n_audio_head is 0"]),
            ("n_audio_head", 7, ["does not divide"]),
            ("n_audio_head", 1, ["heads of 384 (audio)", "at most 256"]),
            ("n_text_state", 768, ["differs from n_text_state 768"]),
            ("n_audio_layer", 1 << 30, ["n_audio_layer is 1073741824"]),
            ("n_text_ctx", -2**31, ["n_text_ctx is -2147483648"]),
            ("n_audio_ctx", 3000, ["n_audio_ctx is 3000"]),
            ("n_mels", 81, ["n_mels is 81"]),
            ("ftype", 8, ["q5_0", "quantization version 0", "is not supported"]),
            ("ftype", -1, ["ftype is -1"])):
        add(f"hparam-{name}-{val}", f"hparams: {name} = {val}",
            T("-m", f(f"hp-{name}-{val}.bin", with_hparam(name, val)), jfk), "fail", words)
    b = bytearray(HDR)
    struct.pack_into("<i", b, O_MEL + 4, 200)
    add("mel-shape", "mel filter header says 80x200", T("-m", f("mel.bin", bytes(b)), jfk),
        "fail", ["mel filters are 80x200"])
    b = bytearray(HDR)
    struct.pack_into("<f", b, O_MEL + 8 + 4 * 1234, float("nan"))
    add("mel-nan", "NaN in the mel filters", T("-m", f("melnan.bin", bytes(b)), jfk), "fail",
        ["not finite"])
    b = bytearray(HDR)
    struct.pack_into("<i", b, O_VOCAB, 2**31 - 1)
    add("vocab-huge", "vocabulary count 2^31-1 (larger than the file)",
        T("-m", f("vocabn.bin", bytes(b)), jfk), "fail", ["vocabulary has 2147483647 tokens"])
    b = bytearray(HDR)
    struct.pack_into("<I", b, O_VOCAB + 4, 0xFFFFFFFF)
    add("vocab-token-len", "first token's length 2^32-1",
        T("-m", f("vocablen.bin", bytes(b)), jfk), "fail", ["has length 4294967295"])
    add("tensors-none", "header only, no tensors", T("-m", header_only, jfk), "fail",
        ["encoder.conv1.weight missing"])
    add("tensor-name-huge", "tensor name length 2^31-1",
        T("-m", f("tname.bin", HDR + tensor("x", [384], name_len=2**31 - 1)), jfk), "fail",
        ["bad header", "name length 2147483647"])
    add("tensor-ndims-neg", "tensor n_dims -1",
        T("-m", f("tndims.bin", HDR + tensor("encoder.ln_post.bias", [384], n_dims=-1)), jfk),
        "fail", ["bad header", "n_dims -1"])
    add("tensor-dim-neg", "tensor dimension -384",
        T("-m", f("tdim.bin", HDR + tensor("encoder.ln_post.bias", [-384], data=b"")), jfk),
        "fail", ["(f32): expected [384], found [-384]"])
    add("tensor-unknown", "tensor with an unknown name",
        T("-m", f("tunk.bin", HDR + tensor("encoder.evil", [384])), jfk), "fail",
        ["unknown tensor encoder.evil"])
    add("tensor-quant", "tensor of type q4_K (k-quants are not read)",
        T("-m", f("tq.bin", HDR + tensor("encoder.ln_post.bias", [384], ttype=12)), jfk), "fail",
        ["type q4_K", "supported: f32, f16, q4_0"])
    add("tensor-quant-rows", "q8_0 tensor whose rows (3 values) are not whole blocks",
        T("-m", f("tqr.bin", HDR + tensor("encoder.conv1.weight", [3, 80, 384], ttype=8)), jfk),
        "fail", ["q8_0 rows of 3 values are not whole blocks of 32"])
    add("tensor-type-bad", "tensor type 1000",
        T("-m", f("ttype.bin", HDR + tensor("encoder.ln_post.bias", [384], ttype=1000)), jfk),
        "fail", ["invalid type 1000"])
    add("tensor-past-eof", "tensor data past the end of the file",
        T("-m", f("teof.bin", HDR + tensor("encoder.ln_post.bias", [384], data=b"\0" * 100)),
          jfk), "fail", ["runs past the end of the file"])
    add("tensor-duplicate", "the same tensor twice (overlapping names)",
        T("-m", f("tdup.bin", HDR + ln_bias + ln_bias), jfk), "fail", ["duplicate tensor"])
    add("tensor-trailing", "5 stray bytes after the last tensor",
        T("-m", f("ttrail.bin", HDR + ln_bias + b"\1" * 5), jfk), "fail", ["trailing bytes"])
    add("model-memory", "model needs more than --max-memory 10 (MiB)",
        T("-m", model, "--max-memory", "10", jfk), "fail", ["needs about 74 MiB", "10 MiB"])
    add("state-memory", "model fits, model + decoding state do not: --max-memory 100 (MiB)",
        T("-m", model, "--max-memory", "100", jfk), "fail",
        ["with a decoding state for 1 sequence needs about 134 MiB", "100 MiB"])
    add("beam-memory", "state fits, its 5 beams do not: --max-memory 140 (MiB), -bs 5",
        T("-m", model, "--max-memory", "140", "-bs", "5", jfk), "fail",
        ["decoding state for 5 sequences needs about 155 MiB", "140 MiB"])

    # audio files
    add("audio-missing", "audio file does not exist",
        T("-m", model, os.path.join(tmp, "no.wav")), "fail", ["no.wav", "No such file"])
    add("audio-dir", "audio path is a directory", T("-m", model, subdir), "fail",
        ["Is a directory"])
    add("audio-fifo", "audio path is a FIFO with no writer", T("-m", model, fifo), "fail",
        ["not a regular file (a FIFO)"])
    add("audio-devzero", "audio is /dev/zero", T("-m", model, "/dev/zero"), "fail",
        ["a character device"])
    add("audio-unreadable", "audio file with mode 000",
        T("-m", model, f("secret.wav", wav(16000, 1, 16000), 0)), "fail",
        ["Permission denied"])
    add("audio-empty", "audio file of 0 bytes", T("-m", model, f("empty.wav", b"")), "fail",
        ["empty file"])
    add("audio-text", "a text file named .wav",
        T("-m", model, f("notes.wav", b"not audio at all\n" * 50)), "fail",
        ["not an audio format"])
    add("audio-header-cut", "WAV cut inside its header (20 bytes)",
        T("-m", model, f("cut.wav", open(jfk, "rb").read(20))), "fail", ["not an audio format"])
    # fuzz_audio's timeout (issue 7): a LIST sub-chunk of 0xfffffff8 bytes, which libsndfile
    # 1.2.0 skips with a jump of -8 onto itself, for ever
    add("audio-wav-list-loop", "WAV whose LIST sub-chunk size (-8) loops libsndfile",
        T("-m", model, f("loop.wav", base64.b64decode(LIST_LOOP_WAV))), "fail",
        ["corrupt WAV", "LIST sub-chunk 'IQFT' of 4294967288 bytes in a 26-byte LIST"])
    add("audio-wav-list-overrun", "WAV whose LIST sub-chunk overruns its LIST by its pad byte",
        T("-m", model, f("overrun.wav", wav_with_list(b"ISFT", b"x"))), 0, [])
    # libsndfile 1.2.0's AIFF and CAF parsers skip chunks with an int: sizes that turn into
    # backward jumps. In files under 2 GiB each such jump ends past its chunk's header or is
    # followed by the parser's stop, so these end in an error or a transcript, never a hang.
    add("audio-aiff", "AIFF, 0.5 s of silence (valid)", T("-m", model, f("ok.aiff", aiff())),
        0, [])
    add("audio-aiff-comt-back", "AIFF whose COMT chunk (2 bytes) holds a 10-byte comment: "
        "libsndfile skips back to the chunk's end",
        T("-m", model, f("comt.aiff", aiff(iff_chunk(
            b"COMT", struct.pack(">HIHH", 1, 0, 0, 2) + b"ab", 2)))), "fail",
        ["not an audio format"])
    add("audio-aiff-mark-back", "AIFF whose MARK chunk of 0 bytes holds a marker",
        T("-m", model, f("mark.aiff", aiff(iff_chunk(
            b"MARK", struct.pack(">HHIB", 1, 1, 0, 1) + b"a", 0)))), "fail",
        ["not an audio format"])
    add("audio-aiff-basc-0", "AIFF with a basc chunk of 0 bytes (a skip of -20)",
        T("-m", model, f("basc.aiff", aiff(iff_chunk(b"basc", b"\0" * 20, 0)))), "fail",
        ["not an audio format"])
    add("audio-aiff-none-back", "AIFF with a NONE chunk whose size gives a skip of -2",
        T("-m", model, f("none.aiff", aiff(iff_chunk(b"NONE", b"\0" * 8, 0x01000000)))), "fail",
        ["not an audio format"])
    add("audio-aiff-appl-neg", "AIFF with an APPL chunk of 0xfffffff8 bytes (a skip of -8)",
        T("-m", model, f("appl.aiff", aiff(iff_chunk(b"APPL", b"abcd", 0xfffffff8)))), "fail",
        ["not an audio format"])
    add("audio-aiff-resync", "AIFF with 256 bytes of unprintable markers (resyncs of -3)",
        T("-m", model, f("resync.aiff", aiff(b"\x01" + b"\x01\x02\x03\x04" * 64 + b"\0\0\0"))),
        "fail", ["not an audio format"])
    add("audio-aiff-4g-loop", "4 GiB sparse AIFF whose FVER chunk of 0xfffffff8 bytes jumps "
        "back onto itself",
        T("-m", model, sparse(os.path.join(tmp, "loop.aiff"), aiff()[:12] + iff_chunk(
            b"COMM", struct.pack(">hIh", 1, 8000, 16) + ext80(16000))
            + b"FVER" + struct.pack(">I", 0xfffffff8), (1 << 32) + 65536)), "fail",
        ["corrupt AIFF", "'FVER' chunk of 4294967288 bytes", "jump backwards"])
    add("audio-caf", "CAF, 0.5 s of silence (valid)", T("-m", model, f("ok.caf", caf())), 0, [])
    add("audio-caf-desc-wrap", "CAF whose desc size (2^32 + 8) is skipped as -24",
        T("-m", model, f("desc.caf", caf(desc_size=(1 << 32) + 8))), "fail",
        ["not an audio format"])
    add("audio-caf-data-0", "CAF whose data chunk says 0 bytes (a skip of -4)",
        T("-m", model, f("data0.caf", caf(caf_chunk(b"data", b"\0" * 4, 0)))), "fail",
        ["0 frames"])
    add("audio-caf-free-0", "CAF with 50 free chunks of 0 bytes before its data (valid)",
        T("-m", model, f("free.caf", caf(caf_chunk(b"free", b"", 0) * 50
                                         + caf_chunk(b"data", b"\0" * 3204)))), 0, [])
    add("audio-caf-4g-loop", "4 GiB sparse CAF whose free chunk jumps back onto the one before",
        T("-m", model, sparse(os.path.join(tmp, "loop.caf"), caf(
            caf_chunk(b"free", b"\0" * 244) + b"free" + struct.pack(">q", (1 << 32) - 268)),
            (1 << 32) + 65536)), "fail",
        ["corrupt CAF", "'free' chunk of 4294967028 bytes", "jump backwards"])
    add("audio-0-frames", "WAV with 0 frames", T("-m", model, f("zero.wav", wav(16000, 1, 0))),
        "fail", ["0 frames"])
    add("audio-nan", "float WAV with a NaN sample",
        T("-m", model, f("nan.wav", wav(16000, 1, 1600, "f32", bad=float("nan")))), "fail",
        ["NaN or infinite"])
    add("audio-inf", "float WAV with +Inf",
        T("-m", model, f("inf.wav", wav(16000, 1, 1600, "f32", bad=float("inf")))), "fail",
        ["NaN or infinite"])
    add("audio-huge-sample", "float WAV with a sample of 1e30",
        T("-m", model, f("huge.wav", wav(16000, 1, 1600, "f32", bad=1e30))), "fail",
        ["outside +-10000"])
    add("audio-385khz", "WAV at 385 kHz", T("-m", model, f("385k.wav", wav(385000, 1, 100))),
        "fail", ["385000 Hz is outside 1..384000"])
    add("audio-too-long", "11 s of audio with --max-duration 5",
        T("-m", model, "--max-duration", "5", jfk), "fail", ["longer than the limit of 5 s"])
    add("audio-memory", "1 hour of 1 Hz audio with --max-memory 200 (MiB)",
        T("-m", model, "--max-memory", "200", f("hour.wav", wav(1, 1, 3600))), "fail",
        ["3600.0 s of audio needs about", "200 MiB", "(max_memory_bytes)"])
    add("audio-1hz", "WAV at 1 Hz, 3 samples (valid: 3 s of silence)",
        T("-m", model, f("1hz.wav", wav(1, 1, 3))), 0, [])
    add("audio-384khz", "WAV at 384 kHz, 0.25 s (valid)",
        T("-m", model, f("384k.wav", wav(384000, 1, 96000))), 0, [])
    add("audio-8ch", "WAV with 8 channels, 1 s (valid)",
        T("-m", model, f("8ch.wav", wav(16000, 8, 16000))), 0, [])
    add("audio-data-cut", "WAV whose data chunk is cut short (valid: what is there)",
        T("-m", model, f("short.wav", open(jfk, "rb").read(30000))), 0, [])

    # Silero VAD files (-vm)
    V = lambda name, content: T("-m", model, "-bs", "1", "--vad", "-vm", f(name, content), jfk)
    add("vad-model-missing", "-vm names no file",
        T("-m", model, "--vad", "-vm", os.path.join(tmp, "nope-vad.bin"), jfk), "fail",
        ["nope-vad.bin", "cannot open the VAD model"])
    add("vad-model-fifo", "-vm names a FIFO with no writer",
        T("-m", model, "--vad", "-vm", fifo, jfk), "fail", ["not a regular file"])
    add("vad-model-name", "Silero VAD file with a tensor named with a newline and an escape",
        V("vname.bin", silero() + tensor("x\nline2\x1b[31m", [1])), "fail",
        ["unknown tensor 'x?line2?[31m'"])
    add("vad-model-whisper", "-vm names a Whisper model", T("-m", model, "--vad", "-vm", model,
                                                            jfk), "fail", ["not a 16 kHz Silero VAD"])
    add("vad-model-8k", "Silero VAD file of the 8 kHz model", V("v8k.bin", silero(b"silero-8k")),
        "fail", ["not silero-16k"])
    add("vad-model-cut", "Silero VAD file cut inside its last tensor",
        V("vcut.bin", silero()[:-1000]), "fail", ["truncated tensor data"])
    add("vad-model-shape", "Silero VAD file with a conv kernel of the wrong shape",
        V("vshape.bin", silero(shape=[3, 128, 128])), "fail", ["expected [3, 129, 128]"])
    add("vad-model-no-lstm", "Silero VAD file without an LSTM weight",
        V("vnolstm.bin", silero(skip="_model.decoder.rnn.weight_hh")), "fail",
        ["_model.decoder.rnn.weight_hh' is missing"])
    add("vad-model-nan", "Silero VAD file with NaN weights",
        V("vnan.bin", silero(value=b"\x00\x7e\x00\x7e")), "fail", ["non-finite"])
    add("vad-model-zeros", "Silero VAD file of zero weights (valid: p = 0.5, all speech)",
        V("vzero.bin", silero()), 0, [])

    # arguments
    add("arg-bs-17", "-bs 17", T("-m", model, "-bs", "17", jfk), "fail", ["-bs", "1..16"])
    add("arg-t-huge", "-t 100000", T("-m", model, "-t", "100000", jfk), "fail", ["1..256"])
    add("arg-t-neg", "-t -1", T("-m", model, "-t", "-1", jfk), "fail", ["1..256"])
    add("arg-t-text", "-t abc", T("-m", model, "-t", "abc", jfk), "fail", ["'abc'"])
    add("arg-bo-0", "-bo 0", T("-m", model, "-bo", "0", jfk), "fail", ["-bo", "1..16"])
    add("arg-maxdur-nan", "--max-duration nan", T("-m", model, "--max-duration", "nan", jfk),
        "fail", ["--max-duration", "'nan'"])
    add("arg-maxdur-neg", "--max-duration -5", T("-m", model, "--max-duration", "-5", jfk),
        "fail", ["--max-duration", "'-5'"])
    add("arg-maxmem-0", "--max-memory 0", T("-m", model, "--max-memory", "0", jfk), "fail",
        ["--max-memory"])
    add("arg-mc-empty", "-mc ''", T("-m", model, "-mc", "", jfk), "fail", ["-mc", "got ''"])
    add("arg-seed-neg", "--seed -1", T("-m", model, "--seed", "-1", jfk), "fail",
        ["--seed", "'-1'"])
    add("arg-m-novalue", "-m with no value", ["transcribe", jfk, "-m"], "fail",
        ["-m needs a value"])
    add("arg-lang", "-l xx", T("-m", model, "-l", "xx", jfk), "fail", ["unknown language 'xx'"])
    add("arg-unknown", "an unknown option", T("--frobnicate", jfk), "fail",
        ["unknown option '--frobnicate'"])
    add("arg-of-3", "three -of for two inputs",
        T("-m", model, "-of", "x", "-of", "y", "-of", "z", jfk, jfk), "fail",
        ["3 -of for 2 input(s)"])
    add("arg-no-input", "no input file", T("-m", model), "fail", ["no input file"])
    add("arg-prompt-utf8", "--prompt with invalid UTF-8 bytes (valid)",
        T("-m", model, "-bs", "1", "--prompt", os.fsdecode(b"\xff\xfe\xc3 caf\xc3"), jfk), 0, [])
    return c


# ---- running --------------------------------------------------------------------------------

def run_case(tmp, case):
    cid, what, argv, want, words = case
    # root reads a mode-000 file anyway: that case runs as nobody
    drop = (lambda: os.setuid(65534)) if os.geteuid() == 0 and cid == "audio-unreadable" else None
    t0 = time.time()
    try:
        r = subprocess.run([exe] + argv, capture_output=True, timeout=TIMEOUT_S, cwd=tmp,
                           preexec_fn=drop)
    except subprocess.TimeoutExpired:
        check(False, f"{cid}: finishes within {TIMEOUT_S} s")
        return None
    dt = time.time() - t0
    err = r.stderr.decode("utf-8", "replace")
    lines = [l for l in err.splitlines() if l.strip()]
    sanitizer = "Sanitizer" in err or "runtime error" in err
    ok_rc = r.returncode == 0 if want == 0 else r.returncode not in (0, None) and r.returncode > 0
    msg = lines[0] if lines else ""
    good = ok_rc and not sanitizer
    if want != 0:
        good = good and len(lines) == 1 and msg.startswith("whisper-c: ") and all(
            w in msg for w in words)
    check(good, f"{cid}: exit {r.returncode}, {dt:.1f} s, {msg[:150]!r}"
          + ("" if not sanitizer else " SANITIZER REPORT")
          + ("" if want == 0 or len(lines) == 1 else f" ({len(lines)} lines)"))
    if not good and err:
        print("        stderr: " + err.strip()[-800:].replace("\n", "\n        "))
    shown = msg if want != 0 else "(transcribed; exit 0)"
    shown = shown.replace(tmp, "<tmp>").replace(shared, "<shared>")
    return f"| `{cid}` | {what} | {r.returncode} | {shown.replace('|', '¦')} |"


def doc_rows(text):
    m = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), text, re.S)
    return m.group(1) if m else None


tmp = tempfile.mkdtemp(prefix="wc_hostile_")
try:
    all_cases = cases(tmp)
    rows = ["| case | input | exit | what the user is told (stderr) |", "|---|---|---|---|"]
    for case in all_cases:
        row = run_case(tmp, case)
        rows.append(row if row else f"| `{case[0]}` | {case[1]} | timeout | |")
    check(len(all_cases) >= 40, f"{len(all_cases)} hostile inputs (at least 40)")
    # the audio cases again through standard input ("-": read into memory, decoded through
    # libsndfile's virtual I/O): the same verdict, one line naming "-", no sanitizer report.
    # Regular files up to 64 MiB only (not the 4 GiB sparse ones).
    n_stdin = 0
    for cid, what, argv, want, words in all_cases:
        path = argv[-1]
        if not cid.startswith("audio-") or cid == "audio-unreadable" or not path.startswith(tmp):
            continue
        if not os.path.isfile(path) or os.path.getsize(path) > 64 << 20:
            continue
        n_stdin += 1
        with open(path, "rb") as fh:
            try:
                r = subprocess.run([exe] + argv[:-1] + ["-"], stdin=fh, capture_output=True,
                                   timeout=TIMEOUT_S, cwd=tmp)
            except subprocess.TimeoutExpired:
                check(False, f"{cid} through stdin: finishes within {TIMEOUT_S} s")
                continue
        err = r.stderr.decode("utf-8", "replace")
        lines = [l for l in err.splitlines() if l.strip()]
        sanitizer = "Sanitizer" in err or "runtime error" in err
        if want == 0:
            good = r.returncode == 0
        else:
            good = r.returncode > 0 and len(lines) == 1 and lines[0].startswith("whisper-c: -: ")
        check(good and not sanitizer, f"{cid} through stdin: exit {r.returncode}, "
              f"{(lines[0] if lines else '')[:150]!r}" + (" SANITIZER REPORT" if sanitizer else ""))
    check(n_stdin >= 20, f"{n_stdin} audio cases through stdin (at least 20)")
finally:
    for root, dirs, files in os.walk(tmp):
        for n in files:
            p = os.path.join(root, n)
            if not os.path.islink(p) and stat.S_ISREG(os.lstat(p).st_mode):
                os.chmod(p, 0o600)
    shutil.rmtree(tmp)

table = "\n".join(rows) + "\n"
doc = open(DOC).read() if os.path.exists(DOC) else ""
old = doc_rows(doc)
if update_doc and old is not None:
    open(DOC, "w").write(doc.replace(BEGIN + "\n" + old + END, BEGIN + "\n" + table + END))
    print(f"updated {DOC}")
else:
    check(old == table, "docs/reliability.md's table matches (tests/test_hostile.py "
          "build/whisper-c ../shared --update-doc rewrites it)")
print(f"{testlib.failures} failure(s)")
sys.exit(testlib.exit_status())
