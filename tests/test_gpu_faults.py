#!/usr/bin/env python3
"""test_gpu_faults.py — the CUDA backend's host side and its failures, without a GPU.

usage: test_gpu_faults.py WHISPER_C SHARED_DIR FAKECUDA_DIR

whisper-c runs with LD_LIBRARY_PATH=FAKECUDA_DIR, where tests/fakecuda/ builds a stand-in
libcuda.so.1 and libcublas.so.13 over host memory (kernels compute nothing, so transcripts on
the "GPU" are meaningless; what runs is every allocation, copy, launch and graph of the backend,
each checked against the live allocations). Faults come from the fake's environment:

  - clean runs (greedy, with and without dependent launches, and the default beam search, all
    through step graphs, also after the staging's first pinned allocation failed; beam search
    batched over 2 inputs, over 14 (70-row steps) and over 64 of 10 beams (640-row steps,
    graphs kept); bench --synthetic --throughput, with short prompts fed as step rows and long
    ones prefilled; bench --synthetic with dependent launches, where capturing them fails
    (graphs kept) and where the driver refuses them): exit 0, no rule broken, nothing left
    allocated at exit
  - device memory too small for the weights / for a decoding state beside them: --device auto
    says so in one line and transcribes on the CPU (the right text); --device cuda fails with
    the reason
  - no device: --device auto runs on the CPU, --device cuda fails saying CUDA is unavailable
  - a launch refused (sync) and a fault inside a kernel (async, sticky): exit 1 with the CUDA
    error name and the kernel (the last one queued, or with WHISPERC_CUDA_SYNC=1 the one that
    failed)
  - several files: a refused launch fails its file (named) and the next is transcribed on a
    state made again; a kernel fault stops the files after it; the same for batch items
  - `whisper-c batch` when a kernel faults, item by item and in groups: the run stops (exit 1,
    one line: run the same command again); the items not started have no line; the rerun
    (--retry-failed) completes every item
  - `whisper-c batch --batch-size 4` with its encoder passes on a stream of their own beside
    the steps, with that stream refused or out of memory (a warning each, every item done),
    turned off, and with a fault inside an encoder kernel there (exit 1)
  - `whisper-c batch --batch-size 4` in too little device memory: fewer lanes and fewer encoder
    windows, each with a warning, every item done
  - `whisper-c batch` whose GPU hangs (a kernel that never ends: the abort is never seen),
    stopped by ONE SIGTERM: the --stop-timeout 1 watchdog ends it within 1 + 2 s, exit 143, one
    line saying so; no output or results line; the same command then completes the item
Exits 77 (skip) when the shared model or audio is missing.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import wave

import testlib
from testlib import check

exe, shared = os.path.abspath(sys.argv[1]), testlib.shared_dir(sys.argv[2])
fake_dir = os.path.abspath(sys.argv[3])
model = os.path.join(shared, "models", "ggml-tiny.en.bin")
jfk = os.path.join(shared, "audio", "jfk", "jfk.wav")
testlib.skip_unless_exist([model, jfk])

REPORT = re.compile(r"fakecuda: (\d+) launches, (\d+) copies, (\d+) graph launches, peak (\d+) MiB, "
                    r"(\d+) violations, (\d+) allocations live, (\d+) streams made "
                    r"\((\d+) at the lowest priority\)")


def fake_env(**fake):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = fake_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH")
                                         else "")
    env["FAKECUDA_REPORT"] = "1"
    env.pop("WHISPERC_CUDA_SYNC", None)
    env.pop("WHISPERC_CUDA_GEMV", None)  # the default is checked
    env.pop("WHISPERC_CUDA_GEMM", None)
    env.pop("WHISPERC_CUDA_ATTN", None)
    env.pop("WHISPERC_CUDA_ROWS", None)
    env.pop("WHISPERC_CUDA_CHAIN", None)
    env.pop("WHISPERC_CUDA_CHAIN_CTAS", None)
    env.pop("WHISPERC_CROSS_KV", None)
    env.update({k: str(v) for k, v in fake.items()})
    return env


def run(args, timeout=300, **fake):
    r = subprocess.run([exe] + args, capture_output=True, text=True, timeout=timeout,
                       env=fake_env(**fake))
    check("Sanitizer" not in r.stderr and "runtime error" not in r.stderr,
          f"{' '.join(args[:1] + [a for a in args if a.startswith('--')])}: no sanitizer report")
    return r


def report(r):
    """The fake's counts at exit: dict, or None when it printed none."""
    m = REPORT.search(r.stderr)
    if not m:
        return None
    keys = ("launches", "copies", "graphs", "peak", "violations", "live", "streams", "low")
    return dict(zip(keys, map(int, m.groups())))


