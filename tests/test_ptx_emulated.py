#!/usr/bin/env python3
"""test_ptx_emulated.py — generated kernels run on tools/ptxemu.py (no GPU), for the claims
that hold bit for bit and that ptxas alone cannot check:

  - layernorm and gemv_f16 (plain, bias; the MLP's second over several weight tiles) against
    float64 numpy;
  - gemv_f16 with the layer norm fused (norm_linear) == layernorm then the plain gemv;
  - the q/k/v gemv (norm_qkv) == three fused gemvs and a scatter of k and v into cache rows;
  - attn_gather / attn_rows joining their key splits in the last CTA: against float64 numpy,
    the same bits whichever CTA finishes last (shuffled orders), the counters back at zero;
  - attn_rows over f16 K/V (_kvh, the batch decoder's cross-attention) == attn_rows over the
    same values widened to f32;
  - attn_rows_tc (the cross-attention on tensor cores) against float64, whichever CTA ends
    last, a row alone = batched;
  - the encoder's fp16 forms (norm_qkv, norm_mlp over many rows): layernorm_c<C>_h and the
    epilogue bias_act_n<N>_f<flags | 8> == the f32 kernel's values rounded by f32_to_f16;
  - attn_scores over f16 keys (_kvh, word alignment on the batch decoder's audio region) ==
    attn_scores over the same values widened to f32;
  - attn_tc over several windows in one launch (the encoder's) == a launch a window, and its
    f16 form on K/V rounded to halves (the backend's attention_windows) == the f32 form; its
    fp16 output (norm_self_attention's) == the f32 output rounded;
  - bias_act's 16-byte form (4 elements a thread) == its element-by-element form (rows only
    4-byte aligned), and == numpy for bias and residual;
  - transpose_f32 (the encoder's log-Mel windows) at sizes with partial tiles: every element
    moved, nothing written past the end.
  - logits_part + logits_pick (greedy) and logits_topk_part + logits_topk_pick (beams) on a
    multilingual vocabulary against float64 numpy: suppressed tokens, ranges, the timestamp
    test either way, a tie across chunks (the first column), a row all masked, a confident
    row, a row with fewer tokens left than k; logits_sample's two kernels after logits_part
    against the float64 inverse CDF.

usage: test_ptx_emulated.py WHISPER_C PTXEMU_DIR [SANITIZER [GROUP]]
The groups (tiny, base, large-v3: the kernels of one model size) run in processes of their own,
one a core. Under a sanitizer (SANITIZER not "none") it exits 77: the generators run
instrumented in test_ptx.py, and the emulator is Python.
The emulator rounds every f32 operation as written; the GPU's ptxas may contract a mul.f32
and add.f32 into one fma, so hardware bits are checked by the gpu suite (test_gpu_kernels.c);
ex2.approx is numpy's exp2 here. Exits 77 without numpy.
"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

GROUPS = ("tiny", "base", "large-v3")
if len(sys.argv) > 3 and sys.argv[3] not in ("", "none"):
    print("under %s: skipped (test_ptx.py runs the generators instrumented)" % sys.argv[3])
    sys.exit(77)

try:
    import numpy as np
except ImportError:
    print("numpy missing: skipped")
    sys.exit(77)
if len(sys.argv) < 5:
    def group(g):
        return subprocess.run([sys.executable, __file__] + sys.argv[1:3] + ["none", g],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with concurrent.futures.ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        runs = list(pool.map(group, GROUPS))
    for g, r in zip(GROUPS, runs):
        print("--- %s (exit %d)\n%s" % (g, r.returncode, r.stdout), end="")
    sys.exit(1 if any(r.returncode for r in runs) else 0)
sys.path.insert(0, sys.argv[2])
from ptxemu import Memory, run  # noqa: E402

failures = 0


def check(what, ok, info=""):
    global failures
    print("%-6s %s%s" % ("ok" if ok else "NOT OK", what, "  " + info if info else ""))
    failures += not ok


def kernels(size):
    """name -> PTX text of every kernel whisper-c generates for a model size, for sm_90 (the
    H100's: with the dependent-launch wait, ptx.h ptx_grid_dep_wait)"""
    with tempfile.TemporaryDirectory(prefix="wc_ptxemu_") as d:
        subprocess.run([sys.argv[1], "ptx", "--size", size, "--sm", "90", "--out", d], check=True,
                       stdout=subprocess.DEVNULL)
        texts = {f[:-4]: open(os.path.join(d, f)).read() for f in os.listdir(d)}

    def ptx(name):
        return texts[name]
    ptx.names = list(texts)
    return ptx


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def layernorm(ptx, mem, K, pout, pin, pg, pb, rows):
    name = "layernorm_c%d" % K
    run(ptx(name), name, grid=(rows, 1, 1), block=(128, 1, 1), params=[pout, pin, pg, pb, rows],
        mem=mem)


def gemv(ptx, mem, K, flags, pout, ld, pin, pw, pb, rows, more=(), n=None, ctas=None, tc=False,
         tiles=None):
    """gemv_f16, or with tc gemv_tc with `tiles` row tiles a CTA, by default those the backend
    picks (4 where the kernel list has no 2-tile form: the same bits)"""
    n = n or K
    if tc:
        t, cols = tiles or (1 if rows <= 8 else 2 if rows <= 16 else 4), tc_cols(flags)
        if not tiles and "gemv_tc_k%d_c%d_n%d_f%d" % (K, cols, t, flags) not in ptx.names:
            t = 4
        name, cta_rows = "gemv_tc_k%d_c%d_n%d_f%d" % (K, cols, t, flags), 8 * t
    else:
        name, cols, cta_rows = "gemv_f16_k%d_f%d" % (K, flags), 32, 8
    gx = ((3 * n if flags & 16 else n) + cols - 1) // cols
    run(ptx(name), name, grid=(gx, (rows + cta_rows - 1) // cta_rows, 1), block=(256, 1, 1),
        params=[pout, ld, pin, pw, pb, n, rows] + list(more), mem=mem, ctas=ctas)


def tc_cols(flags):
    """kernel_gemv_tc_cols: 32 output columns a CTA with the norm, else 16"""
    return 32 if flags & 8 else 16


def test_gemv_tc(ptx, K, rng, n, cases):
    """gemv_tc (the step's linears on tensor cores, the emulator's mma summing exactly) against
    float64, a padded output row untouched; then each row alone (1 row, 1 tile a CTA) and
    every other tile count: the bits of the launch over all rows"""
    for flags, rows in cases:
        W = (rng.standard_normal((n, K)) / np.sqrt(K)).astype(np.float16)
        x = (2 * rng.standard_normal((rows, K))).astype(np.float32)
        x[0, :5] = (1e-6, -3e-8, 6e4, 1 / 3, 0)  # tiny, fp16-subnormal, near fp16's top
        b = rng.standard_normal(n).astype(np.float32)
        ld = n + 8
        old = rng.standard_normal((rows, ld)).astype(np.float32)
        if not flags & 4:
            old[:, :n] = np.nan
        mem = Memory(1 << 25)
        px, pw, pb = mem.put(x), mem.put(W), mem.put(b)
        tiles = 1 if rows <= 8 else 2 if rows <= 16 else 4
        po = mem.put(old)
        gemv(ptx, mem, K, flags, po, ld, px, pw, pb, rows, n=n, tc=True, tiles=tiles)
        y = mem.get(po, np.float32, rows * ld).reshape(rows, ld)
        ref = x.astype(np.float64) @ W.astype(np.float64).T
        ref += b if flags & 1 else 0
        if flags & 4:
            ref += old[:, :n]
        if flags & 2:
            from math import erf
            ref = ref * 0.5 * (1 + np.vectorize(erf)(ref / np.sqrt(2)))
        err = np.abs(y[:, :n] - ref).max() / np.abs(ref).max()
        pad = same_bits(y[:, n:], old[:, n:])
        check("gemv_tc_k%d_n%d_f%d, %d rows, %d outputs vs float64" % (K, tiles, flags, rows, n),
              err < 1e-6 and pad, "%.1e" % err)
        others = [t for t in (1, 2, 4) if t != tiles and
                  "gemv_tc_k%d_c%d_n%d_f%d" % (K, tc_cols(flags), t, flags) in ptx.names]
        same = True
        for t in others:
            po2 = mem.put(old)
            gemv(ptx, mem, K, flags, po2, ld, px, pw, pb, rows, n=n, tc=True, tiles=t)
            same &= same_bits(mem.get(po2, np.float32, rows * ld), y.reshape(-1))
        po2 = mem.put(old)
        for r in range(rows):
            gemv(ptx, mem, K, flags, po2 + 4 * r * ld, ld, px + 4 * r * K, pw, pb, 1, n=n,
                 tc=True, tiles=1)
        same &= same_bits(mem.get(po2, np.float32, rows * ld), y.reshape(-1))
        check("gemv_tc_k%d_f%d: %d rows alone and with %s tiles a CTA: the same bits"
              % (K, flags, rows, others), same)


def ln64(x, g, b):
    xd = x.astype(np.float64)
    return (xd - xd.mean(1, keepdims=True)) / np.sqrt(xd.var(1, keepdims=True) + 1e-5) * g + b


def test_layernorm_gemv(ptx, K, rng):
    rows = 3
    mem = Memory(1 << 24)
    x = (2 * rng.standard_normal((rows, K)) + 0.5).astype(np.float32)
    g, b = rng.standard_normal(K).astype(np.float32), rng.standard_normal(K).astype(np.float32)
    po = mem.alloc(rows * K * 4)
    layernorm(ptx, mem, K, po, mem.put(x), mem.put(g), mem.put(b), rows)
    y, ref = mem.get(po, np.float32, rows * K).reshape(rows, K), ln64(x, g, b)
    err = np.abs(y - ref).max() / np.abs(ref).max()
    check("layernorm_c%d, %d rows vs float64" % (K, rows), err < 1e-6, "%.1e" % err)
    W = (rng.standard_normal((K, K)) / np.sqrt(K)).astype(np.float16)
    for flags in (0, 1):
        for rows in (1, 10):
            x = rng.standard_normal((rows, K)).astype(np.float32)
            b = rng.standard_normal(K).astype(np.float32)
            mem = Memory(1 << 24)
            ld = K + 32  # a padded output row: the pad stays unwritten (NaN bytes)
            po = mem.alloc(rows * ld * 4)
            gemv(ptx, mem, K, flags, po, ld, mem.put(x), mem.put(W), mem.put(b), rows)
            y = mem.get(po, np.float32, rows * ld).reshape(rows, ld)
            ref = x.astype(np.float64) @ W.astype(np.float64).T + (b if flags else 0)
            err = np.abs(y[:, :K] - ref).max() / np.abs(ref).max()
            pad = y[:, K:].view(np.uint32)
            check("gemv_f16_k%d_f%d, %d rows vs float64" % (K, flags, rows),
                  err < 1e-6 and (pad == 0xFFFFFFFF).all(), "%.1e" % err)


def test_fc2(ptx, K, rng, n=None):
    """the MLP's second gemv (bias, residual) over 4 K inputs: several weight tiles (the loop,
    the next tile's loads, the L2 prefetches before the grid wait), a last one of another
    width; n outputs (default K; fewer keep large shapes quick)"""
    Kin, n = 4 * K, n or K
    W = (rng.standard_normal((n, Kin)) / np.sqrt(Kin)).astype(np.float16)
    for rows in (1, 10):
        x = rng.standard_normal((rows, Kin)).astype(np.float32)
        old = rng.standard_normal((rows, n)).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        mem = Memory(1 << 25)
        po = mem.put(old)
        gemv(ptx, mem, Kin, 5, po, n, mem.put(x), mem.put(W), mem.put(b), rows, n=n)
        y = mem.get(po, np.float32, rows * n).reshape(rows, n)
        ref = old.astype(np.float64) + x.astype(np.float64) @ W.astype(np.float64).T + b
        err = np.abs(y - ref).max() / np.abs(ref).max()
        check("gemv_f16_k%d_f5 (out += x . W + b), %d rows, %d outputs vs float64"
              % (Kin, rows, n), err < 1e-6, "%.1e" % err)


def head_to_wait(text, tail=""):
    """A kernel's text up to its griddepcontrol.wait, then `tail` and a return; labels its
    branches reach past the cut (CTAs past the rows branching to the wait) placed there"""
    head = text[:text.index("    griddepcontrol.wait;")] + tail
    missing = set(re.findall(r"bra (L\d+);", head)) - set(re.findall(r"^(L\d+):", head, re.M))
    return head + "".join("%s:\n" % lb for lb in sorted(missing)) + "    ret;\n}\n"


def test_before_wait(ptx, names, rng):
    """gemv_f16 and gemv_tc run on sm_90 while the kernel before it still writes (ptx.h
    ptx_grid_dep_wait): up to its griddepcontrol.wait it may read only weights and biases
    (the step's attentions: their K/V and the tables uploaded at the step's start).
    Each gemv kernel cut off at its wait, run with every activation pointer (out, in, the
    q/k/v caches and row table; gemv_f16's norm gain and bias too, which it reads later)
    pointing at no allocation: any access to them raises"""
    for name in sorted(n for n in names  # a chain waits first of all (gemv_chain.c)
                       if n.startswith("gemv_") and not n.startswith("gemv_chain")):
        tc = name.startswith("gemv_tc_")
        if tc:  # gemv_tc_k<K>_c<C>_n<T>_f<flags>: gemv_f16's parameters
            K, C, T, flags = (int(v) for v in re.findall(r"\d+", name))
        else:
            K, flags = (int(v) for v in name[len("gemv_f16_k"):].split("_f"))
        text = ptx(name)
        head = head_to_wait(text)
        mem = Memory(1 << 24)
        n = 64
        pw = mem.put((rng.standard_normal((3 * n if flags & 16 else n, K)) / 8).astype(np.float16))
        pb = mem.put(rng.standard_normal(n).astype(np.float32))
        nowhere = 1 << 40  # outside every allocation
        more = [nowhere] * 2 if flags & 8 else []
        if tc and flags & 8:  # gemv_tc loads the norm's gain and bias (weights) with its own
            more = [mem.put(rng.standard_normal(K).astype(np.float32)) for _ in range(2)]
        if flags & 16:  # wk, wv (weights), bk, bv (biases), k and v caches, row table
            pw = mem.put((rng.standard_normal((n, K)) / 8).astype(np.float16))
            more += [mem.put((rng.standard_normal((n, K)) / 8).astype(np.float16)) for _ in range(2)]
            more += [pb, pb, nowhere, nowhere, nowhere]
        ok, why = True, ""
        try:
            cols = C if tc else 32
            grid = ((3 * n if flags & 16 else n) // cols, 2, 1)
            run(head, name, grid=grid, block=(256, 1, 1),
                params=[nowhere, n, nowhere, pw, pb, n, 10] + more, mem=mem)
        except Exception as e:  # noqa: BLE001 -- the emulator's error names the access
            ok, why = False, str(e)[:200]
        check("%s: before its grid wait it reads only weights and biases" % name, ok, why)
    for name in sorted(n for n in names if n.startswith(("attn_rows_", "attn_gather_"))):
        # the step's attentions: the K/V (attn_rows_tc copies them; the others send their
        # lines to L2), and the tables uploaded at the step's start (lanes; or slots and key
        # counts) only: the query, the output and the split records and counters point nowhere
        H, D = (int(v) for v in re.findall(r"\d+", name)[:2])
        tc, gather, esz = "_tc_" in name, name.startswith("attn_gather"), 2 if "_kvh" in name else 4
        text = ptx(name)
        # the copies complete at the cut (the emulator reads a cp.async's source at its
        # wait_group)
        head = head_to_wait(text, "    cp.async.wait_group 0;\n" if tc else "")
        mem, nowhere, n_keys, rows, C = Memory(1 << 24), 1 << 40, 100, 3, H * D
        if gather:  # row g's keys: slots g n_keys + j of a cache of rows x n_keys rows
            slots = mem.put(np.arange(rows * n_keys, dtype=np.int32))
            kv = [mem.put(np.zeros((rows * n_keys, C), np.float32)) for _ in range(2)]
            params = [nowhere, nowhere, kv[0], kv[1], slots, n_keys,
                      mem.put(np.array([n_keys, 1, 57], np.int32)), rows, n_keys,
                      nowhere, nowhere]
        else:  # two lanes' K/V, n_keys rows each
            dt = np.float16 if tc or esz == 2 else np.float32
            kv = [mem.put(np.zeros((2, n_keys, C), dt)) for _ in range(2)]
            params = [nowhere, nowhere, kv[0], kv[1], C, n_keys * C,
                      mem.put(np.array([1, 0, 1], np.int32)), rows, n_keys, nowhere, nowhere]
        split = 128 if tc else 64
        ok, why = True, ""
        mem.prefetched = set()
        try:
            run(head, name, grid=(rows, H, -(-n_keys // split)), block=(128, 1, 1),
                params=params, mem=mem)
        except Exception as e:  # noqa: BLE001 -- the emulator's error names the access
            ok, why = False, str(e)[:200]
        check("%s: before its grid wait it reads only the K/V and the step's tables%s"
              % (name, "" if tc else " (%d lines to L2)" % len(mem.prefetched)),
              ok and (tc or len(mem.prefetched) > 0), why)
    for name in sorted(n for n in names if n.startswith("gemv_chain_")):
        # its first link's weights go to L2 before the wait (gemv_chain.c): only they are real
        links = [(int(k), int(f or -1)) for k, f, _ in
                 re.findall(r"_k(\d+)(?:f(\d+)|a(\d)h\d+)", name)]  # attention: f -1
        text = ptx(name)
        head = head_to_wait(text)
        mem, nowhere, params = Memory(1 << 24), 1 << 40, [1 << 40]
        for i, (K, flags) in enumerate(links):
            if flags < 0:  # an attention link's grid, then its 11 parameters (gather's, rows')
                params += [1, 1, 1] + [nowhere] * 4 + (
                    [nowhere, K, nowhere, 1, 1] if "_k%da1h" % K in name else
                    [K, nowhere, nowhere, 1, 1]) + [nowhere, nowhere]
                continue
            cols = tc_cols(flags)
            n = 4 * K if flags & 2 else K // 4 if K > links[0][0] else K  # fc1, fc2, K x K
            w = [mem.put(np.zeros((n, K), np.float16)) if i == 0 else nowhere
                 for _ in range(3 if flags & 16 else 1)]
            params += [(3 if flags & 16 else 1) * n // cols, 1,
                        nowhere, n, nowhere, w[0], nowhere, n, 3]
            params += [nowhere] * 2 if flags & 8 else []
            params += [w[1], w[2]] + [nowhere] * 5 if flags & 16 else []
        ok, why = True, ""
        mem.prefetched = set()
        try:
            run(head, name, grid=(5, 1, 1), block=(256, 1, 1), params=params, mem=mem)
        except Exception as e:  # noqa: BLE001 -- the emulator's error names the access
            ok, why = False, str(e)[:200]
        check("%s: before its grid wait it reads only its first link's weights (%d lines of "
              "them to L2)" % (name, len(mem.prefetched)), ok and len(mem.prefetched) > 0, why)


def test_norm_fused(ptx, K, rng, tc=False):
    W = (rng.standard_normal((K, K)) / np.sqrt(K)).astype(np.float16)
    kind = "tc" if tc else "f16"
    for fused, plain in ((9, 1), (8, 0)) + (((11, 3),) if tc else ()):
        for rows in (1, 5, 10) + ((21,) if tc else ()):
            mem = Memory(1 << 24)
            x = (3 * rng.standard_normal((rows, K))).astype(np.float32)
            px, pw = mem.put(x), mem.put(W)
            pg, plb = mem.put(rng.standard_normal(K).astype(np.float32)), \
                mem.put(rng.standard_normal(K).astype(np.float32))
            pb = mem.put(rng.standard_normal(K).astype(np.float32))
            pf, ph, ps = mem.alloc(rows * K * 4), mem.alloc(rows * K * 4), mem.alloc(rows * K * 4)
            gemv(ptx, mem, K, fused, pf, K, px, pw, pb, rows, more=[pg, plb], tc=tc)
            layernorm(ptx, mem, K, ph, px, pg, plb, rows)
            gemv(ptx, mem, K, plain, ps, K, ph, pw, pb, rows, tc=tc)
            check("gemv_%s_k%d_f%d == layernorm + f%d, %d rows" % (kind, K, fused, plain, rows),
                  same_bits(mem.get(pf, np.float32, rows * K), mem.get(ps, np.float32, rows * K)))


def test_qkv(ptx, K, rng, tc=False):
    for rows in (1, 10) + ((40,) if tc else ()):
        mem = Memory(1 << 26)
        n_dst = 3 * rows + 7
        x = (3 * rng.standard_normal((rows, K))).astype(np.float32)
        W = [(rng.standard_normal((K, K)) / np.sqrt(K)).astype(np.float16) for _ in range(3)]
        cache = [rng.standard_normal((n_dst, K)).astype(np.float32) for _ in range(2)]
        dst = rng.permutation(n_dst)[:rows].astype(np.int32)
        px, pw = mem.put(x), [mem.put(w) for w in W]
        pg, plb = mem.put(rng.standard_normal(K).astype(np.float32)), \
            mem.put(rng.standard_normal(K).astype(np.float32))
        pbq, pbv = mem.put(rng.standard_normal(K).astype(np.float32)), \
            mem.put(rng.standard_normal(K).astype(np.float32))
        pkc, pvc, pdst = mem.put(cache[0]), mem.put(cache[1]), mem.put(dst)
        pq, ref = mem.alloc(rows * K * 4), [mem.alloc(rows * K * 4) for _ in range(3)]
        gemv(ptx, mem, K, 24, pq, K, px, pw[0], pbq, rows,
             more=[pg, plb, pw[1], pw[2], 0, pbv, pkc, pvc, pdst], tc=tc)
        for i, (flags, pb) in enumerate(((9, pbq), (8, 0), (9, pbv))):
            gemv(ptx, mem, K, flags, ref[i], K, px, pw[i], pb, rows, more=[pg, plb], tc=tc)
        for j in range(2):
            cache[j][dst] = mem.get(ref[j + 1], np.float32, rows * K).reshape(rows, K)
        ok = same_bits(mem.get(pq, np.float32, rows * K), mem.get(ref[0], np.float32, rows * K))
        for j, p in enumerate((pkc, pvc)):
            ok &= same_bits(mem.get(p, np.float32, n_dst * K), cache[j].reshape(-1))
        check("gemv_%s_k%d_f24 (q, k and v into cache rows) == f9, f8, f9 + a scatter, %d rows"
              % ("tc" if tc else "f16", K, rows), ok)


def attn64(q, k, v):
    s = k.astype(np.float64) @ q.astype(np.float64) / np.sqrt(len(q))
    w = np.exp(s - s.max())
    return w / w.sum() @ v.astype(np.float64)


def test_split(ptx, H, rng, mode, n_rows, n_keys):
    D, S = 64, 64
    C, nz = H * D, (n_keys + S - 1) // S
    mem = Memory(1 << 27)
    q = rng.standard_normal((n_rows, C)).astype(np.float32)
    pq, pout = mem.put(q), mem.alloc(n_rows * C * 4)
    part = mem.alloc(n_rows * H * nz * (D + 2) * 4)
    count = mem.put(np.zeros(n_rows * H, np.uint32))
    ref = np.zeros((n_rows, C))
    if mode == "gather":
        n_slots = n_rows * 448
        k, v = rng.standard_normal((2, n_slots, C)).astype(np.float32)
        slots = np.stack([rng.permutation(n_slots)[:448] for _ in range(n_rows)]).astype(np.int32)
        n_kv = np.array([max(1, n_keys - 37 * g) for g in range(n_rows)], np.int32)
        args = [pq, mem.put(k), mem.put(v), mem.put(slots), 448, mem.put(n_kv), n_rows, n_keys]
        for g in range(n_rows):
            rows = slots[g, :n_kv[g]]
            for h in range(H):
                cs = slice(h * D, (h + 1) * D)
                ref[g, cs] = attn64(q[g, cs], k[rows, cs], v[rows, cs])
    else:
        stride = n_keys * C + 32
        k, v = rng.standard_normal((2, 2 * stride)).astype(np.float32)
        lane = np.array([(g + 1) % 2 for g in range(n_rows)], np.int32)
        args = [pq, mem.put(k), mem.put(v), C, stride, mem.put(lane), n_rows, n_keys]
        for g in range(n_rows):
            o = lane[g] * stride
            kg, vg = (a[o:o + n_keys * C].reshape(n_keys, C) for a in (k, v))
            for h in range(H):
                cs = slice(h * D, (h + 1) * D)
                ref[g, cs] = attn64(q[g, cs], kg[:, cs], vg[:, cs])
    name = "attn_%s_h%d_d%d" % (mode, H, D)
    ctas = [(x, y, z) for z in range(nz) for y in range(H) for x in range(n_rows)]
    outs = []
    for order in (ctas, [ctas[i] for i in rng.permutation(len(ctas))]):
        mem.write(pout, np.full(n_rows * C, np.nan, np.float32))
        mem.write(part, np.full(n_rows * H * nz * (D + 2), np.nan, np.float32))
        run(ptx(name), name, grid=(n_rows, H, nz), block=(128, 1, 1),
            params=[pout] + args + [part, count], mem=mem, ctas=order)
        outs.append(mem.get(pout, np.float32, n_rows * C))
        if (mem.get(count, np.uint32, n_rows * H) != 0).any():
            outs.append(None)
    err = np.abs(outs[0].reshape(n_rows, C) - ref).max() / np.abs(ref).max()
    check("%s, %d rows, %d keys (%d splits): float64, any CTA last, counters back to 0"
          % (name, n_rows, n_keys, nz),
          len(outs) == 2 and err < 1e-5 and same_bits(outs[0], outs[1]), "%.1e" % err)


def test_rows_tc(ptx, H, rng, n_rows, n_keys):
    """attn_rows_tc (the cross-attention of a batch step on tensor cores, fp16 K/V): against
    float64 within fp32-sized error (the query and weights as two fp16 terms each); the same
    bits whichever CTA ends last, counters back to 0; each row alone (its own launch) the bits
    it has in the batch"""
    D, S = 64, 128
    C, nz = H * D, (n_keys + S - 1) // S
    mem = Memory(1 << 27)
    q = rng.standard_normal((n_rows, C)).astype(np.float32)
    stride = n_keys * C + 64  # elements between lanes: a multiple of 8
    k, v = rng.standard_normal((2, 2 * stride)).astype(np.float16)
    lane = np.array([(g + 1) % 2 for g in range(n_rows)], np.int32)
    pq, pk, pv, pl = mem.put(q), mem.put(k), mem.put(v), mem.put(lane)
    pout = mem.alloc(n_rows * C * 4)
    part = mem.alloc(n_rows * H * nz * (D + 2) * 4)
    count = mem.put(np.zeros(n_rows * H, np.uint32))
    ref = np.zeros((n_rows, C))
    for g in range(n_rows):
        o = lane[g] * stride
        kg, vg = (a[o:o + n_keys * C].reshape(n_keys, C).astype(np.float64) for a in (k, v))
        for h in range(H):
            cs = slice(h * D, (h + 1) * D)
            ref[g, cs] = attn64(q[g, cs], kg[:, cs], vg[:, cs])
    name = "attn_rows_tc_h%d_d%d" % (H, D)
    ctas = [(x, y, z) for z in range(nz) for y in range(H) for x in range(n_rows)]
    outs = []
    for order in (ctas, [ctas[i] for i in rng.permutation(len(ctas))]):
        mem.write(pout, np.full(n_rows * C, np.nan, np.float32))
        run(ptx(name), name, grid=(n_rows, H, nz), block=(128, 1, 1),
            params=[pout, pq, pk, pv, C, stride, pl, n_rows, n_keys, part, count], mem=mem,
            ctas=order)
        outs.append(mem.get(pout, np.float32, n_rows * C))
        if (mem.get(count, np.uint32, n_rows * H) != 0).any():
            outs.append(None)
    err = np.abs(outs[0].reshape(n_rows, C) - ref).max() / np.abs(ref).max()
    g = n_rows - 1  # the last row alone, in a launch of one row on a grid of two (the CTAs
    # past n_seq wait for the kernel before, then end: nothing written)
    out2 = mem.alloc(2 * C * 4)
    mem.write(out2, np.full(2 * C, np.nan, np.float32))
    run(ptx(name), name, grid=(2, H, nz), block=(128, 1, 1),
        params=[out2, pq + 4 * g * C, pk, pv, C, stride, pl + 4 * g, 1, n_keys, part, count],
        mem=mem)
    alone = mem.get(out2, np.float32, 2 * C)
    check("%s, %d rows, %d keys (%d splits): float64, any CTA last, counters back to 0, a row "
          "alone = batched, CTAs past the rows write nothing" % (name, n_rows, n_keys, nz),
          len(outs) == 2 and err < 2e-6 and same_bits(outs[0], outs[1])
          and same_bits(alone[:C], outs[0][g * C:(g + 1) * C]) and np.isnan(alone[C:]).all(),
          "%.1e" % err)


def test_rows_kvh(ptx, H, rng, n_rows, n_keys):
    D, S = 64, 64
    C, nz = H * D, (n_keys + S - 1) // S
    stride = n_keys * C + 32
    q = rng.standard_normal((n_rows, C)).astype(np.float32)
    kh, vh = rng.standard_normal((2, 2 * stride)).astype(np.float16)
    lane = np.array([(g + 1) % 2 for g in range(n_rows)], np.int32)
    outs = []
    for suffix, k, v in (("", kh.astype(np.float32), vh.astype(np.float32)), ("_kvh", kh, vh)):
        mem = Memory(1 << 26)
        pout, part = mem.alloc(n_rows * C * 4), mem.alloc(n_rows * H * nz * (D + 2) * 4)
        mem.write(pout, np.full(n_rows * C, np.nan, np.float32))
        count = mem.put(np.zeros(n_rows * H, np.uint32))
        name = "attn_rows_h%d_d%d%s" % (H, D, suffix)
        run(ptx(name), name, grid=(n_rows, H, nz), block=(128, 1, 1),
            params=[pout, mem.put(q), mem.put(k), mem.put(v), C, stride, mem.put(lane), n_rows,
                    n_keys, part, count], mem=mem)
        outs.append(mem.get(pout, np.float32, n_rows * C))
    check("attn_rows_h%d_d%d_kvh, %d rows, %d keys: the f32 kernel's bits on widened K/V"
          % (H, D, n_rows, n_keys), same_bits(outs[0], outs[1]) and not np.isnan(outs[1]).any())


def test_attn_tc(ptx, H, rng, t_len, s_len):
    """attn_tc (the encoder's and prompts' attention on tensor cores, the emulator's mma summing
    exactly) against float64 within fp16 operand rounding; attn_tc_..._kvh on fp16 K/V == the
    f32 kernel on the same values widened, bit for bit"""
    D = 64
    C = H * D
    ld = C + 64  # K/V rows wider than the heads, as the encoder's fused k|v buffers
    q = rng.standard_normal((t_len, C)).astype(np.float32)
    kh, vh = rng.standard_normal((2, s_len, ld)).astype(np.float16)
    outs = []
    for suffix, k, v in (("", kh.astype(np.float32), vh.astype(np.float32)), ("_kvh", kh, vh)):
        mem = Memory(1 << 25)
        pout = mem.put(np.full(t_len * C, np.nan, np.float32))
        name = "attn_tc_h%d_d%d%s" % (H, D, suffix)
        run(ptx(name), name, grid=((t_len + 63) // 64, H, 1), block=(128, 1, 1),
            params=[pout, mem.put(q), mem.put(k), mem.put(v), ld, t_len, s_len, 0], mem=mem)
        outs.append(mem.get(pout, np.float32, t_len * C).reshape(t_len, C))
    ref = np.empty((t_len, C))
    for h in range(H):
        sl = slice(h * D, (h + 1) * D)
        sc = q[:, sl].astype(np.float64) @ kh[:, sl].astype(np.float64).T / np.sqrt(D)
        w = np.exp(sc - sc.max(1, keepdims=True))
        ref[:, sl] = (w / w.sum(1, keepdims=True)) @ vh[:, sl].astype(np.float64)
    err = np.abs(outs[0] - ref).max() / np.abs(ref).max()
    check("attn_tc_h%d_d%d, %d queries over %d keys vs float64" % (H, D, t_len, s_len),
          err < 3e-3, "%.1e" % err)
    check("attn_tc_h%d_d%d_kvh: the f32 kernel's bits on widened K/V" % (H, D),
          same_bits(outs[0], outs[1]) and not np.isnan(outs[1]).any())


def test_attn_tc_windows(ptx, H, rng, t_len, n_win):
    """attn_tc over n_win windows in one launch (grid z, backend.h attention_windows): each
    window's output is what a launch of its own gives, bit for bit; nothing past the last; and
    the backend's way, K and V rounded to halves first and attn_tc_..._kvh, the same bits"""
    D = 64
    C = H * D
    name = "attn_tc_h%d_d%d" % (H, D)
    q, k, v = rng.standard_normal((3, n_win * t_len, C)).astype(np.float32)
    mem = Memory(1 << 25)
    pq, pk, pv = mem.put(q), mem.put(k), mem.put(v)
    pall = mem.put(np.full(n_win * t_len * C + 64, np.nan, np.float32))
    run(ptx(name), name, grid=((t_len + 63) // 64, H, n_win), block=(128, 1, 1),
        params=[pall, pq, pk, pv, C, t_len, t_len, -1], mem=mem)
    got = mem.get(pall, np.float32, n_win * t_len * C + 64)
    ok = np.isnan(got[n_win * t_len * C:]).all()
    for i in range(n_win):
        o, pone = i * t_len * C, mem.put(np.full(t_len * C, np.nan, np.float32))
        run(ptx(name), name, grid=((t_len + 63) // 64, H, 1), block=(128, 1, 1),
            params=[pone, pq + 4 * o, pk + 4 * o, pv + 4 * o, C, t_len, t_len, -1], mem=mem)
        ok = ok and same_bits(got[o:o + t_len * C], mem.get(pone, np.float32, t_len * C))
    check("%s, %d windows of %d in one launch == each alone" % (name, n_win, t_len), ok)
    ph = mem.put(np.full(n_win * t_len * C, np.nan, np.float32))
    pk16, pv16 = mem.put(k.astype(np.float16)), mem.put(v.astype(np.float16))
    run(ptx(name + "_kvh"), name + "_kvh", grid=((t_len + 63) // 64, H, n_win),
        block=(128, 1, 1), params=[ph, pq, pk16, pv16, C, t_len, t_len, -1], mem=mem)
    check("%s_kvh on K and V rounded to halves, %d windows == %s" % (name, n_win, name),
          same_bits(got[:n_win * t_len * C], mem.get(ph, np.float32, n_win * t_len * C)))
    po = mem.put(np.full(n_win * t_len * C + 64, np.nan, np.float16))
    run(ptx(name + "_kvh_oh"), name + "_kvh_oh", grid=((t_len + 63) // 64, H, n_win),
        block=(128, 1, 1), params=[po, pq, pk16, pv16, C, t_len, t_len, -1], mem=mem)
    oh = mem.get(po, np.float16, n_win * t_len * C + 64)
    check("%s_kvh_oh (the fused half-block's, fp16 out) == %s's output rounded to fp16"
          % (name, name), same_bits(oh[:n_win * t_len * C], got[:n_win * t_len * C]
                                    .astype(np.float16)) and np.isnan(oh[n_win * t_len * C:]).all())


def to_half(ptx, mem, pin, n):
    """f32_to_f16 over n floats at pin: the rounding the fp16 forms must give"""
    pout = mem.alloc(n * 2)
    run(ptx("f32_to_f16"), "f32_to_f16", grid=((n + 1023) // 1024, 1, 1), block=(256, 1, 1),
        params=[pout, pin, n], mem=mem)
    return mem.get(pout, np.uint16, n)


def test_half_forms(ptx, K, rng):
    rows = 3
    mem = Memory(1 << 24)
    x = (2 * rng.standard_normal((rows, K)) + 0.5).astype(np.float32)
    px, pg, pb = mem.put(x), mem.put(rng.standard_normal(K).astype(np.float32)), \
        mem.put(rng.standard_normal(K).astype(np.float32))
    pf, ph = mem.alloc(rows * K * 4), mem.alloc(rows * K * 2)
    layernorm(ptx, mem, K, pf, px, pg, pb, rows)
    name = "layernorm_c%d_h" % K
    run(ptx(name), name, grid=(rows, 1, 1), block=(128, 1, 1), params=[ph, px, pg, pb, rows],
        mem=mem)
    check("%s == layernorm_c%d then f32_to_f16, %d rows" % (name, K, rows),
          (mem.get(ph, np.uint16, rows * K) == to_half(ptx, mem, pf, rows * K)).all())
    # fc1's epilogue: bias + GELU, in place (f3) and into halves (f11), x left alone by f11;
    # values around GELU's bend and big enough to round
    N, rows = 4 * K, 2
    h = (3 * rng.standard_normal((rows, N))).astype(np.float32)
    flags = 3
    mem = Memory(1 << 24)
    pxf, pxh, pb = mem.put(h), mem.put(h), mem.put(rng.standard_normal(N).astype(np.float32))
    pout = mem.alloc(rows * N * 2)
    for f, p_x, p_out in ((flags, pxf, 0), (flags | 8, pxh, pout)):
        bias_act(ptx, mem, N, f, p_x, N, pb if f & 1 else 0, 0, rows, p_out)
    check("bias_act_n%d_f%d == f%d then f32_to_f16, x untouched" % (N, flags | 8, flags),
          (mem.get(pout, np.uint16, rows * N) == to_half(ptx, mem, pxf, rows * N)).all()
          and same_bits(mem.get(pxh, np.float32, rows * N), h.reshape(-1)))


def bias_act(ptx, mem, N, flags, px, ld, pb, padd, rows, pout):
    name = "bias_act_n%d_f%d" % (N, flags)
    per_cta = 256 * (1 if N % 4 else 4)
    run(ptx(name), name, grid=((rows * N + per_cta - 1) // per_cta, 1, 1), block=(256, 1, 1),
        params=[px, ld, pb, padd, rows, pout], mem=mem)


def test_bias_act_vec(ptx, N, rng, flag_list):
    """bias_act's 16-byte form (4 elements a thread) == its element-by-element form, which
    rows only 4-byte aligned take (ld % 4 != 0: row 0 vector, the others not), and == numpy
    for bias and residual; f|8 == f rounded to halves"""
    rows = 3
    for flags in flag_list:
        x = (3 * rng.standard_normal((rows, N))).astype(np.float32)
        b = rng.standard_normal(N).astype(np.float32)
        add = rng.standard_normal((rows, N)).astype(np.float32)
        mem = Memory(1 << 24)
        pb, padd = mem.put(b), mem.put(add)
        outs = []
        for ld in (N, N + 1):
            wide = np.zeros((rows, ld), np.float32)
            wide[:, :N] = x
            px, pout = mem.put(wide), mem.alloc(rows * N * 2)
            bias_act(ptx, mem, N, flags & 7, px, ld, pb, padd if flags & 4 else 0, rows, 0)
            outs.append(mem.get(px, np.float32, rows * ld).reshape(rows, ld)[:, :N].copy())
            if flags & 8:
                wide[:, :N] = x
                px = mem.put(wide)
                bias_act(ptx, mem, N, flags, px, ld, pb, padd if flags & 4 else 0, rows, pout)
                outs.append(mem.get(pout, np.uint16, rows * N))
        ok = same_bits(outs[0], outs[1 + (flags >> 3)])
        if flags & 8:
            ok &= (outs[1] == outs[3]).all() and (outs[1] == outs[0].astype(np.float16).view(np.uint16).reshape(-1)).all()
        if not flags & 2:
            want = x + b + (add if flags & 4 else 0)
            ok &= same_bits(outs[0], want.astype(np.float32))
        check("bias_act_n%d_f%d: 16-byte and element-by-element forms the same bits" % (N, flags),
              ok)


def test_transpose(ptx, rng, rows, cols):
    mem = Memory(1 << 22)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    pin = mem.put(x)
    pout = mem.put(np.full(rows * cols + 64, np.nan, np.float32))
    run(ptx("transpose_f32"), "transpose_f32", grid=((cols + 31) // 32, (rows + 31) // 32, 1),
        block=(256, 1, 1), params=[pout, pin, rows, cols], mem=mem)
    got = mem.get(pout, np.float32, rows * cols + 64)
    check("transpose_f32, %d x %d" % (rows, cols),
          same_bits(got[:rows * cols], x.T.reshape(-1).copy()) and np.isnan(got[rows * cols:]).all())


def test_scores_kvh(ptx, H, rng, t_len, s_len, head):
    D = 64
    C = H * D
    q = rng.standard_normal((t_len, C)).astype(np.float32)
    kh = rng.standard_normal((s_len, C)).astype(np.float16)
    outs = []
    for suffix, k in (("", kh.astype(np.float32)), ("_kvh", kh)):
        mem = Memory(1 << 24)
        pout = mem.put(np.full(t_len * s_len, np.nan, np.float32))
        name = "attn_scores_h%d_d%d%s" % (H, D, suffix)
        run(ptx(name), name, grid=(t_len, (s_len + 127) // 128, 1), block=(128, 1, 1),
            params=[pout, mem.put(q), mem.put(k), C, t_len, s_len, head], mem=mem)
        outs.append(mem.get(pout, np.float32, t_len * s_len))
    check("attn_scores_h%d_d%d_kvh, %d queries, %d keys: the f32 kernel's bits on widened keys"
          % (H, D, t_len, s_len), same_bits(outs[0], outs[1]) and not np.isnan(outs[1]).any())


LG_CHUNK, LG_WORDS = 2048, 20  # kernels.h: KERNEL_LOGITS_CHUNK, KERNEL_LOGITS_RULE_WORDS


def logits_rows(V, rng):
    """rows of logits and their rules (ranges, tb; kernels.h's layout) for every case the
    host's logit filters produce, and a suppress list"""
    tb = V - 1501  # the first timestamp of a multilingual vocabulary
    n = 7
    x = rng.standard_normal((n, V)).astype(np.float32)
    rules = np.zeros((n, LG_WORDS), np.uint32)
    rules[:, 16] = V  # no timestamp test
    rules[1, 0], rules[1, 8] = 100, 5000  # a range forbidden, and the test: timestamps win
    rules[1, 1], rules[1, 9] = V - 20, 20
    rules[1, 16] = tb
    x[1, tb:] += 6
    rules[2, 16] = tb  # the test, text wins (12 > logsumexp of the timestamps, ~7.8); the
    x[2, 7], x[2, 8] = 15, 12  # row's maximum is suppressed
    x[3, 5000] = x[3, 30000] = x[3, 40000] = 8  # a tie across chunks: the first
    rules[4, 8] = V  # all forbidden
    x[5, 777] = 40  # confident: a log-probability near -1e-17
    rules[6, 0], rules[6, 8] = 0, 3000  # 3000, 9000, 12000 left (a top-k row runs short)
    rules[6, 1], rules[6, 9] = 3001, 5999
    rules[6, 2], rules[6, 10] = 12001, V - 12001
    rules[6, 3], rules[6, 11] = 9001, 2999
    suppress = np.array([7, 220, 50257, V - 1501 + 3], np.int64)
    return x, rules, suppress


def logits_ref(x, rule, suppress, V):
    """the masked row in float64, as logit_filters_apply leaves it, and its log_softmax"""
    y = x.astype(np.float64)
    y[suppress] = -np.inf
    for j in range(8):
        y[rule[j]:rule[j] + rule[8 + j]] = -np.inf
    tb = int(rule[16])
    if tb < V and not np.isinf(y[tb:]).all():
        top = y[tb:].max()
        if top + np.log(np.exp(y[tb:] - top).sum()) > y[:tb].max():
            y[:tb] = -np.inf
    if np.isinf(y).all():
        return y, None
    # log_softmax(y)[t] = (y[t] - m) - log1p(sum of exp(y - m) over all but the first
    # maximum): exact for a confident row too, where m + log(sum) would round to m
    a = int(np.argmax(y))
    e = np.exp(y - y[a])
    return y, lambda t: (y[t] - y[a]) - np.log1p(np.delete(e, a).sum())


def test_logits(ptx, V, k, rng):
    """logits_part + logits_pick (greedy) and the top-k pair (beams) against float64"""
    x, rules, suppress = logits_rows(V, rng)
    n, P = x.shape[0], (V + LG_CHUNK - 1) // LG_CHUNK
    mask = np.zeros((V + 31) // 32, np.uint32)
    for t in suppress:
        mask[t // 32] |= np.uint32(1 << (t % 32))
    for kk, rec in ((0, 32), (k, 24 + 16 * k)):
        mem = Memory(1 << 24)
        pl, pr, pm = mem.put(x), mem.put(rules), mem.put(mask)
        pp, po = mem.alloc(n * P * rec), mem.alloc(n * max(kk, 1) * 8)
        sfx = "_v%d" % V + ("_k%d" % kk if kk else "")
        part, pick = ("logits_topk_part", "logits_topk_pick") if kk else ("logits_part",
                                                                            "logits_pick")
        run(ptx(part + sfx), part + sfx, grid=(n, P, 1), block=(256, 1, 1),
            params=[pp, pl, pr, pm], mem=mem)
        run(ptx(pick + sfx), pick + sfx, grid=(n, 1, 1), block=(32, 1, 1),
            params=[po, pp, pr], mem=mem)
        out = mem.get(po, np.uint32, n * max(kk, 1) * 2).reshape(n, max(kk, 1), 2)
        tok, lp = out[:, :, 0], out[:, :, 1].copy().view(np.float32)
        ok, worst = True, 0.0
        for r in range(n):
            y, logprob = logits_ref(x[r], rules[r], suppress, V)
            order = np.argsort(-y, kind="stable")[:max(kk, 1)]  # equal values: lower token
            want = [(int(t), logprob(t)) if np.isfinite(y[t]) else (0, -np.inf) for t in order]
            for j, (wt, wl) in enumerate(want):
                if tok[r, j] != wt or (np.isinf(wl) and lp[r, j] != wl):
                    ok = False
                elif np.isfinite(wl):
                    # 1e-5 relative, or 1e-14 absolute for a confident row's -3.6e-13: the
                    # top-k pick's log1p(S - 1) has S's rounding (the CPU's m + log(s) an ulp
                    # of m, 7e-15 at m = 40)
                    err = abs(lp[r, j] - wl)
                    ok = ok and err <= 1e-5 * abs(wl) + 1e-14
                    if abs(wl) > 1e-6:
                        worst = max(worst, err / abs(wl))
        what = ("top %d" % kk) if kk else "greedy"
        check("%s + %s%s: %s, %d rows (ranges, suppress, timestamp test both ways, a tie, all "
              "masked, confident, 3 left) vs float64" % (part, pick, sfx, what, n),
              ok, "%.1e" % worst)


def test_sample(ptx, V, rng):
    """logits_part, then logits_sample_part + logits_sample_pick (draws at T > 0, several from
    one row as a window's first step) against the inverse CDF in float64: the token equal but
    where the target falls within 1e-5 of a boundary (relative to the total: the kernels' exp
    is ex2.approx), the log-probability within 1e-5"""
    x, rules, suppress = logits_rows(V, rng)
    n, P = x.shape[0], (V + LG_CHUNK - 1) // LG_CHUNK
    mask = np.zeros((V + 31) // 32, np.uint32)
    for t in suppress:
        mask[t // 32] |= np.uint32(1 << (t % 32))
    rows = [0, 0, 0, 1, 2, 3, 4, 5, 6, 6, 2, 1]
    temps = [0.2, 0.6, 1.0, 1.5, 0.6, 1.3, 0.6, 0.2, 1.0, 0.4, 2.0, 0.7]
    us = list(rng.uniform(size=len(rows)))
    us[1], us[2] = 0.0, 1.0 - 2.0 ** -53  # the row's first allowed column, and its last
    draws = np.zeros(len(rows), dtype=[("row", "<i4"), ("t", "<f4"), ("u", "<f8")])
    draws["row"], draws["t"], draws["u"] = rows, temps, us
    nd = len(rows)
    mem = Memory(1 << 24)
    pl, pr, pm, pd = mem.put(x), mem.put(rules), mem.put(mask), mem.put(draws)
    pp, pw, po = mem.alloc(n * P * 32), mem.alloc(nd * P * 8), mem.alloc(nd * 8)
    sfx = "_v%d" % V
    run(ptx("logits_part" + sfx), "logits_part" + sfx, grid=(n, P, 1), block=(256, 1, 1),
        params=[pp, pl, pr, pm], mem=mem)
    for name, extra in (("logits_sample_part", []), ("logits_sample_pick", [po])):
        run(ptx(name + sfx), name + sfx, grid=(nd, P if extra == [] else 1, 1),
            block=(256, 1, 1), params=extra + [pw, pp, pl, pr, pm, pd], mem=mem)
    out = mem.get(po, np.uint32, nd * 2).reshape(nd, 2)
    tok, lp = out[:, 0], out[:, 1].copy().view(np.float32)
    ok, worst, near = True, 0.0, 0
    for j in range(nd):
        y, logprob = logits_ref(x[rows[j]], rules[rows[j]], suppress, V)
        if logprob is None:
            ok = ok and tok[j] == 0 and lp[j] == -np.inf
            continue
        w = np.where(np.isfinite(y), np.exp((y - y.max()) / np.float64(np.float32(temps[j]))), 0)
        cum = np.cumsum(w)
        target = us[j] * cum[-1]
        want = int(np.searchsorted(cum, target, side="right"))
        want = want if want < V else int(np.flatnonzero(np.isfinite(y))[-1])
        if tok[j] != want:
            lo, hi = sorted((int(tok[j]), want))
            near += 1
            ok = ok and np.isfinite(y[tok[j]]) and \
                abs(cum[lo] - target) <= 1e-5 * cum[-1] and hi - lo <= 1 + np.isinf(y[lo:hi]).sum()
            continue
        err = abs(lp[j] - logprob(want))
        ok = ok and err <= 1e-5 * abs(logprob(want)) + 1e-14
        worst = max(worst, err / max(abs(logprob(want)), 1e-6))
    check("logits_sample_part + logits_sample_pick%s: %d draws from %d rows (T 0.2 ... 2, u 0 "
          "and 1 - 2^-53, all masked, 3 left) vs the float64 inverse CDF" % (sfx, nd, n),
          ok, "%.1e, %d at a boundary" % (worst, near))


# A cooperative grid in the emulator: every CTA writes its slots, a grid barrier (a counter
# raised with red.release, polled with ld.acquire), every CTA sums all slots, a second barrier
# before the slots are written again. The emulator runs the CTAs as coroutines that yield at
# each strong load; without the barriers a CTA reads slots nobody has written yet.
COOP_PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry grid_sum(.param .u64 p_ctr, .param .u64 p_slots, .param .u64 p_out,
                         .param .u32 p_n_barriers)
{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<4>;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %nctaid.x;
    ld.param.u64 %rd1, [p_ctr];
    ld.param.u64 %rd2, [p_slots];
    ld.param.u64 %rd3, [p_out];
    ld.param.u32 %r10, [p_n_barriers];
    setp.ne.u32 %p2, %r2, 0;
    mad.lo.u32 %r4, %r1, 32, %r2;
    mul.wide.u32 %rd4, %r4, 4;
    add.u64 %rd5, %rd2, %rd4;
    cvt.rn.f32.u32 %f1, %r4;
    st.global.f32 [%rd5], %f1;
    mov.u32 %r9, 0;
BARRIER:
    setp.ge.u32 %p1, %r9, %r10;
    @%p1 bra AFTER;
    bar.sync 0;
    @%p2 bra ARRIVED;
    red.release.gpu.global.add.u32 [%rd1], 1;
SPIN:
    ld.acquire.gpu.global.u32 %r5, [%rd1];
    setp.lt.u32 %p1, %r5, %r3;
    @%p1 bra SPIN;
ARRIVED:
    bar.sync 0;
AFTER:
    add.u32 %r9, %r9, 1;
    setp.eq.u32 %p1, %r9, 2;
    @%p1 bra WRITE_AGAIN;
    mov.f32 %f2, 0f00000000;
    mov.u32 %r6, 0;
SUM:
    mad.lo.u32 %r7, %r6, 32, %r2;
    mul.wide.u32 %rd6, %r7, 4;
    add.u64 %rd6, %rd2, %rd6;
    ld.global.f32 %f3, [%rd6];
    add.f32 %f2, %f2, %f3;
    add.u32 %r6, %r6, 1;
    setp.lt.u32 %p1, %r6, %r3;
    @%p1 bra SUM;
    add.u64 %rd7, %rd3, %rd4;
    st.global.f32 [%rd7], %f2;
    mul.lo.u32 %r3, %r3, 2;
    bra BARRIER;
WRITE_AGAIN:
    mov.f32 %f1, 0fBF800000;
    st.global.f32 [%rd5], %f1;
    ret;
}
"""


def test_emulator_rules():
    """The emulator's own rules that phases lean on: a named barrier of a thread count (all
    threads there, or half of them while the rest wait at barrier 0) passes, one that cannot
    fill is a deadlock, and an ld.global.nc of a word the launch wrote (either half of an
    8-byte store) is an error"""
    def kernel(body):
        return (".version 8.0\n.target sm_90\n.address_size 64\n"
                ".visible .entry t(.param .u64 p) {\n"
                "  .reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .pred %p<2>;\n"
                "  ld.param.u64 %rd0, [p];\n  mov.u32 %r0, %tid.x;\n" + body + "\n  ret;\n}\n")

    def outcome(body):
        mem = Memory()
        try:
            run(kernel(body), "t", block=(64, 1, 1), params=[mem.alloc(1024)], mem=mem)
            return "ran"
        except Exception as e:  # noqa: BLE001 (EmuError)
            return str(e)
    half = "  setp.ge.u32 %p0, %r0, 32;\n  @%p0 bra L1;\n  bar.sync 1, 32;\nL1:\n  bar.sync 0;"
    short = "  setp.ge.u32 %p0, %r0, 32;\n  @%p0 bra L1;\n  bar.sync 1, 64;\nL1:\n  bar.sync 0;"
    store = "  mov.b64 %rd1, 5;\n  st.global.u64 [%rd0], %rd1;\n"
    check("emulator: bar.sync 1, 64 with every thread there; 32 threads at bar.sync 1, 32 while "
          "32 wait at bar.sync 0",
          outcome("  bar.sync 1, 64;") == "ran" and outcome(half) == "ran")
    check("emulator: 32 threads at bar.sync 1, 64 is a deadlock", "deadlock" in outcome(short))
    check("emulator: ld.global.nc of either half of a word pair the launch stored is an error",
          all("this launch wrote" in outcome(store + "  ld.global.nc.u32 %%r1, [%%rd0+%d];" % o)
              for o in (0, 4)) and outcome("  ld.global.nc.u32 %r1, [%rd0+8];") == "ran")


def test_cooperative(n_ctas):
    def launch(n_barriers, cooperative=True, ctas=None, seed=None):
        mem = Memory()
        ctr, slots, out = mem.put(np.zeros(1, np.uint32)), mem.alloc(n_ctas * 128), \
            mem.alloc(n_ctas * 128)
        run(COOP_PTX, "grid_sum", grid=(n_ctas, 1, 1), block=(32, 1, 1),
            params=[ctr, slots, out, n_barriers], mem=mem, cooperative=cooperative, ctas=ctas,
            seed=seed)
        return mem.get(out, np.float32, n_ctas * 32)

    want = np.tile(np.arange(32) * n_ctas + 32 * n_ctas * (n_ctas - 1) / 2, n_ctas)
    got = launch(2)
    check("cooperative grid of %d CTAs: every CTA sees every CTA's slots" % n_ctas,
          (got == want).all())
    got = launch(2, ctas=[(i, 0, 0) for i in reversed(range(n_ctas))])
    check("the same, CTAs started in reverse order", (got == want).all())
    got = launch(2, seed=5)
    check("the same, turns drawn at random", (got == want).all())
    bad = launch(0)  # CTA 0 sums before the others have written: 0xFF bytes, NaN
    check("without the barriers a CTA reads unwritten slots", np.isnan(bad[:32]).all())
    one_short = [(i, 0, 0) for i in range(n_ctas - 1)]
    for coop, ctas, what in ((False, None, "still polling"), (True, one_short, "deadlock")):
        try:
            launch(2, cooperative=coop, ctas=ctas)
            msg = ""
        except Exception as e:  # noqa: BLE001 (EmuError)
            msg = str(e)
        check("a barrier no CTA can pass is reported (%s)" % ("CTAs one at a time" if not coop
              else "a CTA of the grid never runs"), what in msg, msg[:90])


def test_chain(ptx, K, rng, rows, n_ctas, flags):
    """gemv_chain (kernels.h: gemv_tc's links in one cooperative launch) against the links
    launched one by one, bit for bit. flags (5, 9): the self-attention's output projection into
    x, then the norm and the cross query; (5, 11, 5[, 24]): the cross-attention's output
    projection into x, the norm and fc1, fc2 into x[, the next layer's norm and q/k/v]"""
    n_dst, f32 = rows + 5, np.float32

    def normal(*shape, scale=1.0):
        return (scale * rng.standard_normal(shape)).astype(f32)
    x, a = normal(rows, K, scale=3), normal(rows, K)
    W = [(rng.standard_normal(s) / np.sqrt(s[1])).astype(np.float16)
         for s in ((K, K), (4 * K, K), (K, 4 * K), (K, K), (K, K), (K, K))]
    bias = [normal(n) for n in (K, 4 * K, K, K, K)]
    gains = [normal(K) for _ in range(4)]
    cache = [normal(n_dst, K) for _ in range(2)]
    dst = rng.permutation(n_dst)[:rows].astype(np.int32)
    fc1 = 11 in flags
    links = [(4 * K if fc1 and i == 2 else K, f, tc_cols(f)) for i, f in enumerate(flags)]
    name = "gemv_chain_n1" + "".join("_k%df%d" % (k, f) for k, f, _ in links)
    outs = None
    for chained, seed in ((False, None), (True, None), (True, 11), (True, 12)):
        mem = Memory(1 << 26)
        px, pa, ph = mem.put(x), mem.put(a), mem.alloc(rows * 4 * K * 4)
        pw, pb, pg = [mem.put(w) for w in W], [mem.put(b) for b in bias], \
            [mem.put(g) for g in gains]
        pq, pkc, pvc, pdst = mem.alloc(rows * K * 4), mem.put(cache[0]), mem.put(cache[1]), \
            mem.put(dst)
        by_flags = {5: [px, K, pa, pw[0], pb[0], K, rows],
                    9: [pq, K, px, pw[3], pb[3], K, rows, pg[2], pg[3]],
                    11: [ph, 4 * K, px, pw[1], pb[1], 4 * K, rows, pg[0], pg[1]],
                    24: [pq, K, px, pw[3], pb[3], K, rows, pg[2], pg[3], pw[4], pw[5], 0, pb[4],
                         pkc, pvc, pdst]}
        params = [by_flags[f] for f in flags]
        if fc1:
            params[2] = [px, K, ph, pw[2], pb[2], K, rows]
        grids = [((3 if f & 16 else 1) * p[5] // c, 1) for (_, f, c), p in zip(links, params)]
        if not chained:
            for (k_in, f, c), p, g in zip(links, params, grids):
                kn = "gemv_tc_k%d_c%d_n1_f%d" % (k_in, c, f)
                run(ptx(kn), kn, grid=(g[0], g[1], 1), block=(256, 1, 1), params=p, mem=mem)
        else:
            counter = mem.put(np.zeros(1, np.uint32))
            mem.prefetched = set()
            run(ptx(name), name, grid=(n_ctas, 1, 1), block=(256, 1, 1),
                params=[counter] + [v for g, p in zip(grids, params) for v in list(g) + p],
                mem=mem, cooperative=True, seed=seed)
            # every line of the later links' weights went to L2 before the barrier ahead
            later = [(pw[j], W[j].nbytes) for f in flags[1:]
                     for j in ([3, 4, 5] if f == 24 else [{9: 3, 11: 1, 5: 2}[f]])]
            missed = sum(1 for a, n in later for line in range(a >> 7, (a + n - 1 >> 7) + 1)
                         if line not in mem.prefetched)
        got = [mem.get(p, f32, n) for p, n in ((px, rows * K), (ph, rows * 4 * K),
                                               (pq, rows * K), (pkc, n_dst * K),
                                               (pvc, n_dst * K))]
        if chained:
            check("%s on %d CTAs (turns %s) == its %d gemv_tc launches, %d rows; its counter "
                  "back to 0" % (name, n_ctas, "in order" if seed is None else "drawn, seed %d"
                                 % seed, len(flags), rows),
                  all(same_bits(u, v) for u, v in zip(outs, got)) and
                  mem.get(counter, np.uint32, 1)[0] == 0 and not missed,
                  "%d lines of the later links' weights not prefetched" % missed if missed else "")
        else:
            outs = got


def test_block_chain(ptx, K, H, rng, rows, n_ctas):
    """gemv_chain with attention links (kernels.h): a decoder block of a step (its norm and
    q/k/v with k and v into the cache, attn_gather over the cache, the output projection, the
    norm and cross query, attn_rows_kvh, the output projection, fc1, fc2) against its kernels
    launched one by one, bit for bit, in order and with turns drawn at random; the split
    records and counters both attentions share (as the backend's) and the chain's counter back
    to 0"""
    D, f32, n_ctx, n_kv, s_len = K // H, np.float32, 448, 130, 150

    def normal(*shape, scale=1.0):
        return (scale * rng.standard_normal(shape)).astype(f32)
    x = normal(rows, K, scale=3)
    W = [(rng.standard_normal(s) / np.sqrt(s[1])).astype(np.float16)
         for s in ((K, K), (K, K), (K, K), (K, K), (K, K), (K, K), (4 * K, K), (K, 4 * K))]
    bias = [normal(n) for n in (K, K, K, K, K, 4 * K, K)]
    gains = [normal(K) for _ in range(6)]
    n_slots = rows * n_ctx
    kc, vc = normal(n_slots, K), normal(n_slots, K)
    slots = np.stack([rng.permutation(n_slots)[:n_ctx] for _ in range(rows)]).astype(np.int32)
    counts = np.array([max(1, n_kv - 37 * g) for g in range(rows)], np.int32)
    dst = np.array([slots[g, counts[g] - 1] for g in range(rows)], np.int32)  # the new rows
    stride = s_len * K + 32
    xk, xv = rng.standard_normal((2, 2 * stride)).astype(np.float16)
    lane = np.array([(g + 1) % 2 for g in range(rows)], np.int32)
    zg, zr = (n_kv + 63) // 64, (s_len + 63) // 64
    flags = [24, None, 5, 9, None, 5, 11, 5]
    kern = ["gemv_tc_k%d_c32_n1_f24" % K, "attn_gather_h%d_d%d" % (H, D),
            "gemv_tc_k%d_c16_n1_f5" % K, "gemv_tc_k%d_c32_n1_f9" % K,
            "attn_rows_h%d_d%d_kvh" % (H, D), "gemv_tc_k%d_c16_n1_f5" % K,
            "gemv_tc_k%d_c32_n1_f11" % K, "gemv_tc_k%d_c16_n1_f5" % (4 * K)]
    name = "gemv_chain_n1_" + "_".join(
        ["k%df24" % K, "k%da1h%d" % (K, H), "k%df5" % K, "k%df9" % K, "k%da3h%d" % (K, H),
         "k%df5" % K, "k%df11" % K, "k%df5" % (4 * K)])
    outs = None
    for chained, seed in ((False, None), (True, None), (True, 5)):
        mem = Memory(1 << 27)
        px, pq, ph, patt = mem.put(x), mem.alloc(rows * K * 4), mem.alloc(rows * 4 * K * 4), \
            mem.alloc(rows * K * 4)
        pw, pb, pg = [mem.put(w) for w in W], [mem.put(b) for b in bias], \
            [mem.put(g) for g in gains]
        pc = [mem.put(np.zeros(rows * H, np.uint32))] * 2
        parts = [mem.alloc(rows * H * max(zg, zr) * (D + 2) * 4)] * 2
        pkc, pvc = mem.put(kc), mem.put(vc)
        params = [[pq, K, px, pw[0], pb[0], K, rows, pg[0], pg[1], pw[1], pw[2], 0, pb[1],
                   pkc, pvc, mem.put(dst)],
                  [patt, pq, pkc, pvc, mem.put(slots), n_ctx, mem.put(counts), rows, n_kv,
                   parts[0], pc[0]],
                  [px, K, patt, pw[3], pb[2], K, rows],
                  [pq, K, px, pw[4], pb[3], K, rows, pg[2], pg[3]],
                  [patt, pq, mem.put(xk), mem.put(xv), K, stride, mem.put(lane), rows, s_len,
                   parts[1], pc[1]],
                  [px, K, patt, pw[5], pb[4], K, rows],
                  [ph, 4 * K, px, pw[6], pb[5], 4 * K, rows, pg[4], pg[5]],
                  [px, K, ph, pw[7], pb[6], K, rows]]
        grids = []
        for i, f in enumerate(flags):
            if f is None:
                grids.append((rows, H, zg if i == 1 else zr))
            else:
                grids.append(((3 if f & 16 else 1) * (4 * K if f == 11 else K) // tc_cols(f), 1))
        if not chained:
            for kn, p, g in zip(kern, params, grids):
                block = 128 if kn.startswith("attn_") else 256
                run(ptx(kn), kn, grid=(g + (1,))[:3], block=(block, 1, 1), params=p, mem=mem)
        else:
            counter = mem.put(np.zeros(1, np.uint32))
            run(ptx(name), name, grid=(n_ctas, 1, 1), block=(256, 1, 1),
                params=[counter] + [v for g, p in zip(grids, params) for v in list(g) + p],
                mem=mem, cooperative=True, seed=seed)
        got = [mem.get(p, f32, n) for p, n in ((px, rows * K), (ph, rows * 4 * K),
                                               (pq, rows * K), (patt, rows * K),
                                               (pkc, n_slots * K), (pvc, n_slots * K))]
        zeroed = all((mem.get(c, np.uint32, rows * H) == 0).all() for c in pc)
        if chained:
            zeroed = zeroed and mem.get(counter, np.uint32, 1)[0] == 0
            check("%s on %d CTAs (turns %s) == its %d launches, %d rows; every counter back "
                  "to 0" % (name, n_ctas, "in order" if seed is None else "drawn, seed %d" % seed,
                            len(flags), rows),
                  all(same_bits(u, v) for u, v in zip(outs, got)) and zeroed)
        else:
            outs = got
            if not zeroed or any(np.isnan(u).any() for u in got):
                check("%s's launches one by one" % name, False, "NaN or counters left")


GROUP = sys.argv[4]
rng = np.random.default_rng(2026 + GROUPS.index(GROUP))
if GROUP == "tiny":
    test_emulator_rules()
    test_cooperative(4)
for size, K in {"tiny": (("tiny", 384),), "base": (("base", 512),)}.get(GROUP, ()):
    ptx = kernels(size)
    for rows, n_ctas, flags in (((3, 3, (5, 9)), (8, 4, (5, 11, 5, 24))) if size == "tiny"
                                else ((1, 5, (5, 11, 5)),)):
        test_chain(ptx, K, rng, rows, n_ctas, flags)
    if size == "tiny":
        test_block_chain(ptx, K, 6, rng, 2, 4)
for size, K, H in {"tiny": (("tiny", 384, 6),), "base": (("base", 512, 8),)}.get(GROUP, ()):
    ptx = kernels(size)
    test_before_wait(ptx, ptx.names, rng)
    test_layernorm_gemv(ptx, K, rng)
    test_fc2(ptx, K, rng)
    test_norm_fused(ptx, K, rng)
    test_qkv(ptx, K, rng)
    test_gemv_tc(ptx, K, rng, 40, ((0, 1), (1, 5), (3, 3), (5, 21), (5, 64)))
    test_gemv_tc(ptx, 4 * K, rng, 24, ((5, 10),))
    test_norm_fused(ptx, K, rng, tc=True)
    test_qkv(ptx, K, rng, tc=True)
    test_half_forms(ptx, K, rng)
    test_bias_act_vec(ptx, K, rng, (1, 5, 7))
    test_bias_act_vec(ptx, 4 * K, rng, (11,))
    for mode, n_rows, n_keys in (("gather", 3, 448), ("gather", 2, 40), ("rows", 2, 1500)):
        test_split(ptx, H, rng, mode, n_rows, n_keys)
    test_rows_kvh(ptx, H, rng, 2, 300)
    for n_rows, n_keys in ((3, 37), (1, 1)) + (((2, 1500),) if size == "tiny" else ()):
        test_rows_tc(ptx, H, rng, n_rows, n_keys)
    if size == "tiny":  # the tensor-core attention: partial query and key tiles
        test_attn_tc(ptx, H, rng, 70, 130)
        test_attn_tc(ptx, H, rng, 9, 1)  # one key: the fp16 form's copies all but zeros
        test_attn_tc(ptx, H, rng, 9, 1500)  # the encoder's keys: 24 tiles, both buffers
        test_attn_tc_windows(ptx, H, rng, 70, 2)
    test_scores_kvh(ptx, H, rng, 2, 200, H - 1)
    if size == "tiny":  # these kernels depend on the vocabulary alone, or on nothing
        test_transpose(ptx, rng, 80, 70)
        test_transpose(ptx, rng, 5, 37)
        test_logits(ptx, 51865, 6, rng)
        test_sample(ptx, 51865, rng)
# large-v3's widths, a few outputs each: fc2 over 5 weight tiles; K = 1280 with the norm fused
# (its first tile loaded after the wait, into L2 before it) against layernorm then the plain
if GROUP == "large-v3":
    ptx = kernels("large-v3")
    test_before_wait(ptx, [n for n in ptx.names if "k1280" in n or "k5120" in n], rng)
    test_fc2(ptx, 1280, rng, n=64)
    test_gemv_tc(ptx, 5120, rng, 16, ((5, 3),))
    for (fused, plain), tc in (((9, 1), False), ((8, 0), False), ((9, 1), True), ((11, 3), True)):
        K, rows, n = 1280, 10, 64
        mem = Memory(1 << 24)
        x = (3 * rng.standard_normal((rows, K))).astype(np.float32)
        W = (rng.standard_normal((n, K)) / np.sqrt(K)).astype(np.float16)
        px, pw = mem.put(x), mem.put(W)
        pg, plb = (mem.put(rng.standard_normal(K).astype(np.float32)) for _ in range(2))
        pb = mem.put(rng.standard_normal(n).astype(np.float32))
        pf, ph, ps = mem.alloc(rows * n * 4), mem.alloc(rows * K * 4), mem.alloc(rows * n * 4)
        gemv(ptx, mem, K, fused, pf, n, px, pw, pb, rows, more=[pg, plb], n=n, tc=tc)
        layernorm(ptx, mem, K, ph, px, pg, plb, rows)
        gemv(ptx, mem, K, plain, ps, n, ph, pw, pb, rows, n=n, tc=tc)
        check("gemv_%s_k%d_f%d == layernorm + f%d, %d rows, %d outputs"
              % ("tc" if tc else "f16", K, fused, plain, rows, n),
              same_bits(mem.get(pf, np.float32, rows * n), mem.get(ps, np.float32, rows * n)))
print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
