"""ptxemu -- a small SIMT interpreter for the PTX kernels whisper-c generates (no GPU needed).

Usage
-----
    import numpy as np
    from ptxemu import Memory, run

    mem = Memory()                          # flat simulated global memory
    x   = mem.put(np.arange(384, dtype=np.float32))   # -> device address (int)
    out = mem.alloc(384 * 4)                # uninitialised: filled with 0xFF bytes (NaN pattern)
    st  = run(ptx_text, "layernorm_c384", grid=(1, 1, 1), block=(128, 1, 1),
              params=[out, x, g, b, 1], mem=mem, ctas=None)
    y   = mem.get(out, np.float32, 384)     # numpy copy

Memory
    Memory()                  flat global memory; addresses are ints, 256-byte aligned, never 0.
    mem.alloc(nbytes) -> ptr  new buffer, bytes set to 0xFF (reads of unwritten data give NaN).
    mem.put(array)    -> ptr  new buffer holding array's bytes (any numpy dtype, e.g. float16).
    mem.get(ptr, dtype, count) -> numpy array copy.
    mem.prefetched = set()    records the 128-byte lines (address >> 7) prefetch.global.L2 names.
    mem.write(ptr, array)     overwrite bytes at ptr (no allocation).
    An ld.global.nc of a word the same launch stored to is an error (the non-coherent path
    may return what was there before).
    Every global access is bounds-checked against the allocations (a 256-byte gap separates
    them) and alignment-checked; a bad access raises EmuError naming the instruction and thread.

run(ptx_text, kernel_name, grid, block, params, mem, ctas=None, poison=True,
    cooperative=False) -> stats dict
    grid, block: 1-3 tuples.  params: one value per .param of the entry, in .param order:
    ints for integer params (pointers = addresses from mem), floats for .f32/.f64 params
    (a dict {name: value} is accepted too).  ctas: optional list of (x, y, z) CTA ids to run
    (default: every CTA of the grid, in x-fastest order).  poison: fill registers with 0xFF
    bytes at CTA start (shared memory is always filled with 0xFF).  cooperative: every CTA of
    `ctas` resident at once, as a cooperative launch guarantees (grid barriers; see below).
    Returns {'ctas': n, 'steps': SIMT steps executed, 'seconds': wall time,
             'sec_per_cta': ...}.

Execution model
    All threads of a CTA are executed together with numpy (one array element per thread); every
    thread has its own PC.  While all live threads share a PC they run in lock step; on a
    divergent branch the scheduler runs, each step, the threads at the smallest PC (so
    structured code reconverges).  shfl.sync waits until every lane named by its membermask
    has arrived at the same shfl (reading a lane that does not take part is an error, as is a
    deadlock); bar.sync waits for all non-exited threads of the CTA, and a named barrier
    with a thread count (bar.sync 1, 128) for that many threads at barrier 1.  Shared memory is
    per CTA.  Unknown instructions / modifiers raise EmuError naming the instruction.

Floating point
    f32 / f64 arithmetic is IEEE round-to-nearest-even, rounded after every instruction
    (numpy float32 / float64 math, never widened): add/sub/mul/div.rn/sqrt.rn/rcp.rn are exact
    IEEE; fma.rn.f32 is a correctly rounded fused multiply-add (exact product in float64 +
    round-to-odd sum, then one rounding to float32); fma.rn.f64 is exact via fractions.
    cvt.f32.f16 is exact, cvt.rn.f16.f32 rounds to nearest even.  .approx instructions
    (ex2, lg2, rsqrt, sin, cos, tanh, div.approx/full, rcp.approx, sqrt.approx) use numpy
    float32 functions: close to, not bit-equal with, the hardware.  .ftz flushes subnormal
    inputs/outputs; .sat clamps to [0, 1].  NaN results keep numpy's NaN bits (the GPU would
    give the canonical 0x7fffffff).  Not modelled: ptxas contracting mul.f32 + add.f32 (no
    .rn) into an fma -- the emulator rounds each as written; contraction_candidates(ptx_text,
    kernel_name) lists such pairs (none in layernorm / gemv f0, f1, f8, f9).
    atom.global.add.u32 and red.global.add.u32 run thread by thread, CTAs one after another
    (the order `ctas` gives), which is one order a GPU may take; membar / fence are no-ops.
    mma.sync m16n8k16 (f16 operands, f32 accumulate) waits for every lane of the warp, as
    a full-mask shfl.sync, and sums exactly before one rounding to f32: close to a tensor core.
    cp.async (4, 8, 16 bytes, a source size zero-filling the rest; its source address inside an
    allocation even when it reads nothing) is recorded when issued and
    copied at the cp.async.wait_group / wait_all that completes its group: shared memory read
    before the wait holds the old bytes (0xFF: NaN), so a missing wait shows; the barrier a GPU
    needs after the wait, for other threads' copies, is not checked.
    ldmatrix.sync.aligned.m8n8.x1/x2/x4[.trans].shared.b16 likewise waits for the warp: lanes
    8j .. 8j + 7 give the row addresses of matrix j (16-byte aligned rows of 8 halves); lane l
    gets elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of each matrix, or with .trans
    (2 (l % 4), l / 4) and (2 (l % 4) + 1, l / 4), the first in the lower half.
    Not supported (raise EmuError): other mma shapes, other atomics and reductions, tex, local
    memory, dynamic shared memory, non-.rn rounding modes.

Cooperative grids
    A CTA runs as a coroutine that yields after each strong load of global memory
    (ld.acquire / ld.relaxed / ld.volatile: polling a flag that another CTA sets).  Without
    `cooperative` the CTAs still run one after another, and a CTA that yields SPIN_LIMIT times
    is reported as waiting for another CTA.  With it, the CTAs take turns, each until its next
    yield or its end, their registers, specials and shared memory saved and restored around
    each turn: in `ctas` order, or with `seed` a CTA drawn at random each turn (so one that
    passes a barrier too early runs ahead); 100 turns a live CTA in which no CTA starts, ends
    or stores to global memory are reported as a deadlock.  So a grid barrier (arrive with red.release,
    poll with ld.acquire) works, and one that cannot be passed is an error, not a hang.

Used by tests/test_ptx_emulated.py; for a kernel of your own, `whisper-c ptx --size NAME --out
DIR` writes every kernel of a model size.
"""

import math
import re
import time
from fractions import Fraction

import numpy as np

__all__ = ["Memory", "run", "EmuError", "parse", "contraction_candidates"]


class EmuError(RuntimeError):
    pass


# --------------------------------------------------------------------------------------------
# memory

class _Space:
    """A byte-addressed space backed by one numpy uint8 buffer with typed views."""

    def __init__(self, base, cap):
        self.base = base
        self._set(np.full(cap, 0xFF, np.uint8))

    def _set(self, buf):
        self.buf = buf
        self.views = {1: buf, 2: buf.view(np.uint16), 4: buf.view(np.uint32), 8: buf.view(np.uint64)}

    def _check(self, off, size, what):
        raise NotImplementedError

    def load(self, addr, width, count, what):
        """addr: int array (or int); returns list of `count` uint arrays of `width` bytes."""
        off = np.asarray(addr).astype(np.int64) - self.base
        self._check(off, width * count, what)
        v = self.views[width]
        idx = off >> _LOG2[width]
        return [v[idx + k] for k in range(count)]

    def store(self, addr, width, vals, what):
        off = np.asarray(addr).astype(np.int64) - self.base
        self._check(off, width * len(vals), what)
        v = self.views[width]
        idx = off >> _LOG2[width]
        for k, x in enumerate(vals):
            v[idx + k] = x


_LOG2 = {1: 0, 2: 1, 4: 2, 8: 3}
_STRONG = {"acquire", "relaxed", "volatile"}


class Memory(_Space):
    """Flat simulated global memory (see module docstring)."""

    BASE = 1 << 20
    GAP = 256

    def store(self, addr, width, vals, what):
        self.n_stores += 1  # a cooperative grid whose CTAs all poll without storing is stuck
        super().store(addr, width, vals, what)
        if self.written is not None:  # the 4-byte words this launch wrote
            off = np.asarray(addr, np.int64).reshape(-1) - self.base
            for k in range(len(vals)):
                for b in range(0, width, 4):  # every word an 8-byte element covers
                    self.written[(off + k * width + b) >> 2] = 1

    def check_nc(self, addr, width, count, what):
        """ld.global.nc reads data that stays unchanged during the kernel: one of a word this
        launch wrote is an error (the non-coherent path may return the value from before)."""
        if self.written is None:
            return
        off = np.asarray(addr, np.int64).reshape(-1) - self.base
        for k in range(count):
            if any(self.written[(off + k * width + b) >> 2].any() for b in range(0, width, 4)):
                raise EmuError("%s: ld.global.nc of data this launch wrote" % what)

    def __init__(self, capacity=1 << 22):
        super().__init__(self.BASE, capacity)
        self.top = 0            # next free offset
        self.n_stores = 0
        self.prefetched = None  # a set: the 128-byte lines prefetch.global.L2 names go in it
        self.written = None     # during run(): a flag per 4-byte word stored to
        self.starts = np.zeros(0, np.int64)
        self.ends = np.zeros(0, np.int64)

    def alloc(self, nbytes):
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError("negative size")
        off = self.top
        end = off + nbytes
        need = end + self.GAP
        if need > self.buf.size:
            cap = self.buf.size
            while cap < need:
                cap *= 2
            nb = np.full(cap, 0xFF, np.uint8)
            nb[:self.buf.size] = self.buf
            self._set(nb)
        self.buf[off:end] = 0xFF
        self.top = (end + self.GAP + 255) & ~255
        self.starts = np.append(self.starts, off)
        self.ends = np.append(self.ends, end)
        return self.base + off

    def put(self, arr):
        arr = np.ascontiguousarray(arr)
        p = self.alloc(arr.nbytes)
        self.write(p, arr)
        return p

    def write(self, ptr, arr):
        b = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        off = int(ptr) - self.base
        self._check(np.array([off], np.int64), b.size, "Memory.write", False)
        self.buf[off:off + b.size] = b

    def get(self, ptr, dtype, count):
        dtype = np.dtype(dtype)
        off = int(ptr) - self.base
        n = dtype.itemsize * int(count)
        self._check(np.array([off], np.int64), n, "Memory.get", False)
        return self.buf[off:off + n].copy().view(dtype)

    def _check(self, off, size, what, align=True):
        if off.ndim == 0:
            off = off.reshape(1)
        if off.size == 0:
            return
        lo = int(off.min())
        hi = int(off.max())
        i = int(np.searchsorted(self.starts, lo, "right")) - 1
        if i >= 0 and hi + size <= self.ends[i] and lo >= self.starts[i]:
            ok = True
        else:
            j = np.searchsorted(self.starts, off, "right") - 1
            ok_arr = (j >= 0) & (off + size <= self.ends[np.maximum(j, 0)])
            if not ok_arr.all():
                bad = int(off[~ok_arr][0])
                raise EmuError("%s: global access of %d bytes at 0x%x is outside every allocation"
                               % (what, size, bad + self.base))
            ok = True
        if align and size > 1:
            al = size & -size
            # PTX requires natural alignment of the whole access (vector: whole vector)
            if ((off + self.base) & (al - 1)).any():
                bad = int(off[((off + self.base) & (al - 1)) != 0][0])
                raise EmuError("%s: misaligned %d-byte global access at 0x%x" % (what, size, bad + self.base))
        return ok