def clean_exit(r):
    rep = report(r)
    return rep is not None and rep["violations"] == 0 and rep["live"] == 0


def transcribe(*extra, **fake):
    return run(["transcribe", "-m", model, "-t", "2", *extra, jfk], **fake)


def right_text(r):
    return "ask not what your country can do for you" in r.stdout


def clean_runs():
    r = transcribe("--device", "cuda", "-bs", "1")
    rep = report(r)
    check(r.returncode == 0 and clean_exit(r) and rep["launches"] > 0 and rep["graphs"] > 0,
          f"greedy on the fake GPU: exit 0, step graphs, no rule broken, nothing left ({rep})")
    r = transcribe("--device", "cuda", "-bs", "1", WHISPERC_CUDA_PDL="0")
    rep = report(r)
    check(r.returncode == 0 and clean_exit(r) and rep["launches"] > 0 and rep["graphs"] > 0,
          f"the same with plain launches (WHISPERC_CUDA_PDL=0), no rule broken ({rep})")
    # no pinned memory for the stream's staging at first: copies go pageable, and once a sync
    # gets it, steps run as graphs again
    r = transcribe("--device", "cuda", "-bs", "1", FAKECUDA_FAIL_HOSTALLOC=1)
    rep = report(r)
    check(r.returncode == 0 and clean_exit(r) and rep["graphs"] > 0,
          f"the stream's first pinned allocation refused: step graphs later, no rule broken ({rep})")
    # a step's projections on tensor cores (gemv_tc, the default): one tile a CTA for a lane,
    # four for a step of 20 rows; launched (graphed) with no rule broken; WHISPERC_CUDA_GEMV=f16
    # launches gemv_f16 instead
    for args, tiles in ((("transcribe", "-m", model, "-t", "2", "--device", "cuda", "-bs", "1",
                          jfk), "1"),
                        (("bench", "--synthetic", "--device", "cuda", "-m", model, "-t", "2",
                          "-bs", "1", "--tokens", "3", "--runs", "1", "--batch-size", "20",
                          "--throughput", "20"), "4")):
        r = run(list(args), FAKECUDA_REPORT="2")
        rep = report(r)
        tc = set(re.findall(r"fakecuda: +\d+ (gemv_tc_k\d+_c\d+_n(\d)_f\d+)", r.stderr))
        # bench's device line names the (fake) GPU: it printed an unwritten buffer once
        check(args[0] != "bench" or re.search(r"^  device +fakecuda \(no GPU", r.stdout, re.M),
              f"bench on the fake GPU: the device line names it ({r.stdout[:600]!r})")
        check(r.returncode == 0 and clean_exit(r) and rep["graphs"] > 0
              and tiles in {t for _, t in tc} and "gemv_f16" not in r.stderr,
              f"{args[0]} on the fake GPU: gemv_tc with {tiles} tile(s) a CTA among "
              f"{sorted(n for n, _ in tc)}, no gemv_f16, graphs, no rule broken ({rep})")
    r = run(["transcribe", "-m", model, "-t", "2", "--device", "cuda", "-bs", "1", jfk],
            WHISPERC_CUDA_GEMV="f16", FAKECUDA_REPORT="2")
    rep = report(r)
    check(r.returncode == 0 and clean_exit(r) and "gemv_f16_k" in r.stderr
          and "gemv_tc" not in r.stderr,
          f"WHISPERC_CUDA_GEMV=f16 on the fake GPU: gemv_f16, no gemv_tc, no rule broken ({rep})")
    # the encoder's GEMMs through cuBLASLt (bias in its epilogue, fp16 K out): the fake checks
    # every operand, the bias and the workspace; with no algorithm for a shape, cuBLAS instead
    for fake, want in (({}, "GEMMs cuBLASLt"), ({"FAKECUDA_LT_NOALGO": "1"}, "GEMMs cuBLASLt")):
        r = run(["bench", "--synthetic", "--device", "cuda", "-m", model, "-t", "2", "-bs", "2",
                 "--tokens", "3", "--runs", "1"], WHISPERC_CUDA_GEMM="lt", FAKECUDA_REPORT="2",
                **fake)
        rep = report(r)
        graphs = [l for l in r.stdout.splitlines() if l.startswith("  graphs")]
        epi = set(re.findall(r"fakecuda: +\d+ (bias_act_n\d+_f\d+)", r.stderr))
        check(r.returncode == 0 and clean_exit(r) and len(graphs) == 1 and want in graphs[0]
              and ("bias_act_n384_f1" in epi) == bool(fake),
              f"WHISPERC_CUDA_GEMM=lt {fake}: {want!r}, bias epilogues {sorted(epi)}, no rule "
              f"broken ({rep}, {graphs})")
    # a batch step's cross-attention on tensor cores (the default): attn_rows_tc in the step
    # graphs, every argument inside its allocation; with WHISPERC_CUDA_ROWS=kvh attn_rows_kvh
    for env, want, other in (({}, "attn_rows_tc_h6_d64", "attn_rows_h6_d64_kvh"),
                             ({"WHISPERC_CUDA_ROWS": "kvh"}, "attn_rows_h6_d64_kvh",
                              "attn_rows_tc_h6_d64")):
        r = run(["bench", "--synthetic", "--device", "cuda", "-m", model, "-t", "2", "-bs", "1",
                 "--tokens", "3", "--runs", "1", "--batch-size", "4", "--throughput", "6"],
                FAKECUDA_REPORT="2", **env)
        rep = report(r)
        rows = set(re.findall(r"fakecuda: +\d+ (attn_rows\S*)", r.stderr))
        check(r.returncode == 0 and clean_exit(r) and rep["graphs"] > 0
              and want in rows and other not in rows,
              f"{env} on the fake GPU: {sorted(rows)}, graphs, no rule broken ({rep})")
    # a step's chains of projections as cooperative kernels (WHISPERC_CUDA_CHAIN=1): gemv_chain
    # in the step graphs (the output projection and the cross query; the MLP and the next
    # block's q/k/v; the last block's MLP), no more CTAs than the device holds, launched early
    # (dependent launch) as well; a driver that refuses that pair gets them cooperative alone;
    # one that refuses cooperative launches gets the links one by one, and the graphs line says
    # why; one that refuses them only in a step graph gets the steps recorded again without
    # them; and (WHISPERC_CUDA_CHAIN=block with WHISPERC_CUDA_ROWS=kvh) a step's blocks as
    # cooperative kernels: one gemv_chain a block, its attentions among its links, and nothing
    # else; with the default attn_rows_tc (no phase form) the projections' chains
    chains = {"gemv_chain_n1_k384f5_k384f9", "gemv_chain_n1_k384f5_k384f11_k1536f5_k384f24",
              "gemv_chain_n1_k384f5_k384f11_k1536f5"}
    block = {"gemv_chain_n1_k384f24_k384a1h6_k384f5_k384f9_k384a3h6_k384f5_k384f11_k1536f5"}
    for env, want, said in (
            ({}, chains, "; chains on, launched early"),
            ({"FAKECUDA_NO_COOP": "early"}, chains,
             "chains on, not launched early (the driver refused cooperative with dependent"),
            ({"FAKECUDA_NO_COOP": "1"}, set(),
             "chains off: the driver refused a cooperative launch"),
            ({"FAKECUDA_NO_COOP": "capture"}, None,
             "chains off: a cooperative launch failed in a step graph"),
            ({"WHISPERC_CUDA_CHAIN": "block", "WHISPERC_CUDA_ROWS": "kvh"}, block,
             "; block chains on, launched early"),
            ({"WHISPERC_CUDA_CHAIN": "block", "WHISPERC_CUDA_ROWS": "kvh",
              "WHISPERC_CUDA_CHAIN_CTAS": "3"}, block, "; block chains on, launched early"),
            # (the fake's largest cooperative grid is checked below: at most 3 CTAs then)
            # f32 cross K/V: no attn_rows_tc, so block chains (their rows link in f32)
            ({"WHISPERC_CUDA_CHAIN": "block", "WHISPERC_CROSS_KV": "f32"},
             {"gemv_chain_n1_k384f24_k384a1h6_k384f5_k384f9_k384a2h6_k384f5_k384f11_k1536f5"},
             "; block chains on, launched early"),
            ({"WHISPERC_CUDA_CHAIN": "block"}, chains,
             "; chains on, launched early (block chains off: the cross-attention runs on tensor cores")):
        env = {"WHISPERC_CUDA_CHAIN": "1", **env}
        r = run(["bench", "--synthetic", "--device", "cuda", "-m", model, "-t", "2", "-bs", "1",
                 "--tokens", "3", "--runs", "1", "--batch-size", "4", "--throughput", "6"],
                FAKECUDA_REPORT="2", **env)
        rep = report(r)
        got = set(re.findall(r"fakecuda: +\d+ (gemv_chain\S*)", r.stderr))
        graphs = [l for l in r.stdout.splitlines() if l.startswith("  graphs")]
        most = re.findall(r"fakecuda: cooperative grids of at most (\d+) CTAs", r.stderr)
        cap = int(env.get("WHISPERC_CUDA_CHAIN_CTAS", 0))
        check(r.returncode == 0 and clean_exit(r) and rep["graphs"] > 0
              and (not got or len(most) == 1 and (not cap or int(most[0]) <= cap))
              and (got == want if want is not None else got <= chains) and len(graphs) == 1
              and said in graphs[0] and "dependent launch on" in graphs[0],
              f"{env} on the fake GPU: {sorted(got)}, {said!r}, graphs, no rule broken, "
              f"cooperative grids of at most {most} CTAs ({rep}, {graphs})")
    # the encoder's attention over f32 K/V (WHISPERC_CUDA_ATTN=tc32): no fp16 form launched
    r = transcribe("--device", "cuda", "-bs", "1", WHISPERC_CUDA_ATTN="tc32", FAKECUDA_REPORT="2")
    tc = set(re.findall(r"fakecuda: +\d+ (attn_tc_h6_d64\S*)", r.stderr))
    check(r.returncode == 0 and clean_exit(r) and "attn_tc_h6_d64" in tc
          and "attn_tc_h6_d64_kvh_oh" not in tc,
          f"WHISPERC_CUDA_ATTN=tc32 on the fake GPU: the encoder's attn_tc on f32 K/V ({tc})")
    r = transcribe("--device", "cuda")
    rep = report(r)
    check(r.returncode == 0 and clean_exit(r) and rep["launches"] > 0 and rep["graphs"] > 0,
          f"beam search on the fake GPU: exit 0, its beams' steps as graphs (the batch decoder), "
          f"no rule broken, nothing left ({rep})")
    # the batched throughput bench as a dry run (the fake's pick kernels write token 0): short
    # prompts fed as step rows, several rows of a lane a step; long ones prefilled
    for ctx in ("0", "20"):
        r = run(["bench", "--synthetic", "--device", "cuda", "-m", model, "-t", "2", "-bs", "1",
                 "--tokens", "3", "--runs", "1", "--batch-size", "4", "--throughput", "6",
                 "--context-tokens", ctx])
        rep = report(r)
        check(r.returncode == 0 and clean_exit(r) and rep["graphs"] > 0
              and "(6 steps in 2 waves" in r.stdout,
              f"bench --throughput 6 (context {ctx}) on the fake GPU: exit 0, graphs, no rule "
              f"broken ({rep}, {r.stdout[-300:]!r}, {r.stderr[-300:]!r})")
    # the encoder's pass size: WHISPERC_ENCODE_MAX_PASS=16 lets the sweep and the batch take
    # passes of 16 windows (buffers for them, every launch inside its allocation); a value out
    # of range is ignored (passes of at most 8)
    for env, most in (({"WHISPERC_ENCODE_MAX_PASS": "16"}, 16),
                      ({"WHISPERC_ENCODE_MAX_PASS": "65"}, 8)):
        r = run(["bench", "--synthetic", "--device", "cuda", "-m", model, "-t", "2", "-bs", "1",
                 "--tokens", "3", "--runs", "1", "--batch-size", "16", "--throughput", "20"],
                **env)
        rep = report(r)
        sweep = [int(m) for m in re.findall(r"^  (\d+)(?: \(alone\))? +\d", r.stdout, re.M)]
        check(r.returncode == 0 and clean_exit(r) and sweep and max(sweep) == most
              and f"encoder passes of {most}," in r.stdout,
              f"{env}: the encoder sweep {sweep} and the batch in passes of at most {most}, "
              f"no rule broken ({rep})")
    # dependent launches (the fake is sm_90): on; a driver that cannot capture them into step
    # graphs (before CUDA 12.3): the stream turns them off and keeps its graphs; one that
    # refuses them: plain launches
    for fake, want in (({}, "dependent launch on"),
                       ({"FAKECUDA_NO_PDL_CAPTURE": "1"},
                        "dependent launch off: a step graph with it failed"),
                       ({"FAKECUDA_NO_PDL": "1"}, "dependent launch off: the driver refused a "
                        "dependent launch: CUDA_ERROR_NOT_SUPPORTED")):
        r = run(["bench", "--synthetic", "--device", "cuda", "-m", model, "-t", "2", "-bs", "1",
                 "--tokens", "20", "--runs", "1"], **fake)
        rep = report(r)
        graphs = [l for l in r.stdout.splitlines() if l.startswith("  graphs")]
        check(r.returncode == 0 and clean_exit(r) and rep["graphs"] > 0 and len(graphs) == 1
              and "graphs     on:" in graphs[0] and want in graphs[0],
              f"bench --synthetic {fake}: step graphs on, {want!r} ({rep}, {graphs})")


