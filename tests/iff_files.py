"""iff_files — small AIFF and CAF files built byte by byte (16 kHz s16 mono silence), with
chunks whose sizes lie: the hostile cases of test_hostile.py and the fuzz seeds of
tools/make-fuzz-corpus. libsndfile's aiff.c and caf.c; the audit is in docs/reliability.md."""
import struct


def ext80(rate):
    """An integer sample rate as the 80-bit extended float of an AIFF COMM chunk."""
    e = rate.bit_length() - 1
    return struct.pack(">HQ", 16383 + e, rate << (63 - e))


def iff_chunk(marker, payload, size=None):
    """A big-endian IFF chunk with its pad byte; `size`: the size field, if not the payload's."""
    n = len(payload) if size is None else size
    return marker + struct.pack(">I", n) + payload + b"\0" * (len(payload) & 1)


def aiff(extra=b"", frames=8000):
    """0.5 s of 16 kHz s16 silence: FORM AIFF, COMM, `extra` chunks, SSND."""
    comm = iff_chunk(b"COMM", struct.pack(">hIh", 1, frames, 16) + ext80(16000))
    ssnd = iff_chunk(b"SSND", struct.pack(">II", 0, 0) + b"\0" * (2 * frames))
    body = b"AIFF" + comm + extra + ssnd
    return b"FORM" + struct.pack(">I", len(body)) + body


def caf_chunk(marker, payload, size=None):
    return marker + struct.pack(">q", len(payload) if size is None else size) + payload


def caf(chunks=None, frames=8000, desc_size=32):
    """CAF: desc (16 kHz s16 mono), then `chunks`, by default 0.5 s of silence in a data chunk."""
    desc = struct.pack(">d", 16000.0) + b"lpcm" + struct.pack(">IIIII", 2, 2, 1, 1, 16)
    data = caf_chunk(b"data", b"\0" * (4 + 2 * frames))
    return (b"caff" + struct.pack(">hh", 1, 0) + b"desc" + struct.pack(">q", desc_size) + desc
            + (data if chunks is None else chunks))