class _Shared(_Space):
    def __init__(self, size):
        super().__init__(0, max(8, (size + 7) & ~7))
        self.size = size

    def reset(self):
        self.buf.fill(0xFF)

    def _check(self, off, size, what):
        if off.ndim == 0:
            off = off.reshape(1)
        if off.size == 0:
            return
        lo = int(off.min())
        hi = int(off.max())
        if lo < 0 or hi + size > self.size:
            raise EmuError("%s: shared access of %d bytes at offset %d outside the %d bytes declared"
                           % (what, size, lo if lo < 0 else hi, self.size))
        al = size & -size
        if (off & (al - 1)).any():
            raise EmuError("%s: misaligned %d-byte shared access at offset %d"
                           % (what, size, int(off[(off & (al - 1)) != 0][0])))


# --------------------------------------------------------------------------------------------
# parsing

_TSIZE = {}
for _t in ("pred",):
    _TSIZE[_t] = 0
for _t in ("b8", "u8", "s8"):
    _TSIZE[_t] = 1
for _t in ("b16", "u16", "s16", "f16", "bf16"):
    _TSIZE[_t] = 2
for _t in ("b32", "u32", "s32", "f32", "f16x2", "bf16x2"):
    _TSIZE[_t] = 4
for _t in ("b64", "u64", "s64", "f64"):
    _TSIZE[_t] = 8

_UDT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SDT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
_FDT = {2: np.float16, 4: np.float32, 8: np.float64}


def _kind(t):
    if t in ("f16", "f32", "f64"):
        return "f"
    if t.startswith("s"):
        return "s"
    return "u"


def _dtype(t):
    s = _TSIZE[t]
    k = _kind(t)
    return (_FDT if k == "f" else _SDT if k == "s" else _UDT)[s]


class Instr:
    __slots__ = ("guard", "neg", "op", "mods", "args", "line", "text")

    def __init__(self, guard, neg, op, mods, args, line, text):
        self.guard, self.neg, self.op, self.mods, self.args = guard, neg, op, mods, args
        self.line, self.text = line, text


class Kernel:
    def __init__(self, name):
        self.name = name
        self.params = []        # (type, name)
        self.regs = {}          # name -> type
        self.shared = {}        # name -> offset
        self.shared_size = 0
        self.instrs = []
        self.labels = {}        # label -> instr index


def _strip_comments(s):
    s = re.sub(r"/\*.*?\*/", " ", s, flags=re.S)
    return re.sub(r"//[^\n]*", "", s)