def batch_beams(tmp, n, beams=5):
    """batch --batch-size n with beam search (5 beams: the default): every window's beams
    stepped together on the fake GPU, exit 0, no rule broken. The inputs are the same clip, so
    their windows step in lockstep: every step has beams x n rows, and graphs > 0 with no
    failure line says steps of that many rows replay as graphs (14 inputs: 70 rows, past 64;
    64 inputs of 10 beams: 640 rows, whose step tables pass 1 MiB of staging)."""
    inputs, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
    os.mkdir(inputs)
    for i in range(n):
        shutil.copy(jfk, os.path.join(inputs, f"c{i}.wav"))
    cmd = batch_cmd(inputs, out, n)
    i = cmd.index("-bs")
    r = run(cmd[:i + 1] + [str(beams)] + cmd[i + 2:])
    rep, st = report(r), sorted(l["status"] for l in results(out))
    check(r.returncode == 0 and st == ["ok"] * n and clean_exit(r) and rep["graphs"] > 0
          and "step graphs: failed" not in r.stderr and "does not fit" not in r.stderr,
          f"batch --batch-size {n}, {beams} beams: all done, {beams * n}-row steps as graphs, no "
          f"rule broken ({rep}, {st}, {r.stderr[-300:]!r})")


def out_of_memory():
    for mb, auto_says, cuda_says in (
            (60, "the weights do not fit on CUDA device 0", "CUDA_ERROR_OUT_OF_MEMORY"),
            (170, "no room for a decoding state beside the weights on CUDA device 0",
             "no device memory for")):
        r = transcribe("--device", "auto", "-bs", "1", FAKECUDA_MEM_MB=mb)
        check(r.returncode == 0 and auto_says in r.stderr and "running on the CPU" in r.stderr
              and right_text(r) and clean_exit(r),
              f"{mb} MiB, --device auto: one line, then the CPU's transcript "
              f"({r.returncode}, {r.stderr.strip()[:300]!r})")
        r = transcribe("--device", "cuda", "-bs", "1", FAKECUDA_MEM_MB=mb)
        check(r.returncode == 1 and cuda_says in r.stderr and clean_exit(r),
              f"{mb} MiB, --device cuda: exit 1 with the reason ({r.returncode}, "
              f"{r.stderr.strip()[:300]!r})")
    # a device too full for a stream (cuStreamCreate out of memory) is out of memory too: auto
    # takes the CPU; both say the driver's reason
    why = "cuStreamCreateWithPriority: CUDA_ERROR_OUT_OF_MEMORY"
    r = transcribe("--device", "auto", "-bs", "1", FAKECUDA_FAIL_STREAM=1)
    check(r.returncode == 0 and "no room for a decoding state" in r.stderr and why in r.stderr
          and "running on the CPU" in r.stderr and right_text(r) and clean_exit(r),
          f"no stream, --device auto: one line with the reason, then the CPU's transcript "
          f"({r.returncode}, {r.stderr.strip()[:300]!r})")
    r = transcribe("--device", "cuda", "-bs", "1", FAKECUDA_FAIL_STREAM=1)
    check(r.returncode == 1 and "cannot create a decoding state: cuda: " + why in r.stderr
          and clean_exit(r),
          f"no stream, --device cuda: exit 1, out of memory, the driver's reason "
          f"({r.returncode}, {r.stderr.strip()[:300]!r})")