def _split_args(s):
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def parse(ptx_text, kernel_name):
    """Parse one .entry of a PTX module into a Kernel."""
    text = _strip_comments(ptx_text)
    m = re.search(r"\.entry\s+" + re.escape(kernel_name) + r"\s*\(", text)
    if not m:
        raise EmuError("kernel %s not found" % kernel_name)
    i = m.end()
    j = text.index(")", i)
    k = Kernel(kernel_name)
    for p in text[i:j].split(","):
        p = p.strip()
        if not p:
            continue
        pm = re.match(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+(\w+)$", p)
        if not pm:
            raise EmuError("cannot parse param %r" % p)
        k.params.append((pm.group(1), pm.group(2)))
    b0 = text.index("{", j)
    depth, e = 0, b0
    while True:
        if text[e] == "{":
            depth += 1
        elif text[e] == "}":
            depth -= 1
            if depth == 0:
                break
        e += 1
    body = text[b0 + 1:e]
    line_of = ptx_text[:m.start()].count("\n")  # approximate line base (comments stripped)
    shared_off = 0
    for stmt in body.split(";"):
        stmt = stmt.strip()
        while True:
            lm = re.match(r"^([A-Za-z_$][\w$]*)\s*:\s*", stmt)
            if not lm:
                break
            k.labels[lm.group(1)] = len(k.instrs)
            stmt = stmt[lm.end():]
        if not stmt:
            continue
        if stmt.startswith("{") or stmt.startswith("}"):
            raise EmuError("nested scopes not supported: %r" % stmt)
        if stmt.startswith("."):
            toks = stmt.split()
            d = toks[0]
            if d == ".reg":
                t = toks[1].lstrip(".")
                rest = " ".join(toks[2:])
                for r in rest.split(","):
                    r = r.strip()
                    rm = re.match(r"^(%?[\w$]+)<(\d+)>$", r)
                    if rm:
                        for n in range(int(rm.group(2))):
                            k.regs[rm.group(1) + str(n)] = t
                    else:
                        k.regs[r] = t
            elif d == ".shared":
                sm = re.match(r"\.shared\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)\s*(?:\[(\d*)\])?$", stmt)
                if not sm:
                    raise EmuError("cannot parse %r" % stmt)
                al = int(sm.group(1) or _TSIZE[sm.group(2)] or 1)
                n = int(sm.group(4)) if sm.group(4) else 1
                if sm.group(4) == "":
                    raise EmuError("dynamic (extern) shared arrays not supported: %r" % stmt)
                shared_off = (shared_off + al - 1) // al * al
                k.shared[sm.group(3)] = shared_off
                shared_off += n * _TSIZE[sm.group(2)]
            elif d in (".pragma", ".loc", ".file", ".maxntid", ".reqntid", ".minnctapersm", ".maxnreg"):
                pass
            else:
                raise EmuError("unsupported directive in kernel body: %r" % stmt)
            continue
        g, neg = None, False
        gm = re.match(r"^@(!?)(%?[\w$]+)\s+", stmt)
        if gm:
            neg, g = gm.group(1) == "!", gm.group(2)
            stmt = stmt[gm.end():]
        om = re.match(r"^([a-z][\w.]*)\s*(.*)$", stmt, re.S)
        if not om:
            raise EmuError("cannot parse instruction %r" % stmt)
        parts = om.group(1).split(".")
        args = _split_args(om.group(2).strip())
        k.instrs.append(Instr(g, neg, parts[0], parts[1:], args, None,
                              (("@" + ("!" if neg else "") + g + " ") if g else "") + " ".join(stmt.split())))
    k.shared_size = shared_off
    return k


# --------------------------------------------------------------------------------------------
# compilation of instructions into closures over the register file

PLAIN, BRA, EXIT, BAR, SHFL, YIELD = range(6)

_SPECIALS = ["%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z", "%ctaid.x", "%ctaid.y",
             "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "%laneid", "%warpid", "%nwarpid"]


def _parse_imm(s, t):
    """Immediate operand -> numpy scalar of type t."""
    s = s.strip()
    size = _TSIZE[t]
    kind = _kind(t)
    m = re.match(r"^0[fF]([0-9a-fA-F]{8})$", s)
    if m:
        v = np.uint32(int(m.group(1), 16))
        if size == 4:       # same size: keep the bit pattern (selp.b32 r, 0fFF800000, ...)
            return v.view(_dtype(t))
        return _conv_imm_float(float(v.view(np.float32)), t, s)
    m = re.match(r"^0[dD]([0-9a-fA-F]{16})$", s)
    if m:
        v = np.uint64(int(m.group(1), 16))
        if size == 8:
            return v.view(_dtype(t))
        return _conv_imm_float(float(v.view(np.float64)), t, s)
    m = re.match(r"^(-?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)[uU]?$", s)
    if m:
        v = int(m.group(2), 0) if not re.match(r"^0[0-7]+$", m.group(2)) else int(m.group(2), 8)
        if m.group(1):
            v = -v
        if kind == "f":
            return _dtype(t)(v)
        return _UDT[size](v & ((1 << (8 * size)) - 1)).view(_dtype(t)) if size else bool(v)
    try:
        v = float(s)
    except ValueError:
        return None
    return _conv_imm_float(v, t, s)


def _conv_imm_float(v, t, s):
    if _kind(t) != "f":
        raise EmuError("float immediate %s for type .%s" % (s, t))
    return _dtype(t)(v)


class _NotPred:
    """A negated predicate operand (!%p): read when the instruction runs, not when it is
    compiled (a negation taken at compile time would freeze the register's value then)."""

    def __init__(self, view):
        self.view = view

    def __array__(self, *args, **kwargs):
        raise EmuError("negated predicate read without _pv()")


def _pv(x):
    """A predicate source's values now."""
    return ~x.view if isinstance(x, _NotPred) else x


class _Regs:
    """Register files: one 2D array per size class, with u/s/f views; rows are registers."""

    def __init__(self, kern, T):
        self.T = T
        idx = {16: 0, 32: 0, 64: 0, 0: 0}
        self.where = {}
        for name, t in kern.regs.items():
            c = 0 if t == "pred" else 8 * _TSIZE[t]
            if c == 8:
                c = 16  # 8-bit registers live in the 16-bit file
            self.where[name] = (c, idx[c])
            idx[c] += 1
        self.u = {16: np.zeros((max(idx[16], 1), T), np.uint16),
                  32: np.zeros((max(idx[32], 1), T), np.uint32),
                  64: np.zeros((max(idx[64], 1), T), np.uint64)}
        self.s = {c: a.view(_SDT[c // 8]) for c, a in self.u.items()}
        self.f = {c: a.view(_FDT[c // 8]) for c, a in self.u.items()}
        self.p = np.zeros((max(idx[0], 1), T), bool)
        self.sp = np.zeros((len(_SPECIALS), T), np.uint32)

    def reset(self, poison):
        for a in self.u.values():
            a.fill(np.iinfo(a.dtype).max if poison else 0)
        self.p.fill(False)

    def view(self, name, t):
        if name not in self.where:
            raise EmuError("unknown register %s" % name)
        c, i = self.where[name]
        if t == "pred":
            if c != 0:
                raise EmuError("%s is not a predicate" % name)
            return self.p[i]
        if c == 0:
            raise EmuError("predicate %s used as .%s" % (name, t))
        if 8 * _TSIZE[t] != c:
            raise EmuError("register %s (%d-bit) used as .%s" % (name, c, t))
        k = _kind(t)
        return (self.f if k == "f" else self.s if k == "s" else self.u)[c][i]

    def cls(self, name):
        if name not in self.where:
            raise EmuError("unknown register %s" % name)
        return self.where[name][0]


def _write(d, v, m):
    vt = getattr(v, "dtype", None)
    if vt is not None and vt != d.dtype and vt.kind == "f" and d.dtype.kind == "f":
        raise EmuError("internal: %s result written to a %s register" % (vt, d.dtype))
    if m is None:
        d[...] = v
    else:
        np.copyto(d, v, where=m, casting="unsafe")


def _ftz32(x):
    x = np.asarray(x, dtype=np.float32)
    return np.where(np.abs(x) < np.float32(1.1754943508222875e-38), np.copysign(np.float32(0), x), x)


def _fma32(a, b, c):
    """Correctly rounded float32 fma: exact product in f64, sum rounded to odd, one final rounding."""
    p = np.multiply(a, b, dtype=np.float64)
    c64 = np.asarray(c, dtype=np.float64)
    s = np.asarray(p + c64, dtype=np.float64)
    bp = s - p
    e = (p - (s - bp)) + (c64 - bp)
    sb = s.view(np.int64)
    fix = (e != 0) & np.isfinite(e) & ((sb & 1) == 0)
    if fix.any():
        step = np.where((e > 0) == (s > 0), np.int64(1), np.int64(-1))
        s = np.where(fix, (sb + step).view(np.float64), s)
    return s.astype(np.float32)


def _fma64(a, b, c):
    a, b, c = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(c, np.float64))
    r = a * b + c
    r = np.array(r, dtype=np.float64)
    fin = np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & np.isfinite(r) & (r != 0)
    for i in np.flatnonzero(fin):
        x = Fraction(float(a.flat[i])) * Fraction(float(b.flat[i])) + Fraction(float(c.flat[i]))
        r.flat[i] = float(x) if x != 0 else r.flat[i]
    return r


def _fmax(a, b):
    r = np.fmax(a, b)
    z = (a == 0) & (b == 0)
    if np.any(z):
        pos = ~np.signbit(a) | ~np.signbit(b)
        r = np.where(z, np.where(pos, r.dtype.type(0), -r.dtype.type(0)), r)
    return r


def _fmin(a, b):
    r = np.fmin(a, b)
    z = (a == 0) & (b == 0)
    if np.any(z):
        neg = np.signbit(a) | np.signbit(b)
        r = np.where(z, np.where(neg, -r.dtype.type(0), r.dtype.type(0)), r)
    return r


_CMP = {
    "eq": np.equal, "ne": None, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal,
}


def _compare(op, a, b, t):
    isf = _kind(t) == "f"
    if op in _CMP and op != "ne":
        return _CMP[op](a, b)
    if op == "ne":
        r = np.not_equal(a, b)
        if isf:
            r = r & ~np.isnan(a) & ~np.isnan(b)
        return r
    if not isf:
        raise EmuError("comparison %s for .%s" % (op, t))
    un = np.isnan(a) | np.isnan(b)
    if op == "num":
        return ~un
    if op == "nan":
        return un
    base = {"equ": np.equal, "neu": np.not_equal, "ltu": np.less, "leu": np.less_equal,
            "gtu": np.greater, "geu": np.greater_equal}.get(op)
    if base is None:
        raise EmuError("unknown comparison %s" % op)
    return base(a, b) | un


_BOOL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


class _Compiler:
    def __init__(self, kern, regs, params, T, lane, warpbase):
        self.k = kern
        self.R = regs
        self.params = params   # name -> (type, numpy scalar)
        self.T = T
        self.lane = lane
        self.warpbase = warpbase

    # operands -------------------------------------------------------------------------------
    def src(self, s, t):
        """Operand as array view / numpy scalar of type t."""
        s = s.strip()
        if s in _SPECIALS:
            v = self.R.sp[_SPECIALS.index(s)]
            if _TSIZE[t] != 4:
                raise EmuError("special register %s read as .%s" % (s, t))
            return v.view(_dtype(t))
        if s.startswith("!"):
            if t != "pred":
                raise EmuError("'!' on a .%s operand %r" % (t, s))
            return _NotPred(self.src(s[1:], t))
        if s in self.R.where:
            return self.R.view(s, t)
        if s in self.k.shared:
            if _kind(t) == "f":
                raise EmuError("shared symbol used as float")
            return _dtype(t)(self.k.shared[s])
        v = _parse_imm(s, t)
        if v is None:
            raise EmuError("unknown operand %r" % s)
        return v

    def dst(self, s, t):
        s = s.strip()
        if s not in self.R.where:
            raise EmuError("destination %r is not a register" % s)
        return self.R.view(s, t)

    def vec(self, s):
        s = s.strip()
        if s.startswith("{") and s.endswith("}"):
            return [x.strip() for x in s[1:-1].split(",")]
        return [s]

    def addr(self, s):
        """[base+off] -> (base_kind, base, off). base_kind: 'reg' (array u), 'sym', 'param', 'imm'."""
        s = s.strip()
        if not (s.startswith("[") and s.endswith("]")):
            raise EmuError("bad address %r" % s)
        e = s[1:-1].replace(" ", "")
        m = re.match(r"^([^+\-]+)(?:\+(-?(?:0x[0-9a-fA-F]+|\d+))|-(0x[0-9a-fA-F]+|\d+))?$", e)
        if not m:
            raise EmuError("bad address %r" % s)
        base = m.group(1)
        off = int(m.group(2), 0) if m.group(2) else -int(m.group(3), 0) if m.group(3) else 0
        if base in self.R.where:
            c = self.R.cls(base)
            if c not in (32, 64):
                raise EmuError("address register %s" % base)
            return "reg", self.R.u[c][self.R.where[base][1]], off
        if base in self.k.shared:
            return "sym", self.k.shared[base], off
        if base in self.params:
            return "param", base, off
        if re.match(r"^(0x[0-9a-fA-F]+|\d+)$", base):
            return "imm", int(base, 0), off
        raise EmuError("unknown address base %r" % base)

    # main -----------------------------------------------------------------------------------
    def compile(self, ins):
        op, mods = ins.op, ins.mods
        h = getattr(self, "op_" + op, None)
        if h is None:
            raise EmuError("unsupported instruction '%s' (%s)" % (ins.text.split()[0] if not ins.guard else ins.text.split()[1], ins.text))
        res = h(ins, mods, ins.args)
        kind, fn, extra = res if isinstance(res, tuple) else (PLAIN, res, None)
        if kind == PLAIN and op == "ld" and _STRONG.intersection(mods) and "shared" not in mods:
            kind = YIELD  # a flag another CTA may be about to set: let it run (cooperative grids)
        if kind in (PLAIN, YIELD) and ins.guard is not None:
            g = self.R.view(ins.guard, "pred")
            inner = fn
            if ins.neg:
                def fn(m, inner=inner, g=g):
                    em = ~g if m is None else (m & ~g)
                    inner(em)
            else:
                def fn(m, inner=inner, g=g):
                    em = g.copy() if m is None else (m & g)
                    inner(em)
        return kind, fn, extra

    def types(self, mods, n=1):
        ts = [x for x in mods if x in _TSIZE]
        if len(ts) != n:
            raise EmuError("expected %d type suffix(es) in .%s" % (n, ".".join(mods)))
        return ts if n > 1 else ts[0]

    def check_mods(self, ins, allowed):
        for x in ins.mods:
            if x not in allowed and x not in _TSIZE:
                raise EmuError("unsupported modifier .%s in '%s'" % (x, ins.text))

    # data movement ---------------------------------------------------------------------------
    def op_mov(self, ins, mods, a):
        t = self.types(mods)
        d, s = a
        if d.startswith("{"):   # unpack
            parts = self.vec(d)
            src = self.src(s, "b%d" % (8 * _TSIZE[t]) if t != "pred" else t)
            w = 8 * _TSIZE[t] // len(parts)
            dsts = [None if p == "_" else self.dst(p, "b%d" % w) for p in parts]
            mask = (1 << w) - 1
            sh = [np.uint64(w * i) for i in range(len(parts))]
            def f(m):
                x = np.asarray(src).astype(np.uint64)
                for i, dd in enumerate(dsts):
                    if dd is not None:
                        _write(dd, ((x >> sh[i]) & np.uint64(mask)).astype(dd.dtype), m)
            return f
        if s.startswith("{"):   # pack
            parts = self.vec(s)
            w = 8 * _TSIZE[t] // len(parts)
            srcs = [self.src(p, "b%d" % w) for p in parts]
            dd = self.dst(d, "b%d" % (8 * _TSIZE[t]))
            def f(m):
                x = np.zeros(self.T, np.uint64)
                for i, ss in enumerate(srcs):
                    x |= np.asarray(ss).astype(np.uint64) << np.uint64(w * i)
                _write(dd, x.astype(dd.dtype), m)
            return f
        tt = "b%d" % (8 * _TSIZE[t]) if t != "pred" else t
        s = s.strip()
        if s in self.R.where or s in _SPECIALS or s in self.k.shared or t == "pred":
            src = self.src(s, tt)
        else:   # immediate: parse with the instruction's type, keep its bits
            v = _parse_imm(s, t)
            if v is None:
                raise EmuError("unknown operand %r" % s)
            src = np.asarray(v).view(_dtype(tt))[()]
        dd = self.dst(d, tt)
        def f(m):
            _write(dd, _pv(src), m)
        return f

    def op_cvta(self, ins, mods, a):
        t = self.types(mods)
        src = self.src(a[1], t)
        dd = self.dst(a[0], t)
        if "shared" in mods or "const" in mods or "local" in mods:
            raise EmuError("cvta to/from %s not supported" % ".".join(mods))
        def f(m):
            _write(dd, src, m)
        return f

    def _space(self, mods):
        for sp in ("global", "shared", "param", "local", "const"):
            if sp in mods:
                return sp
        return "generic"

    def op_ld(self, ins, mods, a):
        return self._ldst(ins, mods, a, True)

    def op_st(self, ins, mods, a):
        return self._ldst(ins, mods, a, False)

    def _ldst(self, ins, mods, a, is_ld):
        t = self.types(mods)
        sp = self._space(mods)
        for x in mods:
            if x not in _TSIZE and x not in ("global", "shared", "param", "nc", "v2", "v4", "ca", "cg",
                                              "cs", "lu", "cv", "wb", "wt", "relaxed", "weak", "cta",
                                              "acquire", "release", "volatile",
                                              "gpu", "sys", "L1::no_allocate", "L2::64B", "L2::128B"):
                raise EmuError("unsupported modifier .%s in '%s'" % (x, ins.text))
        n = 4 if "v4" in mods else 2 if "v2" in mods else 1
        w = _TSIZE[t]
        if is_ld:
            regs, addr_s = self.vec(a[0]), a[1]
        else:
            addr_s, regs = a[0], self.vec(a[1])
        if len(regs) != n:
            raise EmuError("vector width mismatch in '%s'" % ins.text)
        kind, base, off = self.addr(addr_s)
        what = ins.text
        signed = _kind(t) == "s"
        if sp == "param":
            if not is_ld or kind != "param":
                raise EmuError("param access not understood: '%s'" % ins.text)
            pt, pv = self.params[base]
            if off != 0 or n != 1 or _TSIZE[pt] != w:
                raise EmuError("ld.param with offset/vector/size mismatch: '%s'" % ins.text)
            dd = self.dst(regs[0], "b%d" % (8 * w))
            val = pv.view(_UDT[w]) if hasattr(pv, "view") else pv
            def f(m):
                _write(dd, val, m)
            return f
        if sp == "generic":
            sp = "global"   # generic addresses are treated as global ones
        if sp not in ("global", "shared"):
            raise EmuError("state space .%s not supported: '%s'" % (sp, ins.text))
        if kind == "param":
            raise EmuError("param symbol in %s access" % sp)
        if sp == "global" and kind == "sym":
            raise EmuError("shared symbol in global access: '%s'" % ins.text)
        space_ref = self  # resolved at run time
        spname = sp
        nc = "nc" in mods and sp == "global"
        # register side
        rv = []
        for r in regs:
            if r == "_":
                rv.append(None)
                continue
            if r not in self.R.where:
                if is_ld:
                    raise EmuError("load destination %r is not a register" % r)
                rv.append(("imm", _parse_imm(r, t)))
                continue
            c = self.R.cls(r)
            if c < 8 * w:
                raise EmuError("register %s too narrow for .%s" % (r, t))
            rv.append(("reg", self.R.u[c][self.R.where[r][1]], c))
        T = self.T

        def addr_of(m):
            if kind == "reg":
                x = base if m is None else base[m]
                return x.astype(np.int64) + off
            v = np.int64(base + off)
            if m is None:
                return np.full(T, v)
            return np.full(int(np.count_nonzero(m)), v)

        if is_ld:
            def f(m):
                if m is not None and not m.any():
                    return
                spc = space_ref.space(spname)
                ad = addr_of(m)
                if nc:
                    spc.check_nc(ad, w, n, what)
                vals = spc.load(ad, w, n, what)
                for k, r in enumerate(rv):
                    if r is None:
                        continue
                    _, dd, c = r
                    v = vals[k]
                    if c != 8 * w:
                        v = (v.view(_SDT[w]).astype(_SDT[c // 8]).view(_UDT[c // 8]) if signed
                             else v.astype(_UDT[c // 8]))
                    if m is None:
                        dd[...] = v
                    else:
                        dd[m] = v
            return f

        def f(m):
            if m is not None and not m.any():
                return
            spc = space_ref.space(spname)
            ad = addr_of(m)
            vals = []
            for r in rv:
                if r[0] == "imm":
                    vals.append(np.asarray(r[1]).view(_UDT[w]))
                    continue
                _, ss, c = r
                v = ss if m is None else ss[m]
                if c != 8 * w:
                    v = v.astype(_UDT[w])
                vals.append(v)
            spc.store(ad, w, vals, what)
        return f

    # integer ---------------------------------------------------------------------------------
    def _bin(self, ins, t, a, ufunc, view_t=None):
        vt = view_t or t
        x, y = self.src(a[1], vt), self.src(a[2], vt)
        dd = self.dst(a[0], vt)
        def f(m):
            if m is None:
                ufunc(x, y, out=dd)
            else:
                ufunc(x, y, out=dd, where=m)
        return f

    def _float_mods(self, ins, allowed=("rn", "ftz", "sat")):
        rnd = [x for x in ins.mods if x in ("rn", "rz", "rm", "rp")]
        if rnd and rnd[0] != "rn":
            raise EmuError("rounding mode .%s not supported: '%s'" % (rnd[0], ins.text))
        for x in ins.mods:
            if x not in _TSIZE and x not in allowed and x not in ("rn",):
                raise EmuError("unsupported modifier .%s in '%s'" % (x, ins.text))
        return "ftz" in ins.mods, "sat" in ins.mods

    def _fop(self, ins, t, srcs_s, dst_s, fn, allowed=("rn", "ftz", "sat")):
        ftz, sat = self._float_mods(ins, allowed)
        srcs = [self.src(s, t) for s in srcs_s]
        dd = self.dst(dst_s, t)
        if ftz and t != "f32":
            raise EmuError(".ftz only for f32")
        def f(m):
            xs = [_ftz32(s) for s in srcs] if ftz else srcs
            r = fn(*xs)
            if ftz:
                r = _ftz32(r)
            if sat:
                r = np.where(np.isnan(r), r.dtype.type(0), np.clip(r, 0, 1)).astype(r.dtype)
            _write(dd, r, m)
        return f

    def _float_bin(self, ins, t, mods, a, ufunc):
        """add / sub / mul on floats: plain numpy when no modifier asks for more"""
        if not any(x in mods for x in ("ftz", "sat", "rz", "rm", "rp")):
            self._float_mods(ins)
            return self._bin(ins, t, a, ufunc)
        return self._fop(ins, t, a[1:], a[0], ufunc)

    def _add_sub(self, ins, mods, a, ufunc):
        t = self.types(mods)
        if _kind(t) == "f":
            return self._float_bin(ins, t, mods, a, ufunc)
        self.check_mods(ins, ())
        return self._bin(ins, t, a, ufunc, "b%d" % (8 * _TSIZE[t]))

    def op_add(self, ins, mods, a):
        return self._add_sub(ins, mods, a, np.add)

    def op_sub(self, ins, mods, a):
        return self._add_sub(ins, mods, a, np.subtract)

    def op_mul(self, ins, mods, a):
        t = self.types(mods)
        if _kind(t) == "f":
            return self._float_bin(ins, t, mods, a, np.multiply)
        self.check_mods(ins, ("lo", "hi", "wide"))
        size = _TSIZE[t]
        if "lo" in mods:
            return self._bin(ins, t, a, np.multiply, "b%d" % (8 * size))
        x, y = self.src(a[1], t), self.src(a[2], t)
        if "wide" in mods:
            wt = ("s" if _kind(t) == "s" else "u") + str(16 * size)
            dd = self.dst(a[0], wt)
            wd = _dtype(wt)
            def f(m):
                _write(dd, np.multiply(np.asarray(x).astype(wd), np.asarray(y).astype(wd)), m)
            return f
        if "hi" in mods:
            dd = self.dst(a[0], t)
            if size == 8:
                def f(m):
                    xs, ys = np.broadcast_arrays(np.asarray(x), np.asarray(y))
                    r = np.array([(int(p) * int(q)) >> 64 for p, q in zip(xs.ravel(), ys.ravel())], dtype=object)
                    _write(dd, np.array([int(v) & ((1 << 64) - 1) for v in r], np.uint64).view(dd.dtype).reshape(xs.shape), m)
                return f
            wd = np.int64 if _kind(t) == "s" else np.uint64
            def f(m):
                r = np.multiply(np.asarray(x).astype(wd), np.asarray(y).astype(wd)) >> wd(8 * size)
                _write(dd, r.astype(dd.dtype), m)
            return f
        raise EmuError("mul needs .lo/.hi/.wide: '%s'" % ins.text)

    def op_mad(self, ins, mods, a):
        t = self.types(mods)
        if _kind(t) == "f":
            return self.op_fma(ins, mods, a)
        self.check_mods(ins, ("lo", "hi", "wide"))
        size = _TSIZE[t]
        if "lo" in mods:
            bt = "b%d" % (8 * size)
            x, y, z = self.src(a[1], bt), self.src(a[2], bt), self.src(a[3], bt)
            dd = self.dst(a[0], bt)
            def f(m):
                _write(dd, np.add(np.multiply(x, y), z), m)
            return f
        if "wide" in mods:
            wt = ("s" if _kind(t) == "s" else "u") + str(16 * size)
            x, y = self.src(a[1], t), self.src(a[2], t)
            z = self.src(a[3], wt)
            dd = self.dst(a[0], wt)
            wd = _dtype(wt)
            def f(m):
                _write(dd, np.asarray(x).astype(wd) * np.asarray(y).astype(wd) + z, m)
            return f
        if "hi" in mods and size == 4:
            x, y, z = self.src(a[1], t), self.src(a[2], t), self.src(a[3], t)
            dd = self.dst(a[0], t)
            wd = np.int64 if _kind(t) == "s" else np.uint64
            def f(m):
                r = (np.asarray(x).astype(wd) * np.asarray(y).astype(wd)) >> wd(32)
                _write(dd, (r.astype(dd.dtype) + z).astype(dd.dtype), m)
            return f
        raise EmuError("mad form not supported: '%s'" % ins.text)

    def _divrem(self, ins, mods, a, rem):
        t = self.types(mods)
        if _kind(t) == "f":
            raise EmuError("internal")
        x, y = self.src(a[1], t), self.src(a[2], t)
        dd = self.dst(a[0], t)
        size = _TSIZE[t]
        allones = _UDT[size](-1 & ((1 << (8 * size)) - 1)).view(dd.dtype)
        signed = _kind(t) == "s"
        def f(m):
            xx, yy = np.broadcast_arrays(np.asarray(x), np.asarray(y))
            z = yy == 0
            ys = np.where(z, yy.dtype.type(1), yy)
            if signed:
                q = np.abs(xx.astype(np.int64)) // np.abs(ys.astype(np.int64))
                q = np.where((xx < 0) != (ys < 0), -q, q)
                r = xx.astype(np.int64) - q * ys.astype(np.int64)
                v = (r if rem else q).astype(dd.dtype)
            else:
                v = (xx % ys) if rem else (xx // ys)
            v = np.where(z, xx if rem else allones, v).astype(dd.dtype)
            _write(dd, v, m)
        return f

    def op_div(self, ins, mods, a):
        t = self.types(mods)
        if _kind(t) != "f":
            self.check_mods(ins, ())
            return self._divrem(ins, mods, a, False)
        if "approx" in mods or "full" in mods:
            for x in mods:
                if x not in ("approx", "full", "ftz", t):
                    raise EmuError("unsupported modifier .%s in '%s'" % (x, ins.text))
            return self._fop(ins, t, a[1:], a[0], np.divide, ("approx", "full", "ftz"))
        if "rn" not in mods:
            raise EmuError("div.%s needs a rounding mode: '%s'" % (t, ins.text))
        return self._fop(ins, t, a[1:], a[0], np.divide)

    def op_rem(self, ins, mods, a):
        self.check_mods(ins, ())
        return self._divrem(ins, mods, a, True)

    def _shift(self, ins, mods, a, left):
        t = self.types(mods)
        size = _TSIZE[t]
        bits = 8 * size
        vt = t if (not left and _kind(t) == "s") else "u%d" % bits
        x = self.src(a[1], vt)
        y = self.src(a[2], "u32")
        dd = self.dst(a[0], vt)
        dt = dd.dtype.type
        if np.ndim(y) == 0:
            n = int(y)
            if n >= bits:
                if left or _kind(t) != "s":
                    def f(m):
                        _write(dd, dt(0), m)
                else:
                    def f(m):
                        _write(dd, np.asarray(x) >> dt(bits - 1), m)
                return f
            nn = dt(n)
            uf = np.left_shift if left else np.right_shift
            def f(m):
                if m is None:
                    uf(x, nn, out=dd)
                else:
                    uf(x, nn, out=dd, where=m)
            return f
        def f(m):
            yy = np.minimum(np.asarray(y), np.uint32(bits - 1 if (not left and _kind(t) == "s") else bits))
            big = yy >= bits
            yc = np.where(big, 0, yy).astype(dd.dtype)
            r = (np.asarray(x) << yc) if left else (np.asarray(x) >> yc)
            r = np.where(big, dt(0), r)
            _write(dd, r.astype(dd.dtype), m)
        return f

    def op_shl(self, ins, mods, a):
        return self._shift(ins, mods, a, True)

    def op_shr(self, ins, mods, a):
        return self._shift(ins, mods, a, False)

    def _logic(self, ins, mods, a, uf):
        t = self.types(mods)
        if t == "pred":
            x, y = self.src(a[1], t), self.src(a[2], t)
            dd = self.dst(a[0], t)
            def f(m):
                _write(dd, uf(_pv(x), _pv(y)), m)
            return f
        return self._bin(ins, t, a, uf, "b%d" % (8 * _TSIZE[t]))

    def op_and(self, ins, mods, a):
        return self._logic(ins, mods, a, np.bitwise_and)

    def op_or(self, ins, mods, a):
        return self._logic(ins, mods, a, np.bitwise_or)

    def op_xor(self, ins, mods, a):
        return self._logic(ins, mods, a, np.bitwise_xor)

    def op_not(self, ins, mods, a):
        t = self.types(mods)
        tt = t if t == "pred" else "b%d" % (8 * _TSIZE[t])
        x = self.src(a[1], tt)
        dd = self.dst(a[0], tt)
        def f(m):
            _write(dd, np.invert(_pv(x)), m)
        return f

    def _min_max(self, ins, mods, a, ffn, ifn):
        t = self.types(mods)
        if _kind(t) == "f":
            return self._fop(ins, t, a[1:], a[0], ffn, ("ftz",))
        self.check_mods(ins, ())
        return self._bin(ins, t, a, ifn)

    def op_min(self, ins, mods, a):
        return self._min_max(ins, mods, a, _fmin, np.minimum)

    def op_max(self, ins, mods, a):
        return self._min_max(ins, mods, a, _fmax, np.maximum)

    def op_abs(self, ins, mods, a):
        t = self.types(mods)
        if _kind(t) == "f":
            return self._fop(ins, t, a[1:], a[0], np.abs, ("ftz",))
        x = self.src(a[1], t)
        dd = self.dst(a[0], t)
        def f(m):
            _write(dd, np.abs(x), m)
        return f

    def op_neg(self, ins, mods, a):
        t = self.types(mods)
        if _kind(t) == "f":
            return self._fop(ins, t, a[1:], a[0], np.negative, ("ftz",))
        x = self.src(a[1], "b%d" % (8 * _TSIZE[t]))
        dd = self.dst(a[0], "b%d" % (8 * _TSIZE[t]))
        def f(m):
            _write(dd, np.negative(x), m)
        return f

    # float -----------------------------------------------------------------------------------
    def op_fma(self, ins, mods, a):
        t = self.types(mods)
        if "rn" not in mods:
            raise EmuError("fma needs .rn: '%s'" % ins.text)
        if t == "f32":
            if not any(x in mods for x in ("ftz", "sat")):
                self._float_mods(ins)
                x, y, z = (self.src(s, t) for s in a[1:4])
                dd = self.dst(a[0], t)
                def f(m):
                    _write(dd, _fma32(x, y, z), m)
                return f
            return self._fop(ins, t, a[1:], a[0], _fma32)
        if t == "f64":
            return self._fop(ins, t, a[1:], a[0], _fma64, ("rn",))
        raise EmuError("fma.%s not supported" % t)

    def _unary_f(self, ins, mods, a, fn, allowed):
        t = self.types(mods)
        for x in mods:
            if x not in allowed and x != t:
                raise EmuError("unsupported modifier .%s in '%s'" % (x, ins.text))
        return self._fop(ins, t, a[1:], a[0], fn, allowed)

    def op_sqrt(self, ins, mods, a):
        if "rn" not in mods and "approx" not in mods:
            raise EmuError("sqrt rounding not supported: '%s'" % ins.text)
        return self._unary_f(ins, mods, a, np.sqrt, ("rn", "approx", "ftz"))

    def op_rcp(self, ins, mods, a):
        t = self.types(mods)
        one = _dtype(t)(1)
        if "rn" not in mods and "approx" not in mods:
            raise EmuError("rcp rounding not supported: '%s'" % ins.text)
        return self._unary_f(ins, mods, a, lambda x: np.divide(one, x), ("rn", "approx", "ftz"))

    def op_rsqrt(self, ins, mods, a):
        t = self.types(mods)
        one = _dtype(t)(1)
        return self._unary_f(ins, mods, a, lambda x: np.divide(one, np.sqrt(x)), ("approx", "ftz"))

    def op_ex2(self, ins, mods, a):
        return self._unary_f(ins, mods, a, np.exp2, ("approx", "ftz"))

    def op_lg2(self, ins, mods, a):
        return self._unary_f(ins, mods, a, np.log2, ("approx", "ftz"))

    def op_sin(self, ins, mods, a):
        return self._unary_f(ins, mods, a, np.sin, ("approx", "ftz"))

    def op_cos(self, ins, mods, a):
        return self._unary_f(ins, mods, a, np.cos, ("approx", "ftz"))

    def op_tanh(self, ins, mods, a):
        return self._unary_f(ins, mods, a, np.tanh, ("approx",))

    # compare / select ------------------------------------------------------------------------
    def op_setp(self, ins, mods, a):
        t = self.types(mods)
        cmp_ = mods[0]
        bop = mods[1] if len(mods) > 2 and mods[1] in _BOOL else None
        for x in mods:
            if x != t and x != cmp_ and x != bop and x != "ftz":
                raise EmuError("unsupported modifier .%s in '%s'" % (x, ins.text))
        ds = [x.strip() for x in a[0].split("|")]
        x, y = self.src(a[1], t), self.src(a[2], t)
        c = self.src(a[3], "pred") if bop else None
        d0 = self.dst(ds[0], "pred")
        d1 = self.dst(ds[1], "pred") if len(ds) > 1 and ds[1] != "_" else None
        ftz = "ftz" in mods
        bf = _BOOL.get(bop)
        _compare(cmp_, np.zeros(1, _dtype(t)), np.zeros(1, _dtype(t)), t)  # validates cmp_
        def f(m):
            xx, yy = (_ftz32(x), _ftz32(y)) if ftz else (x, y)
            r = _compare(cmp_, xx, yy, t)
            if bf is not None:
                cc = _pv(c)
                r0 = bf(r, cc)
                r1 = bf(~r, cc) if d1 is not None else None
            else:
                r0, r1 = r, (~r if d1 is not None else None)
            if d1 is not None:
                _write(d1, r1, m)
            _write(d0, r0, m)
        return f

    def op_selp(self, ins, mods, a):
        t = self.types(mods)
        tt = "b%d" % (8 * _TSIZE[t])
        x, y = self.src(a[1], tt), self.src(a[2], tt)
        c = self.src(a[3], "pred")
        dd = self.dst(a[0], tt)
        def f(m):
            _write(dd, np.where(_pv(c), x, y), m)
        return f

    # conversion ------------------------------------------------------------------------------
    def op_cvt(self, ins, mods, a):
        ts = [x for x in mods if x in _TSIZE]
        if len(ts) != 2:
            raise EmuError("cvt needs two types: '%s'" % ins.text)
        dt_, st_ = ts
        others = [x for x in mods if x not in _TSIZE]
        for x in others:
            if x not in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "ftz", "sat"):
                raise EmuError("unsupported modifier .%s in '%s'" % (x, ins.text))
        ftz = "ftz" in others
        sat = "sat" in others
        rnd = [x for x in others if x not in ("ftz", "sat")]
        rnd = rnd[0] if rnd else None
        if dt_ == "f16x2" and st_ == "f32":
            if rnd != "rn":
                raise EmuError("cvt f16x2 rounding %s" % rnd)
            hi, lo = self.src(a[1], "f32"), self.src(a[2], "f32")
            dd = self.dst(a[0], "b32")
            def f(m):
                h = np.asarray(hi).astype(np.float16).view(np.uint16).astype(np.uint32)
                l = np.asarray(lo).astype(np.float16).view(np.uint16).astype(np.uint32)
                _write(dd, (h << np.uint32(16)) | l, m)
            return f
        sk, dk = _kind(st_), _kind(dt_)
        x = self.src(a[1], st_)
        ddt = _dtype(dt_)
        if dk == "f" or sk == "f":
            if ftz and not (st_ == "f32" or dt_ == "f32"):
                raise EmuError(".ftz in '%s'" % ins.text)
        dd = self.dst(a[0], dt_) if self.R.cls(a[0].strip()) == 8 * _TSIZE[dt_] else None
        if dd is None:
            # e.g. cvt.u16.u32 into a wider register: write the value zero/sign extended
            c = self.R.cls(a[0].strip())
            dd = (self.R.s if dk == "s" else self.R.u)[c][self.R.where[a[0].strip()][1]]
        if sk == "f" and dk == "f":
            exact = _TSIZE[dt_] >= _TSIZE[st_]
            if exact and rnd is not None and _TSIZE[dt_] > _TSIZE[st_]:
                raise EmuError("rounding mode on widening cvt: '%s'" % ins.text)
            if not exact and rnd not in ("rn",):
                raise EmuError("cvt rounding %s not supported: '%s'" % (rnd, ins.text))
            if dt_ == st_:
                fr = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil, None: lambda v: v}.get(rnd)
                if fr is None:
                    raise EmuError("cvt rounding %s: '%s'" % (rnd, ins.text))
            else:
                fr = lambda v: v
            def f(m):
                v = _ftz32(x) if (ftz and st_ == "f32") else np.asarray(x)
                r = fr(v).astype(ddt)
                if ftz and dt_ == "f32":
                    r = _ftz32(r)
                if sat:
                    r = np.where(np.isnan(r), ddt(0), np.clip(r, 0, 1)).astype(ddt)
                _write(dd, r, m)
            return f
        if sk == "f":   # float -> int
            fr = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}.get(rnd)
            if fr is None:
                raise EmuError("float->int cvt needs .rni/.rzi/.rmi/.rpi: '%s'" % ins.text)
            info = np.iinfo(ddt)
            def f(m):
                v = np.asarray(x).astype(np.float64)
                r = fr(v)
                r = np.where(np.isnan(r), 0, np.clip(r, info.min, info.max))
                if ddt == np.uint64 or ddt == np.int64:
                    out = np.array([int(q) if q < info.max else info.max for q in np.ravel(r)], dtype=object)
                    r = np.array(out.tolist(), dtype=ddt).reshape(np.shape(r))
                _write(dd, np.asarray(r).astype(ddt), m)
            return f
        if dk == "f":   # int -> float
            if rnd not in ("rn", None):
                raise EmuError("cvt rounding %s not supported: '%s'" % (rnd, ins.text))
            def f(m):
                v = np.asarray(x)
                if ddt == np.float16:
                    r = v.astype(np.float64).astype(np.float16) if _TSIZE[st_] <= 4 else None
                    if r is None:
                        raise EmuError("cvt f16 from 64-bit int")
                else:
                    r = v.astype(ddt)
                _write(dd, r, m)
            return f
        # int -> int
        info = np.iinfo(ddt)
        def f(m):
            v = np.asarray(x)
            if sat:
                si = np.iinfo(v.dtype)
                v = np.clip(v, v.dtype.type(max(info.min, si.min)), v.dtype.type(min(info.max, si.max)))
            r = v.astype(ddt)
            _write(dd, r if dd.dtype == ddt else r.astype(dd.dtype), m)
        return f

    # warp / control --------------------------------------------------------------------------
    def op_shfl(self, ins, mods, a):
        if "sync" not in mods:
            raise EmuError("only shfl.sync is supported: '%s'" % ins.text)
        mode = [x for x in mods if x in ("bfly", "down", "up", "idx")]
        if len(mode) != 1 or "b32" not in mods:
            raise EmuError("shfl form not supported: '%s'" % ins.text)
        mode = mode[0]
        ds = [x.strip() for x in a[0].split("|")]
        dd = self.dst(ds[0], "b32")
        dp = self.dst(ds[1], "pred") if len(ds) > 1 else None
        src = self.src(a[1], "b32")
        b = self.src(a[2], "u32")
        c = self.src(a[3], "u32")
        mm = self.src(a[4], "u32")
        lane = self.lane
        wb = self.warpbase
        T = self.T

        def lanes(bv, cv):
            bv = np.asarray(bv).astype(np.int64) & 31
            cv = np.asarray(cv).astype(np.int64)
            cval = cv & 31
            seg = (cv >> 8) & 31
            maxl = (lane & seg) | (cval & ~seg)
            minl = lane & seg
            if mode == "up":
                j = lane - bv
                pv = j >= maxl
            elif mode == "down":
                j = lane + bv
                pv = j <= maxl
            elif mode == "bfly":
                j = lane ^ bv
                pv = j <= maxl
            else:
                j = minl | (bv & ~seg)
                pv = j <= maxl
            j = np.where(pv, j, lane)
            return wb + j, pv

        const = np.ndim(b) == 0 and np.ndim(c) == 0
        if const:
            sidx0, pv0 = lanes(b, c)
            sidx0 = np.broadcast_to(sidx0, (T,)).copy()
            pv0 = np.broadcast_to(pv0, (T,)).copy()
            bad0 = sidx0 >= T

        def f(m, part=None):
            if const:
                sidx, pv, bad = sidx0, pv0, bad0
            else:
                sidx, pv = lanes(b, c)
                sidx = np.broadcast_to(sidx, (T,))
                pv = np.broadcast_to(pv, (T,))
                bad = sidx >= T
            if m is None and not bad.any():
                v = src[sidx]
                dd[...] = v
                if dp is not None:
                    dp[...] = pv
                return
            mm_ = m if m is not None else np.ones(T, bool)
            if (bad & mm_).any():
                raise EmuError("%s: reads a lane outside the block" % ins.text)
            sc = np.where(bad, 0, sidx)
            pp = part if part is not None else mm_
            if not pp[sc[mm_]].all():
                t = int(np.flatnonzero(mm_ & ~pp[sc])[0])
                raise EmuError("%s: thread %d reads lane %d which does not take part in the shuffle"
                               % (ins.text, t, int(sc[t]) % 32))
            v = src[sc]
            np.copyto(dd, v, where=mm_)
            if dp is not None:
                np.copyto(dp, pv, where=mm_)
        full = (np.ndim(mm) == 0 and (int(mm) & 0xFFFFFFFF) == 0xFFFFFFFF)
        g = None
        if ins.guard is not None:
            g = (self.R.view(ins.guard, "pred"), ins.neg)
        return SHFL, f, (mm, full, g)

    def op_bar(self, ins, mods, a):
        if mods == ["warp", "sync"]:
            # bar.warp.sync -1: the warp's lanes run in lock step here and shared stores are
            # seen at once, so a full-mask warp barrier has nothing left to order
            if len(a) != 1 or a[0].strip() not in ("-1", "0xffffffff", "0xFFFFFFFF") or ins.guard:
                raise EmuError("unsupported bar.warp.sync form '%s'" % ins.text)
            return lambda m: None
        for x in mods:
            if x not in ("sync", "aligned"):
                raise EmuError("unsupported barrier form '%s'" % ins.text)
        bid = self.src(a[0], "u32") if a else 0
        need = 0  # every thread that has not exited
        if len(a) > 1:
            n = self.src(a[1], "u32")
            if np.ndim(n) != 0 or np.ndim(bid) != 0 or int(n) % 32 or not 0 < int(n) <= self.T:
                raise EmuError("unsupported bar.sync thread count: '%s'" % ins.text)
            need = 0 if int(n) == self.T else int(n)
        if np.ndim(bid) != 0 or not 0 <= int(bid) < 16:
            raise EmuError("unsupported barrier id: '%s'" % ins.text)
        g = None
        if ins.guard is not None:
            g = (self.R.view(ins.guard, "pred"), ins.neg)
        if int(bid) == 0 and need == 0:
            return BAR, None, g
        return BAR, (int(bid), need), g

    def op_barrier(self, ins, mods, a):
        return self.op_bar(ins, mods, a)

    def op_bra(self, ins, mods, a):
        for x in mods:
            if x != "uni":
                raise EmuError("unsupported modifier .%s in '%s'" % (x, ins.text))
        lbl = a[0].strip()
        if lbl not in self.k.labels:
            raise EmuError("unknown label %s" % lbl)
        g = None
        if ins.guard is not None:
            g = (self.R.view(ins.guard, "pred"), ins.neg)
        return BRA, None, (self.k.labels[lbl], g)

    def op_ret(self, ins, mods, a):
        g = None
        if ins.guard is not None:
            g = (self.R.view(ins.guard, "pred"), ins.neg)
        return EXIT, None, g

    op_exit = op_ret

    def op_membar(self, ins, mods, a):
        return lambda m: None

    def op_mma(self, ins, mods, a):
        # mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 d, a, b, c: a warp-wide product,
        # run once every lane of the warp has arrived (as a full-mask shfl.sync). Fragments (PTX
        # ISA): g = lane / 4, t = lane % 4; A {a0: row g, a1: row g + 8, a2: row g, a3: row g + 8}
        # x cols {2t, 2t + 1} (a0, a1) or {2t + 8, 2t + 9} (a2, a3), the lower column in the lower
        # half; B b0: k 2t, 2t + 1 of column g, b1: k 2t + 8, 2t + 9; C/D c0, c1: row g, cols 2t,
        # 2t + 1; c2, c3: row g + 8. D = A B + C summed exactly (float64: fp16 products and 16 of
        # them are exact there) and rounded once to f32: close to, not bit-equal with, a tensor
        # core, whose internal rounding is not specified.
        if mods != ["sync", "aligned", "m16n8k16", "row", "col", "f32", "f16", "f16", "f32"]:
            raise EmuError("unsupported mma form '%s'" % ins.text)
        if ins.guard is not None:
            raise EmuError("guarded mma: '%s'" % ins.text)
        names = [self.vec(x) for x in a]
        if [len(x) for x in names] != [4, 4, 2, 4]:
            raise EmuError("mma operands: '%s'" % ins.text)
        dd = [self.dst(x, "f32") for x in names[0]]
        av = [self.src(x, "b32") for x in names[1]]
        bv = [self.src(x, "b32") for x in names[2]]
        cv = [self.src(x, "f32") for x in names[3]]
        T = self.T
        lane = np.arange(32)
        g, t = lane // 4, lane % 4

        def halves(u, nw):
            u = np.broadcast_to(np.asarray(u).astype(np.uint32), (T,))[:nw * 32].reshape(nw, 32)
            lo = (u & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64)
            hi = (u >> 16).astype(np.uint16).view(np.float16).astype(np.float64)
            return lo, hi

        def f(m, part=None):
            nw = T // 32
            A = np.zeros((nw, 16, 16))
            for r, (ro, co) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
                lo, hi = halves(av[r], nw)
                A[:, g + ro, 2 * t + co] = lo
                A[:, g + ro, 2 * t + co + 1] = hi
            B = np.zeros((nw, 16, 8))
            for r in range(2):
                lo, hi = halves(bv[r], nw)
                B[:, 2 * t + 8 * r, g] = lo
                B[:, 2 * t + 8 * r + 1, g] = hi
            C = np.zeros((nw, 16, 8))
            for r in range(4):
                c = np.broadcast_to(np.asarray(cv[r]), (T,))[:nw * 32].reshape(nw, 32)
                C[:, g + 8 * (r // 2), 2 * t + r % 2] = c
            with np.errstate(invalid="ignore", over="ignore"):
                D = (np.einsum("wik,wkj->wij", A, B) + C).astype(np.float32)
            for r in range(4):
                v = np.zeros(T, np.float32)
                v[:nw * 32] = D[:, g + 8 * (r // 2), 2 * t + r % 2].reshape(-1)
                _write(dd[r], v, m)
        return SHFL, f, (0xFFFFFFFF, True, None)

    def op_ldmatrix(self, ins, mods, a):
        # ldmatrix.sync.aligned.m8n8.x{1,2,4}.shared.b16 {d...}, [addr]: a warp-wide load, run
        # once every lane has arrived; matrix j's rows at the addresses of lanes 8j .. 8j + 7
        trans = "trans" in mods
        if trans:
            mods = [x for x in mods if x != "trans"]
        if (len(mods) != 6 or mods[:3] != ["sync", "aligned", "m8n8"] or
                mods[3] not in ("x1", "x2", "x4") or mods[4:] != ["shared", "b16"]):
            raise EmuError("unsupported ldmatrix form '%s'" % ins.text)
        if ins.guard is not None:
            raise EmuError("guarded ldmatrix: '%s'" % ins.text)
        n = int(mods[3][1])
        regs = self.vec(a[0])
        if len(regs) != n:
            raise EmuError("ldmatrix operands: '%s'" % ins.text)
        dd = [self.dst(r, "b32") for r in regs]
        kind, base, off = self.addr(a[1])
        if kind != "reg":
            raise EmuError("ldmatrix address must be a register: '%s'" % ins.text)
        T, what, me = self.T, ins.text, self

        def f(m, part=None):
            idx = np.nonzero(m)[0] if m is not None else np.arange(T)
            rows = np.asarray(base).astype(np.int64) + off
            if (rows[idx[idx % 32 < 8 * n]] % 16).any():  # the lanes whose rows are read
                raise EmuError("ldmatrix row address not 16-byte aligned: '%s'" % what)
            spc = me.space("shared")
            lane, warp0 = idx % 32, (idx // 32) * 32
            for j in range(n):
                v = np.zeros(T, np.uint32)
                if trans:  # rows 2 (l % 4) and the next, column l / 4
                    lo, hi = (spc.load(rows[warp0 + 8 * j + 2 * (lane % 4) + e] + 2 * (lane // 4),
                                       2, 1, what)[0].astype(np.uint32) for e in (0, 1))
                    v[idx] = lo | (hi << 16)
                else:
                    v[idx] = spc.load(rows[warp0 + 8 * j + lane // 4] + 4 * (lane % 4), 4, 1,
                                      what)[0]
                _write(dd[j], v, m)
        return SHFL, f, (0xFFFFFFFF, True, None)

    def op_cp(self, ins, mods, a):
        # cp.async.{ca,cg}.shared.global [dst], [src], size{, src_size}: a copy recorded at issue
        # (addresses and sizes read then) and made at the cp.async.wait_group that completes its
        # group, so that shared memory read before that wait still holds the old bytes;
        # commit_group / wait_group N / wait_all as the CTA's (every thread runs them together)
        if mods[:1] != ["async"]:
            raise EmuError("unsupported cp form '%s'" % ins.text)
        me, what = self, ins.text
        if mods[1:] in (["commit_group"], ["wait_group"], ["wait_all"]):
            kind = mods[1]
            keep = int(a[0]) if kind == "wait_group" else 0
            if ins.guard is not None or (kind != "wait_group" and a):
                raise EmuError("unsupported cp.async form '%s'" % what)

            def f(m):
                if m is not None and not m.all():
                    raise EmuError("%s: not run by every thread of the CTA" % what)
                if kind == "commit_group":
                    me.async_groups.append(me.async_open)
                    me.async_open = []
                    return
                if kind == "wait_all":
                    me.async_groups.append(me.async_open)
                    me.async_open = []
                while len(me.async_groups) > keep:
                    for dst, src, n, size in me.async_groups.pop(0):
                        me._async_copy(dst, src, n, size, what)
            return f
        if (len(mods) != 4 or mods[1] not in ("ca", "cg") or mods[2] not in ("shared", "shared::cta")
                or mods[3] != "global" or len(a) not in (3, 4)):
            raise EmuError("unsupported cp.async form '%s'" % what)
        size = int(a[2])
        if size not in (4, 8, 16) or (mods[1] == "cg" and size != 16):
            raise EmuError("cp.async of %d bytes: '%s'" % (size, what))
        dk, dbase, doff = self.addr(a[0])
        sk, sbase, soff = self.addr(a[1])
        if dk != "reg" or sk != "reg":
            raise EmuError("cp.async addresses must be registers: '%s'" % what)
        nsrc = self.src(a[3], "u32") if len(a) == 4 else np.uint32(size)
        T = self.T

        def f(m):
            idx = np.nonzero(m)[0] if m is not None else np.arange(T)
            dst = np.asarray(dbase).astype(np.int64)[idx] + doff
            src = np.asarray(sbase).astype(np.int64)[idx] + soff
            n = (np.full(T, int(nsrc), np.int64) if np.ndim(nsrc) == 0
                 else np.asarray(nsrc).astype(np.int64))[idx]
            if (dst % size).any() or (src % size).any() or (n > size).any():
                raise EmuError("%s: misaligned, or more source bytes than copied" % what)
            me.async_open.append((dst, src, n, size))
        return f

    def _async_copy(self, dst, src, n, size, what):
        """One recorded cp.async over its threads: n bytes of src, then zeros, to dst."""
        data = np.zeros((len(dst), size), np.uint8)
        full = np.nonzero(n == size)[0]
        if len(full):
            data[full] = np.stack(self.mem.load(src[full], 1, size, what), axis=1)
        for i in np.nonzero((n > 0) & (n < size))[0]:
            data[i, :n[i]] = self.mem.load(src[i] + np.arange(n[i]), 1, 1, what)[0]
        zero = np.nonzero(n == 0)[0]
        if len(zero):  # nothing read, but the address must still lie inside an allocation
            self.mem.load(src[zero], 1, 1, what)
        for j in range(size):
            self.shared.store(dst + j, 1, [data[:, j]], what)

    def async_reset(self):
        self.async_open, self.async_groups = [], []

    def op_griddepcontrol(self, ins, mods, a):
        # one grid at a time here: the kernel before has completed, dependents launch after
        if mods not in (["wait"], ["launch_dependents"]) or a:
            raise EmuError("unsupported griddepcontrol form '%s'" % ins.text)
        return lambda m: None

    def op_prefetch(self, ins, mods, a):
        # prefetch.global.L2 [a]: no effect on values; the address must lie in an allocation
        if mods not in (["global", "L2"], ["L2"]) or len(a) != 1:
            raise EmuError("unsupported prefetch form '%s'" % ins.text)
        kind, base, off = self.addr(a[0])
        if kind != "reg":
            raise EmuError("prefetch address must be a register: '%s'" % ins.text)
        what, me = ins.text, self

        def f(m):
            if m is not None and not m.any():
                return
            x = (base if m is None else base[m]).astype(np.int64) + off
            me.space("global").load(x, 1, 1, what)
            if me.mem.prefetched is not None:
                me.mem.prefetched.update((x >> 7).tolist())
        return f

    def op_atom(self, ins, mods, a, red=False):
        # atom.global.add.u32 d, [a], b (red: without d): the active threads in thread order
        # (CTAs run one after another, or as coroutines, so that is one valid order of a real run)
        for x in mods:
            if x not in ("global", "add", "u32", "relaxed", "acquire", "release", "acq_rel",
                         "gpu"):
                raise EmuError("unsupported modifier .%s in '%s'" % (x, ins.text))
        if "add" not in mods or "u32" not in mods:
            raise EmuError("only atom.add.u32 / red.add.u32 are supported: '%s'" % ins.text)
        if len(a) != (2 if red else 3):
            raise EmuError("operands not understood: '%s'" % ins.text)
        dd = None if red else self.dst(a[0], "u32")
        kind, base, off = self.addr(a[-2])
        if kind != "reg":
            raise EmuError("atom address must be a register: '%s'" % ins.text)
        src = self.src(a[-1], "u32")
        T, what, me = self.T, ins.text, self

        def f(m):
            idx = np.arange(T) if m is None else np.nonzero(m)[0]
            spc = me.space("global")
            for t in idx:
                ad = np.int64(int(base[t]) + off)
                cur = int(spc.load(ad, 4, 1, what)[0])
                sv = int(src if np.ndim(src) == 0 else src[t])
                spc.store(ad, 4, [np.uint32((cur + sv) & 0xFFFFFFFF)], what)
                if dd is not None:
                    dd[t] = np.uint32(cur)
        return f

    def op_red(self, ins, mods, a):
        return self.op_atom(ins, mods, a, red=True)

    op_fence = op_membar

    def space(self, name):
        return self.mem if name == "global" else self.shared


# --------------------------------------------------------------------------------------------
# execution

_cache = {}


def _get_kernel(ptx_text, name):
    key = (hash(ptx_text), len(ptx_text), name)
    k = _cache.get(key)
    if k is None:
        k = parse(ptx_text, name)
        _cache[key] = k
    return k


def _triple(x):
    x = tuple(int(v) for v in (x if isinstance(x, (tuple, list)) else (x,)))
    return x + (1,) * (3 - len(x))


def _param_values(kern, params):
    if isinstance(params, dict):
        params = [params[n] for _, n in kern.params]
    if len(params) != len(kern.params):
        raise EmuError("%s takes %d params (%s), got %d" % (kern.name, len(kern.params),
                       ", ".join(n for _, n in kern.params), len(params)))
    out = {}
    for (t, n), v in zip(kern.params, params):
        if _kind(t) == "f":
            out[n] = (t, _dtype(t)(v))
        else:
            size = _TSIZE[t]
            out[n] = (t, _UDT[size](int(v) & ((1 << (8 * size)) - 1)))
    return out


def run(ptx_text, kernel_name, grid=(1, 1, 1), block=(1, 1, 1), params=(), mem=None, ctas=None,
        poison=True, cooperative=False, seed=None):
    """Run kernel_name over grid x block (see module docstring). Returns a stats dict."""
    kern = _get_kernel(ptx_text, kernel_name)
    grid, block = _triple(grid), _triple(block)
    T = block[0] * block[1] * block[2]
    if mem is None:
        mem = Memory()
    pv = _param_values(kern, params)
    R = _Regs(kern, T)
    tid = np.arange(T, dtype=np.int64)
    lane = tid & 31
    warpbase = tid - lane
    comp = _Compiler(kern, R, pv, T, lane, warpbase)
    comp.mem = mem
    comp.shared = _Shared(kern.shared_size)
    comp.async_reset()
    code = [comp.compile(ins) for ins in kern.instrs]
    texts = [ins.text for ins in kern.instrs]
    # specials that do not change between CTAs
    sp = R.sp
    ix = _SPECIALS.index
    sp[ix("%tid.x")] = tid % block[0]
    sp[ix("%tid.y")] = (tid // block[0]) % block[1]
    sp[ix("%tid.z")] = tid // (block[0] * block[1])
    for i, c in enumerate("xyz"):
        sp[ix("%ntid." + c)] = block[i]
        sp[ix("%nctaid." + c)] = grid[i]
    sp[ix("%laneid")] = lane
    sp[ix("%warpid")] = tid >> 5
    sp[ix("%nwarpid")] = (T + 31) // 32
    if ctas is None:
        ctas = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
    ctas = [_triple(c) for c in ctas]
    for cta in ctas:
        if not all(0 <= cta[i] < grid[i] for i in range(3)):
            raise EmuError("CTA %r outside grid %r" % (cta, grid))

    def start(cta):
        for i, c in enumerate("xyz"):
            sp[ix("%ctaid." + c)] = cta[i]
        R.reset(poison)
        comp.shared.reset()
        comp.async_reset()
        return _run_cta(code, texts, T, lane)

    t0 = time.perf_counter()
    mem.written = np.zeros((mem.buf.size >> 2) + 1, np.uint8)
    try:
        with np.errstate(all="ignore"):
            if cooperative:
                steps = _run_together(ctas, start, R, comp, mem, seed)
            else:
                steps = 0
                for cta in ctas:
                    steps += _finish(cta, start(cta))
    finally:
        mem.written = None
    dt = time.perf_counter() - t0
    return {"ctas": len(ctas), "steps": steps, "seconds": dt,
            "sec_per_cta": dt / max(1, len(ctas))}


RUN, WBAR, WSHFL, DONE = 0, 1, 2, 3
SPIN_LIMIT = 10000  # yields of a CTA run alone before it is taken to wait for another CTA


def _finish(cta, gen):
    """Runs one CTA's coroutine to its end, alone; returns its SIMT steps."""
    try:
        for i in range(SPIN_LIMIT):
            next(gen)
    except StopIteration as e:
        return e.value
    except EmuError as e:
        raise EmuError("CTA %r: %s" % (cta, e)) from None
    raise EmuError("CTA %r: still polling a flag after %d strong loads: it waits for another "
                   "CTA (run the kernel with cooperative=True)" % (cta, SPIN_LIMIT))


def _run_together(ctas, start, R, comp, mem, seed):
    """A cooperative grid: every CTA resident at once, as coroutines, each turn running one CTA
    until its next strong load (ld.acquire / .relaxed / .volatile of global memory: a flag another
    CTA sets) or its end. A CTA's registers, specials and shared memory are saved and restored
    around its turn. Turns go round the CTAs in order, or with a seed to a CTA drawn at random
    (the same one again, often: a CTA past a barrier that does not hold runs ahead of the
    others). 100 turns a live CTA in which none starts, ends or stores to global memory are a
    deadlock (every CTA polls a flag nobody will set)."""
    saved = {}
    gens = {}
    live = list(range(len(ctas)))
    cur, steps, idle = None, 0, 0
    draw = np.random.default_rng(seed) if seed is not None else None

    def save(i):
        saved[i] = ({c: a.copy() for c, a in R.u.items()}, R.p.copy(), R.sp.copy(),
                    comp.shared.buf.copy(), comp.async_open, comp.async_groups)

    def restore(i):
        u, p, spv, sh, ao, ag = saved.pop(i)
        for c, a in R.u.items():
            np.copyto(a, u[c])
        np.copyto(R.p, p)
        np.copyto(R.sp, spv)
        np.copyto(comp.shared.buf, sh)
        comp.async_open, comp.async_groups = ao, ag

    turn = 0
    while live:
        if draw is not None:
            i = live[int(draw.integers(len(live)))]
        else:
            i = live[turn % len(live)]
            turn += 1
        stores, moved = mem.n_stores, False
        if cur != i:
            if cur is not None:
                save(cur)
            if i in gens:
                restore(i)
            else:
                gens[i] = start(ctas[i])
                moved = True
            cur = i
        try:
            next(gens[i])
        except StopIteration as e:
            steps += e.value
            live.remove(i)
            cur, moved = None, True
            turn -= 1  # the next CTA in order has taken i's place
        except EmuError as e:
            raise EmuError("CTA %r: %s" % (ctas[i], e)) from None
        idle = 0 if moved or mem.n_stores != stores else idle + 1
        if live and idle >= 100 * len(live):
            raise EmuError("deadlock: CTAs %s poll flags that no CTA sets"
                           % ", ".join(repr(ctas[i]) for i in live))
    return steps


def _gval(g, _unused=None):
    p, neg = g
    return ~p if neg else p.copy()


def _run_cta(code, texts, T, lane):
    n = len(code)
    pcs = np.zeros(T, np.int64)
    status = np.zeros(T, np.int8)
    alive = np.ones(T, bool)
    bar_id = np.zeros(T, np.int64)  # the barrier a WBAR thread waits at, and its count (0: all)
    bar_need = np.zeros(T, np.int64)
    fast = True
    bail = -1  # a pc the fast path handed to the slow path, which must run it once
    fm = None      # fast-mode mask: None = all threads
    upc = 0
    steps = 0
    nw = (T + 31) // 32
    weights = (np.uint64(1) << np.arange(32, dtype=np.uint64))
    full_warps = (T % 32 == 0)

    def shfl_complete(p, mm):
        """p: participating threads. Returns bool array: threads whose warp is complete."""
        pw = np.zeros(nw * 32, bool)
        pw[:T] = p
        bits = (pw.reshape(nw, 32).astype(np.uint64) * weights).sum(axis=1)
        need = np.broadcast_to(np.asarray(mm).astype(np.uint64) & np.uint64(0xFFFFFFFF), (T,))
        have = np.repeat(bits, 32)[:T]
        ok_t = ((need & ~have) == 0) | ~p
        okw = np.zeros(nw * 32, bool)
        okw[:T] = ok_t
        okw = okw.reshape(nw, 32).all(axis=1)
        return p & np.repeat(okw, 32)[:T]

    def where_err(i):
        return "instruction %d '%s'" % (i, texts[i])

    while True:
        if fast:
            if upc >= n:
                raise EmuError("fell off the end of the kernel")
            kind, fn, ex = code[upc]
            steps += 1
            if kind == PLAIN or kind == YIELD:
                try:
                    fn(fm)
                except EmuError as e:
                    raise EmuError("%s: %s" % (where_err(upc), e)) from None
                upc += 1
                if kind == YIELD:
                    yield
                continue
            if kind == BRA:
                tgt, g = ex
                if g is None:
                    upc = tgt
                    continue
                gv = _gval(g, fm)
                if fm is not None:
                    gv &= fm
                    alln = (gv == fm).all()
                else:
                    alln = gv.all()
                if alln:
                    upc = tgt
                elif not gv.any():
                    upc += 1
                else:
                    fast = False
                    pcs[:] = np.where(gv, tgt, upc + 1)
                continue
            if kind == EXIT:
                if ex is None:
                    return steps
                gv = _gval(ex, fm)
                if fm is not None:
                    gv &= fm
                if gv.any():
                    status[gv] = DONE
                    alive &= ~gv
                    if not alive.any():
                        return steps
                    fm = alive.copy()
                upc += 1
                continue
            if kind == BAR:
                if ex is None and fn is None:
                    upc += 1
                    continue
                fast = False
                pcs[:] = upc
                bail = upc
                continue   # handled by the slow path
            if kind == SHFL:
                mm, full, g = ex
                if fm is None and full and full_warps and g is None:
                    fn(None)
                    upc += 1
                    continue
                fast = False
                pcs[:] = upc
                bail = upc
                continue
            raise EmuError("internal: kind %r" % kind)

        # ---- slow (divergent) path
        run_ = status == RUN
        if not run_.any():
            w = status == WSHFL
            if w.any():
                progressed = False
                for pc in np.unique(pcs[w]):
                    p = w & (pcs == pc)
                    kind, fn, ex = code[pc]
                    ok = shfl_complete(p, ex[0])
                    if ok.any():
                        try:
                            fn(ok, ok)
                        except EmuError as e:
                            raise EmuError("%s: %s" % (where_err(pc), e)) from None
                        status[ok] = RUN
                        pcs[ok] += 1
                        progressed = True
                        break
                if not progressed:
                    t = int(np.flatnonzero(w)[0])
                    raise EmuError("deadlock: shfl.sync at %s waits for lanes of warp %d that never arrive "
                                   "(lanes waiting: %s; exited: %s; at bar: %s)"
                                   % (where_err(int(pcs[t])), t // 32,
                                      list(np.flatnonzero(w[t - t % 32:t - t % 32 + 32])),
                                      list(np.flatnonzero(~alive[t - t % 32:t - t % 32 + 32])),
                                      list(np.flatnonzero((status == WBAR)[t - t % 32:t - t % 32 + 32]))))
                continue
            b = status == WBAR
            if b.any():
                released = False
                for bid in np.unique(bar_id[b]):
                    w = b & (bar_id == bid)
                    need = int(bar_need[w].max())
                    if need and (bar_need[w] != need).any():
                        raise EmuError("barrier %d waited on with different thread counts" % bid)
                    if need and int(w.sum()) > need:
                        raise EmuError("%d threads wait at barrier %d of %d"
                                       % (int(w.sum()), bid, need))
                    if int(w.sum()) >= (need or int(alive.sum())):
                        status[w] = RUN
                        pcs[w] += 1
                        released = True
                if not released:
                    raise EmuError("deadlock: threads wait at barriers %s that cannot complete "
                                   "(%d threads alive)" % (sorted(set(bar_id[b].tolist())),
                                                           int(alive.sum())))
                continue
            return steps
        pc = int(pcs[run_].min())
        m = run_ & (pcs == pc)
        if (m == alive).all() and pc != bail:  # (the fast path left this pc to the slow one)
            fast = True
            upc = pc
            fm = None if alive.all() else alive.copy()
            continue
        if pc >= n:
            raise EmuError("fell off the end of the kernel")
        kind, fn, ex = code[pc]
        steps += 1
        bail = -1
        if kind == PLAIN or kind == YIELD:
            try:
                fn(m)
            except EmuError as e:
                raise EmuError("%s: %s" % (where_err(pc), e)) from None
            pcs[m] += 1
            if kind == YIELD:
                yield
        elif kind == BRA:
            tgt, g = ex
            tk = m if g is None else (m & _gval(g, m))
            pcs[tk] = tgt
            pcs[m & ~tk] += 1
        elif kind == EXIT:
            ek = m if ex is None else (m & _gval(ex, m))
            status[ek] = DONE
            alive &= ~ek
            pcs[m & ~ek] += 1
        elif kind == BAR:
            bk = m if ex is None else (m & _gval(ex, m))
            status[bk] = WBAR
            bar_id[bk], bar_need[bk] = fn if fn is not None else (0, 0)
            pcs[m & ~bk] += 1
        elif kind == SHFL:
            mm, full, g = ex
            p = m if g is None else (m & _gval(g, m))
            pcs[m & ~p] += 1
            ok = shfl_complete(p, mm)
            if ok.any():
                try:
                    fn(ok, ok)
                except EmuError as e:
                    raise EmuError("%s: %s" % (where_err(pc), e)) from None
                pcs[ok] += 1
            status[p & ~ok] = WSHFL
        else:
            raise EmuError("internal: kind %r" % kind)


def contraction_candidates(ptx_text, kernel_name):
    """Lint: mul.f32/f64 (no rounding modifier) whose result feeds an add/sub.f32/f64 (no rounding
    modifier).  ptxas may fuse such pairs into one fma on the GPU, which the emulator (rounding
    each instruction as written) does not model; PTX written as mul.rn / add.rn is never fused.
    Returns a list of (index, mul text, add text)."""
    k = _get_kernel(ptx_text, kernel_name)
    out = []
    ins = k.instrs
    for i, a in enumerate(ins):
        if a.op != "mul" or not set(a.mods) & {"f32", "f64"} or set(a.mods) & {"rn", "rz", "rm", "rp"}:
            continue
        d = a.args[0].strip()
        for j in range(i + 1, len(ins)):
            b = ins[j]
            if j in k.labels.values() and j != i + 1:
                break
            srcs = [x.strip() for x in b.args[1:]]
            if d in srcs or b.guard == d:
                if (b.op in ("add", "sub") and not set(b.mods) & {"rn", "rz", "rm", "rp"}
                        and set(b.mods) & {"f32", "f64"}):
                    out.append((i, a.text, b.text))
                break
            if b.args and b.args[0].strip() == d:
                break
            if b.op in ("bra", "ret", "exit"):
                break
    return out