def no_device():
    r = transcribe("--device", "auto", "-bs", "1", FAKECUDA_DEVICES=0)
    check(r.returncode == 0 and right_text(r), f"no device, --device auto: the CPU ({r.returncode})")
    r = transcribe("--device", "cuda", "-bs", "1", FAKECUDA_DEVICES=0)
    check(r.returncode == 1 and "CUDA unavailable" in r.stderr and "CUDA_ERROR_NO_DEVICE" in r.stderr,
          f"no device, --device cuda: exit 1, CUDA unavailable ({r.stderr.strip()[:200]!r})")


def kernel_faults():
    r = transcribe("--device", "cuda", "-bs", "1", FAKECUDA_FAIL_KERNEL="layernorm")
    # the fake is an sm_90 device: the kernels go through cuLaunchKernelEx (dependent launch)
    check(r.returncode == 1 and "cuLaunchKernelEx(layernorm_c384" in r.stderr and
          "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" in r.stderr and clean_exit(r),
          f"a launch refused: exit 1, the kernel and the error ({r.stderr.strip()[:300]!r})")
    r = transcribe("--device", "cuda", "-bs", "1", FAKECUDA_FAIL_KERNEL="attn:async")
    check(r.returncode == 1 and "CUDA_ERROR_ILLEGAL_ADDRESS" in r.stderr and
          "the last kernel queued was attn_" in r.stderr and "WHISPERC_CUDA_SYNC=1" in r.stderr
          and report(r) is not None,
          f"a fault in a kernel: exit 1, the last kernel queued ({r.stderr.strip()[:300]!r})")
    r = transcribe("--device", "cuda", "-bs", "1", FAKECUDA_FAIL_KERNEL="attn:async",
                   WHISPERC_CUDA_SYNC=1)
    # (the encoder's attention half-block: K, V and the output in fp16, attn_tc_..._kvh_oh)
    check(r.returncode == 1 and "kernel attn_tc_h6_d64_kvh_oh: CUDA_ERROR_ILLEGAL_ADDRESS"
          in r.stderr,
          f"a fault in a kernel, WHISPERC_CUDA_SYNC=1: the kernel that failed "
          f"({r.stderr.strip()[:300]!r})")
    r = transcribe("--device", "cuda", "-bs", "1", FAKECUDA_FAIL_KERNEL="attn_gather:async@60")
    check(r.returncode == 1 and "cuGraphLaunch: CUDA_ERROR_ILLEGAL_ADDRESS" in r.stderr and
          ", at the end of a step graph (WHISPERC_CUDA_SYNC=1" in r.stderr,
          f"a fault in a step graph's kernel: said so ({r.stderr.strip()[:300]!r})")


def later_files(tmp):
    """transcribe over several files: a refused launch fails its file only (the state's stream
    is made again for the next); a fault inside a kernel stops the run, saying how many files
    were left."""
    files = []
    for i in range(3):
        files.append(os.path.join(tmp, f"f{i}.wav"))
        shutil.copy(jfk, files[-1])
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "--device", "cuda", "-otxt",
             files[0], files[1]], FAKECUDA_FAIL_KERNEL="layernorm")
    errors = [l for l in r.stderr.splitlines() if l.startswith("whisper-c:")]
    check(r.returncode == 1 and len(errors) == 1 and errors[0].startswith(
        f"whisper-c: {files[0]}: encoder: cuda: cuLaunchKernelEx(layernorm_c384") and
          not os.path.exists(files[0] + ".txt") and os.path.exists(files[1] + ".txt") and
          clean_exit(r),
          f"a refused launch fails its file, named, and the next one is transcribed ({errors})")
    r = run(["transcribe", "-m", model, "-t", "2", "-bs", "1", "--device", "cuda", "-np"] + files,
            FAKECUDA_FAIL_KERNEL="attn_gather:async@60")
    check(r.returncode == 1 and f"whisper-c: {files[0]}: decoder: cuda: cuGraphLaunch" in r.stderr
          and "cannot be used again by this process; 2 more file(s) not transcribed" in r.stderr,
          f"a kernel fault stops the files after it ({r.stderr.strip()[-300:]!r})")


def batch_launch_refused(tmp):
    """batch: a refused launch fails one item; the worker's state is made again and the other
    items are done."""
    inputs, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
    os.mkdir(inputs)
    for i in range(3):
        shutil.copy(jfk, os.path.join(inputs, f"c{i}.wav"))
    r = run(batch_cmd(inputs, out, 1), FAKECUDA_FAIL_KERNEL="layernorm")
    st = sorted(l["status"] for l in results(out))
    check(r.returncode == 1 and st == ["failed", "ok", "ok"] and clean_exit(r),
          f"batch, a refused launch: that item failed, the others done ({r.returncode}, {st})")


def results(out):
    path = os.path.join(out, "results.jsonl")
    return [json.loads(l) for l in open(path).read().splitlines()] if os.path.exists(path) else []


def batch_cmd(inputs, out, size, readers=0):
    return ["batch", "-m", model, "-j", "1", "-t", "2", "-bs", "1", "-l", "en", "--device", "cuda",
            "--batch-size", str(size), "--read-threads", str(readers), "--formats", "txt", "-o",
            out, inputs]


def batch_device_lost(tmp, size, n_items, n_failed, readers=0):
    inputs, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
    os.mkdir(inputs)
    for i in range(n_items):
        shutil.copy(jfk, os.path.join(inputs, f"c{i}.wav"))
    what = f"batch --batch-size {size} --read-threads {readers}, a kernel faults"
    # (with readers, the next group is read while the first runs: read, never started, no line)
    r = run(batch_cmd(inputs, out, size, readers), FAKECUDA_FAIL_KERNEL="attn_gather:async@60")
    lines = results(out)
    check(r.returncode == 1 and "the GPU failed and cannot be used again by this process" in
          r.stderr and "run the same command again to resume" in r.stderr,
          f"{what}: exit 1, the run stops saying why ({r.returncode}, {r.stderr.strip()[-300:]!r})")
    check(len(lines) == n_failed and all(l["status"] == "failed" and "ILLEGAL_ADDRESS" in l["error"]
                                         for l in lines),
          f"{what}: {n_failed} item(s) failed, the {n_items - n_failed} not started have no line "
          f"({[(l['id'], l['status']) for l in lines]})")
    r = run(batch_cmd(inputs, out, size) + ["--retry-failed"])
    lines = results(out)
    done = sorted(l["id"] for l in lines if l["status"] == "ok")
    check(r.returncode == 0 and done == [f"c{i}" for i in range(n_items)] and clean_exit(r),
          f"{what}: the rerun completes every item ({r.returncode}, {done})")


def batch_encoder_stream(tmp):
    """batch --batch-size 4 over 8 items of 11 to 44 s: the encoder's passes on a stream of
    their own (the lowest priority; the state's the highest) beside the steps; with that stream
    refused, or out of device memory at its first pass (a warning each; the passes then run on
    the state's stream between the steps), or WHISPERC_ENCODE_STREAM=0; and a fault inside an
    encoder kernel on that stream."""
    inputs, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
    os.mkdir(inputs)
    with wave.open(jfk) as w:
        params, frames = w.getparams(), w.readframes(w.getnframes())
    for i in range(8):  # 1 or 2 windows, so that lanes need windows at other times
        with wave.open(os.path.join(inputs, f"c{i}.wav"), "wb") as w:
            w.setparams(params)
            w.writeframes(frames * (1 + i % 4))
    refused = "no stream for encoder passes beside the decoder"
    # (360 MiB: the state, 4 lanes and 4 encoder windows fit, the second stream's scratch not)
    no_room = "encoder passes beside the decoder: cuda: no device memory for"
    for what, streams, says, fake in (
            ("passes beside the steps", 2, None, {}),
            ("the second stream refused", 1, refused, {"FAKECUDA_FAIL_STREAM": 2}),
            ("the second stream out of memory", 2, no_room, {"FAKECUDA_MEM_MB": 360}),
            ("WHISPERC_ENCODE_STREAM=0", 1, None, {"WHISPERC_ENCODE_STREAM": 0})):
        shutil.rmtree(out, ignore_errors=True)
        r = run(batch_cmd(inputs, out, 4), **fake)
        rep, st = report(r), sorted(l["status"] for l in results(out))
        said = [m for m in (refused, no_room) if m in r.stderr]
        check(r.returncode == 0 and st == ["ok"] * 8 and clean_exit(r) and
              rep["streams"] == streams and rep["low"] == streams - 1 and
              said == ([says] if says else []),
              f"batch --batch-size 4, {what}: every item done, {streams} stream(s), "
              f"{says or 'no warning'}, no rule broken ({rep}, {st}, {r.stderr.strip()[-300:]!r})")
    shutil.rmtree(out)
    # (the 6th transpose: the second pass, queued beside a step; the first runs with none)
    r = run(batch_cmd(inputs, out, 4), FAKECUDA_FAIL_KERNEL="transpose_f32:async@6")
    lines = results(out)
    check(r.returncode == 1 and "the GPU failed and cannot be used again by this process" in
          r.stderr and lines and all(l["status"] == "failed" and "ILLEGAL_ADDRESS" in l["error"]
                                     for l in lines),
          f"batch --batch-size 4, a fault in an encoder pass on its stream: exit 1, the group "
          f"failed ({r.returncode}, {[(l['id'], l['status']) for l in lines]}, "
          f"{r.stderr.strip()[-300:]!r})")


def batch_small_memory(tmp):
    inputs, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
    os.mkdir(inputs)
    for i in range(4):
        shutil.copy(jfk, os.path.join(inputs, f"c{i}.wav"))
    # tiny.en: 4 lanes (14 MiB each, cross-attention K/V in fp16) do not fit, 2 do, and then 2
    # encoder windows do not (212-222 MiB; 240 when the K/V were fp32)
    r = run(batch_cmd(inputs, out, 4), FAKECUDA_MEM_MB=216)
    lines = results(out)
    check(r.returncode == 0 and "batch of 4 does not fit in memory" in r.stderr and
          "encoder windows do not fit in memory" in r.stderr and
          sorted(l["status"] for l in lines) == ["ok"] * 4 and clean_exit(r),
          f"batch --batch-size 4 in 216 MiB: fewer lanes and windows, each said, every item done "
          f"({r.returncode}, {[l['status'] for l in lines]}, {r.stderr.strip()[-400:]!r})")


def batch_hang(tmp):
    """One SIGTERM (`timeout`, a scheduler) while the GPU hangs: the run still ends."""
    inputs, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
    os.mkdir(inputs)
    shutil.copy(jfk, os.path.join(inputs, "c0.wav"))
    cmd = [exe] + batch_cmd(inputs, out, 1) + ["--stop-timeout", "1"]
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                         env=fake_env(FAKECUDA_FAIL_KERNEL="attn_gather:hang@20"))
    err = []
    for line in p.stderr:  # until the worker waits on the kernel that never ends
        err.append(line)
        if line.startswith("fakecuda: hanging"):
            break
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        err.append(p.stderr.read())
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    waited, err = time.monotonic() - t0, "".join(err)
    check(p.returncode == 143 and waited < 1 + 2 and
          "did not stop within --stop-timeout of SIGTERM" in err,
          f"batch on a hung GPU, one SIGTERM: the watchdog ends it, exit 143 ({p.returncode}, "
          f"{waited:.2f} s, {err.strip()[-300:]!r})")
    check(not results(out) and not os.path.exists(os.path.join(out, "c0.txt")),
          "batch on a hung GPU: no output and no results line")
    r = run(batch_cmd(inputs, out, 1))
    check(r.returncode == 0 and [l["status"] for l in results(out)] == ["ok"] and clean_exit(r),
          f"batch on a hung GPU: the same command then completes the item ({r.returncode})")


clean_runs()
out_of_memory()
no_device()
kernel_faults()
for test in (later_files,
             batch_launch_refused,
             lambda t: batch_beams(t, 2),
             lambda t: batch_beams(t, 14),
             lambda t: batch_beams(t, 64, 10),
             lambda t: batch_device_lost(t, 1, 3, 1),
             lambda t: batch_device_lost(t, 2, 3, 2),
             lambda t: batch_device_lost(t, 2, 6, 2, readers=1),
             batch_encoder_stream,
             batch_small_memory,
             batch_hang):
    tmp = tempfile.mkdtemp(prefix="wc_gpu_faults_")
    try:
        test(tmp)
    finally:
        shutil.rmtree(tmp)
print(f"{testlib.failures} failure(s)")
sys.exit(testlib.exit_status())
