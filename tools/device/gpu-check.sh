#!/bin/bash
# gpu-check.sh — the GPU checks, run on the lent machine (docs/gpu-validation.md, "How to run
# the GPU checks", gives the device-tool calls). Each STAGE logs to $OUT/gpu-check-STAGE.log and
# adds its lines to $OUT/summary.txt; a failing stage does not stop the next.
#
#   tools/device/gpu-check.sh STAGE...      ($OUT unset: .device/out)
#
# stages, in the order of a first session:
#   unpack    tools/device/stage.sh unpack (the carried parts -> .device/debs, .device/shared)
#   build     tools/device/setup.sh build-device (prefix from the debs, meson, ninja)
#   info      GPU, driver, CUDA toolkit, where libcuda and libcublas are found, tools present
#   test      meson test --suite gpu; each failing test again with WHISPERC_CUDA_SYNC=1
#   compare   jfk: whisper-c --device cuda vs cpu (tiny.en, base); the golden dev set, words
#             and long form with run_transcribe on cuda (WHISPERC_TEST_DEVICE=cuda), and
#             test_batch quick on cuda (whisperc_full_batch against whisperc_full)
#   bench     whisper-c bench on jfk and a 10-minute file, cuda and cpu
#   random    tools/make-random-model large-v3 and large-v3-turbo, bench --synthetic on cuda
#   sanitize  compute-sanitizer memcheck of one jfk transcription (tiny.en) on cuda
#   torch     tools/device/compare-torch.py: whisper-c beside openai-whisper and transformers
#             (fp16, batch 1 and 16) on the 186 ljspeech-dev clips as 16 kHz WAVs, tiny.en and
#             base (needs .whl from tools/device/fetch-wheels.sh carried in the same call)
#   torchlong the same on the 620 s file of the bench stage (long form), batch 1
#   batchbench whisperc_full_batch on the 186 clips at --batch-size 16 and 64 (tiny.en, base),
#             tiny.en at 64 with fallbacks on most windows (in the batch, and alone as before),
#             and base with 5 beams at 16: encoder, decoder, batch steps and step graphs
#   profile   ncu per-kernel durations of base decoder steps, 1 and 16 lanes, and of the
#             encoder at batch 1
#   throughput whisper-c batch --gpus 0 over >= 8 hours of files (the ljspeech-dev FLACs listed
#             24 times), files in, text out: x real time at --batch-size 16 and 64, tiny.en
#             and base (THROUGHPUT_REPEAT, THROUGHPUT_CLIPS, THROUGHPUT_WORKERS="-j 1" for a dry
#             run on the CPU); then 64 copies of a 620 s long-form file (11 h) at 64
#   quick     a 15-minute session's measurements with tiny.en alone (stage.sh pack tiny.en):
#             jfk, the dev set and its words on cuda, batch identity, batchbench at 64 lanes (cross K/V
#             f16 and f32), base.en-shaped random weights (step and encoder with dependent
#             launches and without, batched x real time with prompts as step rows and as
#             prefills), throughput tiny.en at 64 lanes (the clips, then 64 long files)
#   goals     issue 4's figures on real base weights (stage.sh pack base, .whl carried too):
#             jfk end to end greedy and with 5 beams, batchbench at 64 lanes (the encoder's
#             passes beside the steps, then between them: WHISPERC_ENCODE_STREAM=0), throughput at 64
#             lanes over 8 hours of files, then whisper-c beside openai-whisper and
#             transformers on the dev set (~6 minutes; its timeouts add up to 13: run it
#             alone in a call)
#   profile_batch  ncu of base's encoder in passes of up to 8 windows and of its steps at 1
#             and 64 lanes (~4 min)
#   batchid   test_batch quick on cuda: whisperc_full_batch against whisperc_full (~1 min)
#   passes    the encoder's pass size (WHISPERC_ENCODE_MAX_PASS): base (random base.en weights
#             where base is not carried) in passes of 1-32 windows, then 128 windows at 64
#             lanes and 30 tokens (a short clip's) with passes of at most 8, 16 and 32 (~1 min)
#   overlap   whisperc_full_batch on the 186 clips at 64 lanes (base, else tiny.en): the
#             encoder's passes between the decoder's steps, then beside them with each pass's
#             windows starting after 1, 0 and 2 steps a window (WHISPERC_ENCODE_LAG) (~2 min)
#   profile_large  ncu of large-v3-shaped random weights: an encoder window at batch 1, a
#             64-lane step's kernels with gemv_f16 and with gemv_tc
#   tc        a step's projections on tensor cores (gemv_tc, the default) against gemv_f16:
#             base.en-shaped random weights (a step with gemv_tc, gemv_f16 and gemv_f16 without
#             dependent launch; 128 windows at 64 lanes), gpu_backend and decoder_feed, jfk and
#             batch identity with it, large-v3's shape, the tiny.en dev set
#   lt        the encoder's GEMMs through cuBLASLt (WHISPERC_CUDA_GEMM=lt, bias in the GEMM's
#             epilogue): ncu of base.en's random encoder window with and without it, encoder
#             and batched figures, gpu_backend, jfk, batch identity and the tiny.en dev set
#   rows      a batch step's cross-attention on tensor cores (attn_rows_tc, the default)
#             against attn_rows_kvh (WHISPERC_CUDA_ROWS=kvh): base.en and large-v3 random
#             weights batched (128 windows at 64 lanes) and a one-lane step, then batch identity
#             and the tiny.en dev set with attn_rows_kvh
#   chain     a step's chains as cooperative kernels (gemv_chain; WHISPERC_CUDA_CHAIN=1: the
#             projections, =block: a decoder block a kernel): the one-lane step of base.en and
#             large-v3 random weights with block chains, projection chains and none (all
#             three with WHISPERC_CUDA_ROWS=kvh, which block chains need),
#             gpu_chains (both = plain launches, bit for bit), jfk, batch identity and the
#             tiny.en dev set with block chains, then ncu of base.en's one-lane steps
# shellcheck disable=SC2317  # the stage_* functions are called by name, below
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-.device/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
B=build-device
S=.device/shared
SUMMARY="$OUT/summary.txt"

say() { echo "$*" | tee -a "$SUMMARY"; }

# The unpacked prefix and CUDA's libraries; cuBLAS from pip's nvidia-cublas if the toolkit's
# lib64 lacks it (our backend dlopens libcublas.so.13, .12 or .11).
load_env() {
    # shellcheck disable=SC1091
    [ -f .device/env.sh ] && . .device/env.sh
    if ! ldconfig -p | grep -q 'libcublas\.so\.1[123]' &&
        ! ls /usr/local/cuda/lib64/libcublas.so.1[123] >/dev/null 2>&1; then
        local d
        d=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null)
        [ -n "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
    fi
    export WHISPERC_SHARED="$PWD/$S"
}

stage_unpack() { tools/device/stage.sh unpack; }

stage_build() {
    tools/device/setup.sh "$B" &&
        say "build: $(grep -m1 'CUDA backend' "$B/meson-logs/meson-log.txt" || echo 'CUDA backend ?')"
}

stage_info() {
    nvidia-smi
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
        --format=csv,noheader | sed 's/^/gpu: /' | tee -a "$SUMMARY"
    uname -a
    head -2 /etc/os-release
    gcc --version | head -1
    echo "meson $(meson --version), ninja $(ninja --version), $(python3 --version)"
    ls -d /usr/local/cuda* 2>&1
    command -v nvcc && nvcc --version | tail -2
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    ldconfig -p | grep -E 'libcuda\.so|libcublas(Lt)?\.so' || echo "ldconfig: no libcuda/libcublas"
    find /usr/local/cuda/lib64/ -name 'libcublas*' 2>&1 | head
    say "cuda: $("$B/whisper-c" transcribe --device cuda -m "$S/models/ggml-tiny.en.bin" \
        -nt --no-prints "$S/audio/jfk/jfk.wav" 2>&1 | tr '\n' ' ' | cut -c1-300)"
    for t in compute-sanitizer ncu cuobjdump; do
        say "tool $t: $(command -v "$t" || echo missing)"
    done
}

stage_test() {
    local rc=0 t
    meson test -C "$B" --suite gpu --print-errorlogs --num-processes 1 2>&1 |
        tee "$OUT/gpu-suite.txt" || rc=1
    # (the device's meson leaves out a count of 0: no Timeout line when none timed out)
    grep -q -E '^Ok: +[1-9]' "$B/meson-logs/testlog.txt" &&
        ! grep -q -E '^(Fail|Timeout): +[1-9]' "$B/meson-logs/testlog.txt" || rc=1
    grep -E '^(Ok|Fail|Skipped|Timeout):' "$B/meson-logs/testlog.txt" | tr -s ' ' |
        tr '\n' ' ' | sed 's/^/gpu suite: /;s/$/\n/' | tee -a "$SUMMARY"
    if [ "$rc" -ne 0 ]; then
        cp "$B/meson-logs/testlog.txt" "$OUT/testlog-gpu.txt" # every test's whole output
        grep -E ' / [a-z_.]+ +TIMEOUT' "$OUT/gpu-suite.txt" | while read -r l; do say "  $l"; done
        # the failed ones (not the timed out: a hang would cost its timeout again) once more,
        # each launch synced, so that an asynchronous error names its kernel
        grep -E ' / [a-z_.]+ +FAIL' "$OUT/gpu-suite.txt" |
            sed -E 's/.* \/ ([a-z_.]+) +FAIL.*/\1/' | while read -r t; do
            say "gpu suite: $t failed; again with WHISPERC_CUDA_SYNC=1 (log below)"
            WHISPERC_CUDA_SYNC=1 meson test -C "$B" --no-rebuild --print-errorlogs "$t"
        done
    fi
    return "$rc"
}

# One JSON line per file from run_transcribe; prints "same" or the two texts.
compare_jfk() {
    local model=$1 cpu cuda
    cpu=$("$B/tests/run_transcribe" "$S/models/ggml-$model.bin" --device cpu "$S/audio/jfk/jfk.wav")
    if ! cuda=$("$B/tests/run_transcribe" "$S/models/ggml-$model.bin" --device cuda \
        "$S/audio/jfk/jfk.wav" 2>&1); then
        say "jfk $model cuda: FAILED: $cuda"
        return 1
    fi
    python3 - "$model" "$cpu" "$cuda" <<'PY' | tee -a "$SUMMARY"
import json, sys
model, a, b = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
tok = lambda r: [t for s in r["segments"] for t in s["tokens"]]
same = tok(a) == tok(b)
print("jfk %s cuda vs cpu: %s (cpu %.2f s, cuda %.2f s)" % (model, "tokens identical" if same else "DIFFER", a["seconds"], b["seconds"]))
if not same:
    print("  cpu:  " + a["text"] + "\n  cuda: " + b["text"])
PY
}

# One of the CPU's golden checks, unchanged, on the GPU (criteria in tests/check_transcripts.py);
# 130 s keeps a stage inside one 10-minute call (the CPU takes far longer).
golden_on_cuda() {
    local rc=0
    if WHISPERC_TEST_DEVICE=cuda timeout 130 meson test -C "$B" --no-rebuild \
        --print-errorlogs "$1"; then
        say "golden on cuda: $1 ok"
    else
        say "golden on cuda: $1 FAIL"
        rc=1
    fi
    grep -E "tokens identical|WER|seconds|segments" "$B/meson-logs/testlog.txt" | head -8 |
        sed 's/^/    /' | tee -a "$SUMMARY"
    return "$rc"
}

# whisperc_full_batch against whisperc_full on the GPU (greedy, fallbacks, beams): issue 4's
# "batched and unbatched runs give the same transcripts"; $1: seconds at most
batch_identity() {
    local rc=0
    if WHISPERC_TEST_DEVICE=cuda timeout "$1" "$B/tests/test_batch" quick \
        >"$OUT/batch-cuda.txt" 2>&1; then
        say "batch identity on cuda: ok"
    else
        say "batch identity on cuda: FAIL"
        rc=1
    fi
    grep -E "identical|DIFFER|differ|FAIL" "$OUT/batch-cuda.txt" | head -12 | sed 's/^/    /' |
        tee -a "$SUMMARY"
    return "$rc"
}

stage_compare() {
    local rc=0 t
    compare_jfk tiny.en || rc=1
    compare_jfk base || rc=1
    for t in devset_tiny.en words_tiny.en devset_base longform_tiny.en beam5_tiny.en; do
        golden_on_cuda "$t" || rc=1
    done
    batch_identity 200 || rc=1
    return "$rc"
}

# A 10-minute 16 kHz WAV from the dev set's 16 kHz WAVs (python's wave module: no libraries).
make_long_wav() {
    python3 - "$S/audio" .device/long.wav <<'PY'
import glob, sys, wave
src = [sys.argv[1] + "/jfk/jfk.wav"] + sorted(glob.glob(sys.argv[1] + "/librivox/*.wav"))
frames = [wave.open(f).readframes(10**9) for f in src]
gap = b"\0\0" * 8000  # 0.5 s
out = wave.open(sys.argv[2], "wb")
out.setnchannels(1); out.setsampwidth(2); out.setframerate(16000)
n = 0
while n < 600 * 16000:
    for f in frames:
        out.writeframes(f + gap); n += len(f + gap) // 2
out.close()
print("%s: %.1f s" % (sys.argv[2], n / 16000))
PY
}

stage_bench() {
    local rc=0 m f dev runs
    make_long_wav || return 1
    for m in tiny.en base; do
        for f in "$S/audio/jfk/jfk.wav" .device/long.wav; do
            for dev in cuda cpu; do
                [ "$dev" = cpu ] && [ "$f" = .device/long.wav ] && [ "$m" = base ] && continue
                runs=3
                [ "$f" = .device/long.wav ] && runs=1
                # the CPU on every core (its default stops at 8 threads); 75 s at most each,
                # so that the stage fits in one call
                timeout 75 "$B/whisper-c" bench --device "$dev" -m "$S/models/ggml-$m.bin" \
                    --runs "$runs" -bs 5 -bo 5 -t "$(nproc)" "$f" >"$OUT/bench.tmp" 2>&1 || rc=1
                cat "$OUT/bench.tmp"
                say "bench $m $(basename "$f") $dev: $(grep -E '^  (encoder|decoder|total)' \
                    "$OUT/bench.tmp" | tr -s ' ' | tr '\n' ';')"
            done
        done
        # one random window: stage times from CUDA events, idle fraction, encoder batch sweep;
        # then attention without tensor cores, for the encoder's gain from attn_tc
        for attn in tc simt; do
            WHISPERC_CUDA_ATTN=$attn timeout 30 "$B/whisper-c" bench --synthetic --device cuda \
                -m "$S/models/ggml-$m.bin" --tokens 100 -bs 1 --runs 3 >"$OUT/bench.tmp" 2>&1 || rc=1
            cat "$OUT/bench.tmp"
            say "synthetic $m cuda (attention $attn): $(synthetic_lines "$OUT/bench.tmp")"
        done
    done
    rm -f "$OUT/bench.tmp"
    return "$rc"
}

# The lines of bench --synthetic worth a summary: device, stage times (host, median, stream),
# per step host vs stream, RTF, idle fraction, the encoder's batch sweep and best batch.
synthetic_lines() {
    grep -E '^  (device|warm-up|encoder|decoder|window|per step|RTF|idle|1 \(alone\)|[0-9]+ |best batch|batch step|graphs)' \
        "$1" | tr -s ' ' | tr '\n' ';'
}

stage_random() {
    local rc=0 size bs enc
    for size in large-v3 large-v3-turbo; do
        random_model "$size" || { rc=1; continue; }
        for bs in 1 5; do
            # -bs 1 also times the encoder on 8 windows in passes of 1, 2, 4, 8 (the GPU's
            # default); -bs 5 only one by one
            enc=(--batch-size 1)
            [ "$bs" = 1 ] && enc=(--batch-size 8)
            timeout 100 "$B/whisper-c" bench --synthetic --device cuda -m "/tmp/ggml-$size-random.bin" \
                --tokens 100 -bs "$bs" --runs 3 "${enc[@]}" >"$OUT/bench.tmp" 2>&1 || rc=1
            cat "$OUT/bench.tmp"
            say "synthetic $size -bs $bs: $(synthetic_lines "$OUT/bench.tmp")"
        done
        # issue 4's batched figure for these shapes: 128 windows, 64 lanes, 100 tokens each
        timeout 240 "$B/whisper-c" bench --synthetic --device cuda -m "/tmp/ggml-$size-random.bin" \
            --tokens 100 -bs 1 --runs 1 --batch-size 64 --throughput 128 >"$OUT/bench.tmp" 2>&1 || rc=1
        cat "$OUT/bench.tmp"
        say "synthetic $size batched: $(sed -n '/^batched throughput/,$p' "$OUT/bench.tmp" |
            grep -E '^  (encoder|prompts|decoder|total)' | tr -s ' ' | tr '\n' ';')"
        rm -f "/tmp/ggml-$size-random.bin"
    done
    rm -f "$OUT/bench.tmp"
    return "$rc"
}

stage_sanitize() {
    if ! command -v compute-sanitizer >/dev/null; then
        say "sanitize: no compute-sanitizer"
        return 0
    fi
    timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 99 \
        "$B/whisper-c" transcribe --device cuda -m "$S/models/ggml-tiny.en.bin" \
        "$S/audio/jfk/jfk.wav"
    local rc=$?
    say "sanitize: compute-sanitizer memcheck jfk tiny.en exit $rc"
    return "$rc"
}

# openai-whisper and more-itertools from the carried wheels (the machine has the rest)
load_wheels() {
    python3 -c 'import whisper' 2>/dev/null && return 0
    ls .whl/*.whl >/dev/null 2>&1 || { say "torch: no .whl (tools/device/fetch-wheels.sh, carry .whl)"; return 1; }
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || return 1
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
}

# compare-torch.py for one model; its summary lines go to summary.txt, its JSON to $OUT.
compare_torch() {
    local model=$1 tag=$2 limit=$3
    shift 3
    say "torch $model $tag:"
    timeout "$limit" python3 tools/device/compare-torch.py -m "$S/models/ggml-$model.bin" \
        --device cuda --whisper-c "$B/whisper-c" --json "$OUT/torch-$tag-$model.json" "$@" \
        2>&1 | grep -v -E 'Warning|warn\(|deprecated' | tee "$OUT/torch.tmp"
    local rc=${PIPESTATUS[0]}
    grep -E '^(whisper-c|openai|hf|speed|[0-9]+ files)' "$OUT/torch.tmp" | sed 's/^/    /' >>"$SUMMARY"
    [ "$rc" -eq 0 ] || say "    FAILED ($rc)"
    rm -f "$OUT/torch.tmp"
    return "$rc"
}

# .device/wav16: the 186 ljspeech-dev clips as 16 kHz WAVs written by whisper-c's own decoder
# + resampler, so that every engine reads the same samples (compare-torch reads WAVs with scipy;
# the machine has no soundfile)
make_wav16() {
    local f
    mkdir -p .device/wav16
    for f in "$S"/audio/ljspeech-dev/wavs/*.flac; do
        [ -f ".device/wav16/$(basename "$f" .flac).wav" ] ||
            "$B/tests/run_transcribe" --write-wav ".device/wav16/$(basename "$f" .flac).wav" "$f" \
                >/dev/null || return 1
    done
}

stage_torch() {
    local rc=0 m
    load_wheels || return 1
    make_wav16 || return 1
    for m in tiny.en base; do
        compare_torch "$m" dev 280 --batch-size 16 -l en .device/wav16 || rc=1
    done
    return "$rc"
}

stage_torchlong() {
    local rc=0 m
    load_wheels || return 1
    [ -f .device/long.wav ] || make_long_wav || return 1
    for m in tiny.en base; do
        compare_torch "$m" long 280 --batch-size 1 --engines openai,hf -l en .device/long.wav ||
            rc=1
    done
    return "$rc"
}

# The issue's batched figure: files in (FLAC at 22.05 kHz: decoding and resampling count),
# text out, model loaded; x real time = audio seconds / wall seconds of the batch command.
throughput_run() { # MODEL BATCH_SIZE LABEL (env: workers, out)
    local t0 t1 rc=0
    rm -rf "$out"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086  # $workers is two words
    timeout 280 "$B/whisper-c" batch $workers -m "$S/models/ggml-$1.bin" -l en -bs 1 \
        --batch-size "$2" -t "$(nproc)" --formats txt -o "$out" \
        --manifest .device/throughput.csv 2>"$OUT/batch.tmp" || rc=1
    t1=$(date +%s.%N)
    tail -n 3 "$OUT/batch.tmp"
    say "throughput $1 --batch-size $2$3: $(python3 - "$out/results.jsonl" "$t0" "$t1" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = [r for r in rows if r["status"] == "ok"]
audio, wall = sum(r["duration"] for r in ok), float(sys.argv[3]) - float(sys.argv[2])
print(f"{len(ok)}/{len(rows)} ok, {audio / 3600:.2f} h of audio in {wall:.1f} s: "
      f"{audio / wall:.0f}x real time")
PY
)"
    # where the workers' time went: transcribing, waiting for files, writing
    say "  $(grep -o "workers' time.*" "$OUT/batch.tmp")"
    return "$rc"
}

# whisperc_full_batch over the 186 clips (model loaded, audio in memory) at 16 and 64 lanes:
# encoder, decoder, batch steps (ms a step, windows a step) and the step graphs' state, to see
# where a batched run's time goes
# One batched bench: model, beams, batch size[, a label for the summary].
batchbench_one() {
    local rc=0
    # shellcheck disable=SC2086  # BENCH_EXTRA: more options, word-split on purpose
    timeout 150 "$B/whisper-c" bench --device cuda -m "$S/models/ggml-$1.bin" -l en \
        -bs "$2" -bo "$2" --batch-size "$3" --runs 1 -t "$(nproc)" ${BENCH_EXTRA:-} \
        .device/wav16/*.wav >"$OUT/bench.tmp" 2>&1 || rc=1
    cat "$OUT/bench.tmp"
    say "batchbench $1 -bs $2 --batch-size $3${4:-}: $(sed -n '/whisperc_full_batch/,$p' \
        "$OUT/bench.tmp" | grep -E '^  (encoder|decoder|total|batch|graphs)|speed-up' |
        tr -s ' ' | tr '\n' ';')"
    rm -f "$OUT/bench.tmp"
    return "$rc"
}

stage_batchbench() {
    local rc=0 m bs
    make_wav16 || return 1
    for m in tiny.en base; do
        for bs in 16 64; do
            batchbench_one "$m" 1 "$bs" || rc=1
        done
    done
    # beam search (5 beams, the CLI's default) batched: 16 windows = 80 rows a step
    batchbench_one base 5 16 || rc=1
    # temperature fallbacks on most windows (-lpt -0.15, 5 samples): in the batch, then alone
    # (before b3923b5)
    BENCH_EXTRA="-lpt -0.15 -bo 5" batchbench_one tiny.en 1 64 " (fallbacks in the batch)" || rc=1
    WHISPERC_BATCH_FALLBACK=alone BENCH_EXTRA="-lpt -0.15 -bo 5" batchbench_one tiny.en 1 64 \
        " (fallbacks alone)" || rc=1
    # the cross-attention K/V in fp32 (as before 2026-11-26) against the default fp16
    WHISPERC_CROSS_KV=f32 batchbench_one base 1 64 " (cross K/V f32)" || rc=1
    return "$rc"
}

# ncu's per-kernel durations over 300 launches of decoder steps (one lane, and 16 lanes through
# the batch decoder), base: where a step's time goes, kernel by kernel (the machine has ncu,
# not nsys). One summary line per kernel: name, grid, launches, mean µs, total µs.
# ncu's per-kernel summary in $1 as a table, the largest total first
ncu_table() {
    python3 - "$1" <<'PY' | tee -a "$SUMMARY"
import re, sys
rows, name = [], None
for line in open(sys.argv[1]):
    # our kernels' names, or cuBLAS's templated ones (cut to 40 characters)
    m = re.match(r"\s+(\S.*?) \(([\d, ]+)\)x\(([\d, ]+)\).*Invocations (\d+)", line)
    if m:
        name = (m.group(1)[:40], m.group(2).replace(" ", ""), int(m.group(4)))
        continue
    # the default sections' Duration, or the metric alone (--metrics gpu__time_duration.sum)
    m = re.match(r"\s+(?:Duration|gpu__time_duration.sum)\s+(\S+)\s+([\d.,]+)\s+([\d.,]+)"
                 r"\s+([\d.,]+)", line)
    if m and name:
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "nsecond": 1e-3, "usecond": 1.0,
                 "msecond": 1e3}.get(m.group(1), 1.0)
        mean = float(m.group(4).replace(",", "")) * scale
        rows.append((mean * name[2], name, mean))
        name = None
for total, (k, grid, n), mean in sorted(rows, reverse=True):
    print(f"    {k:40s} grid {grid:>12s} x{n:<4d} {mean:8.2f} us  {total:9.1f} us")
PY
}

stage_profile() {
    local rc=0 lanes model="$S/models/ggml-base.bin"
    command -v ncu >/dev/null || { say "profile: no ncu"; return 1; }
    if [ ! -f "$model" ]; then # the quick pack: base.en's shapes with random weights
        random_model base.en >/dev/null || return 1
        model=/tmp/ggml-base.en-random.bin
    fi
    for lanes in 1 16; do
        timeout 200 ncu --print-summary per-kernel --launch-skip 3000 --launch-count 300 \
            "$B/whisper-c" bench --synthetic --device cuda -m "$model" \
            --tokens 40 -bs "$lanes" --runs 1 --batch-size 1 >"$OUT/ncu-base-$lanes.txt" 2>&1 ||
            rc=1
        say "profile base, $lanes lane(s), 300 launches from the 3000th:"
        ncu_table "$OUT/ncu-base-$lanes.txt"
    done
    # the encoder at batch 1 (the warm-up window's and the timed window's passes, a prompt)
    timeout 150 ncu --print-summary per-kernel --launch-count 400 \
        "$B/whisper-c" bench --synthetic --device cuda -m "$model" \
        --tokens 0 -bs 1 --runs 1 --batch-size 1 >"$OUT/ncu-base-encoder.txt" 2>&1 || rc=1
    say "profile base encoder, batch 1, the first 400 launches:"
    ncu_table "$OUT/ncu-base-encoder.txt"
    return "$rc"
}

# The encoder in passes of 8 windows, as a batch runs it (a window took 0.59 ms batched against
# 0.76 alone on the H200, 2026-11-28; where the batched time goes is unmeasured): every kernel of
# the synthetic throughput's passes (the one-window warm-up and timed windows come first).
stage_profile_batch() {
    local rc=0 model="$S/models/ggml-base.bin"
    command -v ncu >/dev/null || { say "profile_batch: no ncu"; return 1; }
    if [ ! -f "$model" ]; then
        random_model base.en >/dev/null || return 1
        model=/tmp/ggml-base.en-random.bin
    fi
    # every launch, timed alone (one replay pass a kernel: the duration metric only)
    timeout 240 ncu --print-summary per-kernel --metrics gpu__time_duration.sum "$B/whisper-c" \
        bench --synthetic --device cuda -m "$model" --tokens 1 -bs 1 --runs 1 --batch-size 8 \
        --throughput 8 >"$OUT/ncu-base-encoder-8.txt" 2>&1 || rc=1
    say "profile base encoder in passes of 1-8 windows (a pass of 8: the grids 8 times 1's):"
    ncu_table "$OUT/ncu-base-encoder-8.txt" >/dev/null
    # and a 64-lane step's kernels: a lane's cross K/V is 3 MB a layer, 1.15 GB a step in all
    # (0.24 ms at the H200's 4.8 TB/s against the 0.92 ms a step took): how near attn_rows_tc is
    timeout 200 ncu --print-summary per-kernel --metrics gpu__time_duration.sum,dram__bytes_read.sum \
        --launch-count 2000 -k 'regex:^(gemv|attn_rows|attn_gather|logits|embed|rows_scatter)' \
        "$B/whisper-c" bench --synthetic --device cuda -m "$model" --tokens 4 -bs 1 --runs 1 \
        --batch-size 64 --throughput 64 >"$OUT/ncu-base-step-64.txt" 2>&1 || rc=1
    say "profile base steps, 1 lane and 64 (the larger grids; DRAM bytes in the log):"
    ncu_table "$OUT/ncu-base-step-64.txt" >/dev/null
    rm -f /tmp/ggml-base.en-random.bin
    return "$rc"
}

stage_batchid() { batch_identity 150; }

# Larger encoder passes than ENCODER_MAX_WINDOWS: the sweep, then the batched figure with
# short windows' token counts, where the encoder is most of a window's time
stage_passes() {
    local rc=0 model="$S/models/ggml-base.bin" cap
    if [ ! -f "$model" ]; then
        random_model base.en >/dev/null || return 1
        model=/tmp/ggml-base.en-random.bin
    fi
    WHISPERC_ENCODE_MAX_PASS=32 timeout 100 "$B/whisper-c" bench --synthetic --device cuda \
        -m "$model" --tokens 1 -bs 1 --runs 3 --batch-size 32 >"$OUT/bench.tmp" 2>&1 || rc=1
    say "passes $(basename "$model") encoder 1-32: $(synthetic_lines "$OUT/bench.tmp")"
    for cap in 8 16 32; do
        WHISPERC_ENCODE_MAX_PASS=$cap timeout 100 "$B/whisper-c" bench --synthetic --device cuda \
            -m "$model" --tokens 30 -bs 1 --runs 1 --batch-size 64 --throughput 128 \
            >"$OUT/bench.tmp" 2>&1 || rc=1
        say "  128 windows, 64 lanes, 30 tokens, passes <= $cap: $(sed -n '/^batched throughput/,$p' \
            "$OUT/bench.tmp" | grep -E '^  (encoder|decoder|total)' | tr -s ' ' | tr '\n' ';')"
    done
    rm -f /tmp/ggml-base.en-random.bin "$OUT/bench.tmp"
    return "$rc"
}

# the encoder's passes beside the decoder's steps (2026-12-08): whisperc_full_batch on the 186
# clips at 64 lanes with the passes between the steps, then beside them, each pass's windows
# starting after 1 (the default), 0 and 2 steps a window (WHISPERC_ENCODE_LAG); base where it
# is carried, else tiny.en
stage_overlap() {
    local rc=0 m=tiny.en lag
    [ -f "$S/models/ggml-base.bin" ] && m=base
    make_wav16 || return 1
    WHISPERC_ENCODE_STREAM=0 batchbench_one "$m" 1 64 " (passes between steps)" || rc=1
    for lag in 1 0 2; do
        WHISPERC_ENCODE_LAG=$lag batchbench_one "$m" 1 64 " (passes beside, lag $lag)" || rc=1
    done
    return "$rc"
}

# issue 4's large-v3 figure (785x on the H200, 2026-11-27: the encoder 44% of the time, a
# 64-lane step 17 ms): where an encoder window and a 64-lane step go, kernel by kernel
stage_profile_large() {
    local rc=0 g m=/tmp/ggml-large-v3-random.bin
    command -v ncu >/dev/null || { say "profile_large: no ncu"; return 1; }
    random_model large-v3 >/dev/null || return 1
    timeout 200 ncu --print-summary per-kernel --launch-count 400 "$B/whisper-c" bench \
        --synthetic --device cuda -m "$m" --tokens 0 -bs 1 --runs 1 --batch-size 1 \
        >"$OUT/ncu-large-encoder.txt" 2>&1 || rc=1
    say "profile large-v3 encoder, batch 1, the first 400 launches:"
    ncu_table "$OUT/ncu-large-encoder.txt"
    for g in f16 tc; do # the step's kernels only (-k), 64 lanes
        WHISPERC_CUDA_GEMV=$g timeout 240 ncu --print-summary per-kernel --launch-count 400 \
            -k 'regex:^(gemv|attn_rows|attn_gather|logits|embed|rows_scatter)' "$B/whisper-c" \
            bench --synthetic --device cuda -m "$m" --tokens 4 -bs 1 --runs 1 --batch-size 64 \
            --throughput 64 >"$OUT/ncu-large-step-$g.txt" 2>&1 || rc=1
        say "profile large-v3 64-lane steps (gemv $g), 400 step kernels:"
        ncu_table "$OUT/ncu-large-step-$g.txt"
    done
    rm -f "$m"
    return "$rc"
}

# .device/throughput.csv: the first CLIPS ljspeech-dev FLACs listed REPEAT times, distinct ids
throughput_manifest() { # REPEAT CLIPS
    python3 - "$S/audio/ljspeech-dev/wavs" "$1" "$2" >.device/throughput.csv <<'PY'
import os, sys
d, reps, clips = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
files = sorted(f for f in os.listdir(d) if f.endswith(".flac"))[:clips]
print("id,path")
for r in range(reps):
    for f in files:
        print(f"r{r}/{f[:-5]},{os.path.abspath(os.path.join(d, f))}")
PY
}

# The manifest of N copies of .device/long.wav (make_long_wav: 620 s of long-form speech), as
# N inputs: every window but a file's last is a full 30 s, where the clips above fill a fifth
# of theirs (issue 4's >= 10,000x is a figure per second of audio, and the floor it names is
# per full window).
throughput_long_manifest() { # N
    python3 - "$PWD/.device/long.wav" "$1" >.device/throughput.csv <<'PY'
import sys
print("id,path")
for i in range(int(sys.argv[2])):
    print(f"long{i},{sys.argv[1]}")
PY
}

stage_throughput() {
    local rc=0 m bs
    local workers=${THROUGHPUT_WORKERS:---gpus 0} out=.device/throughput
    throughput_manifest "${THROUGHPUT_REPEAT:-24}" "${THROUGHPUT_CLIPS:-186}" || return 1
    for m in tiny.en base; do
        for bs in 16 64; do
            throughput_run "$m" "$bs" "" || rc=1
        done
    done
    # lanes that free up start their window at once (no wait for a fuller encoder pass)
    WHISPERC_ENCODE_MIN_PASS=1 throughput_run base 64 ", no encoder wait" || rc=1
    # long files: 64 x 620 s = 11 h
    make_long_wav && throughput_long_manifest 64 || return 1
    for m in tiny.en base; do
        throughput_run "$m" 64 ", 64 long files" || rc=1
    done
    rm -rf "$out"
    return "$rc"
}

# A random-weight model of SIZE at /tmp/ggml-SIZE-random.bin (vocabulary: a ggml file of the
# right kind, or the vocabulary-only header stage.sh packs when base itself is not carried).
random_model() {
    local vocab=()
    case $1 in
    *.en) ;;
    *) for f in "$S/models/ggml-base.bin" "$S/models/vocab-base.bin"; do
           [ -f "$f" ] && { vocab=(--vocab-from "$f"); break; }
       done ;;
    esac
    python3 tools/make-random-model "$1" "/tmp/ggml-$1-random.bin" --seed 1 "${vocab[@]}"
}

stage_tc() { # what matters most first: a 15-minute session may cut it short
    local rc=0 g size
    tc_random base.en || rc=1
    # the backend's ops with gemv_f16 (gemv_tc is the default, which the test stage covers):
    # norm_qkv = three norm_linears and a scatter, prompts as step rows = prefills, graphs =
    # plain launches, bit for bit
    WHISPERC_CUDA_GEMV=f16 meson test -C "$B" --no-rebuild --print-errorlogs gpu_backend \
        decoder_feed >"$OUT/tc-suite.log" 2>&1 || rc=1
    say "gpu_backend, decoder_feed with WHISPERC_CUDA_GEMV=f16: $(grep -E '^(Ok|Fail):' \
        "$B/meson-logs/testlog.txt" | tr -s ' ' | tr '\n' ' ')"
    compare_jfk tiny.en || rc=1
    batch_identity 150 || rc=1
    tc_random large-v3 || rc=1
    golden_on_cuda devset_tiny.en || rc=1
    return "$rc"
}

# A random-weight model of SIZE: a step (one lane) with gemv_tc (its rule, and 16 columns for
# every form), gemv_f16, and gemv_f16 without dependent launch; then 128 windows at 64 lanes
# with gemv_tc and gemv_f16
tc_random() {
    local rc=0 g pdl
    random_model "$1" || return 1
    for g in tc tc16 f16 f16-pdl0; do
        pdl=1
        [ "$g" = f16-pdl0 ] && pdl=0
        WHISPERC_CUDA_PDL=$pdl WHISPERC_CUDA_GEMV=${g%-pdl0} timeout 60 "$B/whisper-c" bench \
            --synthetic --device cuda -m "/tmp/ggml-$1-random.bin" --tokens 100 -bs 1 --runs 3 \
            --batch-size 1 >"$OUT/bench.tmp" 2>&1 || rc=1
        say "synthetic $1 (random), gemv $g: $(synthetic_lines "$OUT/bench.tmp")"
    done
    for g in tc f16; do
        WHISPERC_CUDA_GEMV=$g timeout 240 "$B/whisper-c" bench --synthetic --device cuda \
            -m "/tmp/ggml-$1-random.bin" --tokens 100 -bs 1 --runs 1 --batch-size 64 \
            --throughput 128 >"$OUT/bench.tmp" 2>&1 || rc=1
        say "synthetic $1 (random) batched, gemv $g: $(sed -n '/^batched throughput/,$p' \
            "$OUT/bench.tmp" | grep -E '^  (encoder|prompts|decoder|total)' | tr -s ' ' | tr '\n' ';')"
    done
    rm -f "/tmp/ggml-$1-random.bin" "$OUT/bench.tmp"
    return "$rc"
}

stage_lt() { # what matters most first: a 15-minute session may cut it short
    local rc=0 g
    random_model base.en || return 1
    for g in cublas lt; do
        WHISPERC_CUDA_GEMM=$g timeout 60 "$B/whisper-c" bench --synthetic --device cuda \
            -m /tmp/ggml-base.en-random.bin --tokens 100 -bs 1 --runs 3 --batch-size 1 \
            >"$OUT/bench.tmp" 2>&1 || rc=1
        say "synthetic base.en (random), GEMMs $g: $(synthetic_lines "$OUT/bench.tmp")"
        WHISPERC_CUDA_GEMM=$g timeout 120 "$B/whisper-c" bench --synthetic --device cuda \
            -m /tmp/ggml-base.en-random.bin --tokens 100 -bs 1 --runs 1 --batch-size 64 \
            --throughput 128 >"$OUT/bench.tmp" 2>&1 || rc=1
        say "synthetic base.en (random) batched, GEMMs $g: $(sed -n '/^batched throughput/,$p' \
            "$OUT/bench.tmp" | grep -E '^  (encoder|prompts|decoder|total)' | tr -s ' ' | tr '\n' ';')"
    done
    export PATH=/usr/local/cuda/bin:$PATH
    # an encoder window: 15 launches a layer, 11 with lt; tc32: the attention on f32 K/V
    # (attn_tc_h8_d64, registers) against fp16 K/V (attn_tc_h8_d64_kvh_oh, cp.async)
    for g in cublas lt lt-tc32; do
        WHISPERC_CUDA_GEMM=${g%-tc32} WHISPERC_CUDA_ATTN=$([ "$g" = lt-tc32 ] && echo tc32) \
            timeout 120 ncu --print-summary per-kernel --launch-count 130 \
            "$B/whisper-c" bench --synthetic --device cuda -m /tmp/ggml-base.en-random.bin \
            --tokens 1 -bs 1 --runs 1 >"$OUT/ncu-lt-$g.txt" 2>&1 || rc=1
        say "ncu base.en encoder, GEMMs $g (kernel, grid, launches, mean, total):"
        ncu_table "$OUT/ncu-lt-$g.txt" >/dev/null
    done
    rm -f /tmp/ggml-base.en-random.bin "$OUT/bench.tmp"
    export WHISPERC_CUDA_GEMM=lt
    meson test -C "$B" --no-rebuild --print-errorlogs gpu_backend >"$OUT/lt-suite.log" 2>&1 || rc=1
    say "gpu_backend with WHISPERC_CUDA_GEMM=lt: $(grep -E '^(Ok|Fail):' \
        "$B/meson-logs/testlog.txt" | tr -s ' ' | tr '\n' ' ')"
    compare_jfk tiny.en || rc=1
    batch_identity 150 || rc=1
    golden_on_cuda devset_tiny.en || rc=1
    unset WHISPERC_CUDA_GEMM
    return "$rc"
}

stage_rows() { # what matters most first: a 15-minute session may cut it short
    local rc=0 size g
    for size in base.en large-v3; do
        random_model "$size" || return 1
        for g in tc kvh; do
            WHISPERC_CUDA_ROWS=$g timeout 240 "$B/whisper-c" bench \
                --synthetic --device cuda -m "/tmp/ggml-$size-random.bin" --tokens 100 -bs 1 \
                --runs 1 --batch-size 64 --throughput 128 >"$OUT/bench.tmp" 2>&1 || rc=1
            say "synthetic $size (random) batched, rows $g: $(sed -n '/^batched throughput/,$p' \
                "$OUT/bench.tmp" | grep -E '^  (encoder|prompts|decoder|total)' | tr -s ' ' | tr '\n' ';')"
            say "  one lane: $(grep -E '^  batch step' "$OUT/bench.tmp" | tr -s ' ')"
        done
        rm -f "/tmp/ggml-$size-random.bin" "$OUT/bench.tmp"
    done
    export WHISPERC_CUDA_ROWS=kvh
    batch_identity 150 || rc=1
    golden_on_cuda devset_tiny.en || rc=1
    unset WHISPERC_CUDA_ROWS
    return "$rc"
}

stage_chain() { # what matters most first: a 15-minute session may cut it short
    local rc=0 size c
    export WHISPERC_CUDA_ROWS=kvh # attn_rows_tc has no phase form
    meson test -C "$B" --no-rebuild --print-errorlogs gpu_chains >"$OUT/chain-suite.log" 2>&1 || rc=1
    say "gpu_chains (steps with chains against plain launches): $(grep -E \
        '^(Ok|Fail):' "$B/meson-logs/testlog.txt" | tr -s ' ' | tr '\n' ' ')"
    grep -E 'chains' "$OUT/chain-suite.log" | head -6 | while read -r l; do say "  $l"; done
    for size in base.en large-v3; do
        random_model "$size" || { rc=1; continue; }
        for c in block 1 0; do
            WHISPERC_CUDA_CHAIN=$c timeout 60 "$B/whisper-c" bench --synthetic --device cuda \
                -m "/tmp/ggml-$size-random.bin" --tokens 100 -bs 1 --runs 3 --batch-size 1 \
                >"$OUT/bench.tmp" 2>&1 || rc=1
            say "synthetic $size (random), chains $c: $(synthetic_lines "$OUT/bench.tmp")"
        done
        [ "$size" = base.en ] || rm -f "/tmp/ggml-$size-random.bin"
    done
    # block chains on fewer CTAs (a grid barrier's cost grows with the CTAs at it)
    for c in 16 33 66; do
        WHISPERC_CUDA_CHAIN=block WHISPERC_CUDA_CHAIN_CTAS=$c timeout 60 "$B/whisper-c" bench \
            --synthetic --device cuda -m /tmp/ggml-base.en-random.bin --tokens 100 -bs 1 \
            --runs 3 --batch-size 1 >"$OUT/bench.tmp" 2>&1 || rc=1
        say "synthetic base.en (random), block chains on $c CTAs: $(grep -E '^  batch step' \
            "$OUT/bench.tmp" | tr -s ' ')"
    done
    export WHISPERC_CUDA_CHAIN=block
    compare_jfk tiny.en || rc=1
    batch_identity 150 || rc=1
    golden_on_cuda devset_tiny.en || rc=1
    export PATH=/usr/local/cuda/bin:$PATH
    timeout 150 ncu --print-summary per-kernel --launch-count 300 \
        -k 'regex:^(gemv|attn_rows|attn_gather|logits|embed)' "$B/whisper-c" bench --synthetic \
        --device cuda -m /tmp/ggml-base.en-random.bin --tokens 30 -bs 1 --runs 1 \
        --batch-size 1 >"$OUT/ncu-chain.txt" 2>&1 || rc=1
    say "ncu base.en steps with block chains (kernel, grid, launches, mean, total):"
    ncu_table "$OUT/ncu-chain.txt" >/dev/null
    unset WHISPERC_CUDA_CHAIN WHISPERC_CUDA_ROWS
    rm -f /tmp/ggml-base.en-random.bin "$OUT/bench.tmp"
    return "$rc"
}

stage_goals() { # issue 4's figures on real base weights (stage.sh pack base; .whl carried)
    local rc=0 bs out=.device/throughput workers="--gpus 0"
    for bs in 1 5; do # greedy, then the CLI's default beams; 3 runs each, the best counts
        timeout 60 "$B/whisper-c" bench --device cuda -m "$S/models/ggml-base.bin" -l en \
            --runs 3 -bs "$bs" -bo "$bs" "$S/audio/jfk/jfk.wav" >"$OUT/bench.tmp" 2>&1 || rc=1
        say "bench base jfk cuda -bs $bs: $(grep -E '^  (encoder|decoder|total)' \
            "$OUT/bench.tmp" | tr -s ' ' | tr '\n' ';')"
    done
    make_wav16 || return 1
    batchbench_one base 1 64 || rc=1
    # the encoder's passes between the steps on one stream (before 2026-12-08) against beside
    WHISPERC_ENCODE_STREAM=0 batchbench_one base 1 64 " (passes between steps)" || rc=1
    throughput_manifest 24 186 || return 1
    throughput_run base 64 "" || rc=1
    rm -rf "$out" "$OUT/bench.tmp"
    load_wheels && compare_torch base dev 240 --batch-size 16 -l en .device/wav16 || rc=1
    return "$rc"
}

stage_quick() {
    local rc=0 out=.device/throughput workers="--gpus 0"
    compare_jfk tiny.en || rc=1
    golden_on_cuda devset_tiny.en || rc=1
    golden_on_cuda words_tiny.en || rc=1 # word alignment over a batch region's fp16 K/V
    batch_identity 150 || rc=1
    make_wav16 || return 1
    batchbench_one tiny.en 1 64 || rc=1
    WHISPERC_ENCODE_STREAM=0 batchbench_one tiny.en 1 64 " (passes between steps)" || rc=1
    WHISPERC_CROSS_KV=f32 batchbench_one tiny.en 1 64 " (cross K/V f32)" || rc=1
    # base's shape with random weights: a step and the encoder from CUDA events, then issue 4's
    # batched figure (128 windows, 64 lanes, 100 tokens each)
    if random_model base.en; then
        # with dependent launches (sm_90's default) and without
        for pdl in 1 0; do
            WHISPERC_CUDA_PDL=$pdl timeout 40 "$B/whisper-c" bench --synthetic --device cuda \
                -m /tmp/ggml-base.en-random.bin --tokens 100 -bs 1 --runs 3 >"$OUT/bench.tmp" \
                2>&1 || rc=1
            say "synthetic base.en (random), PDL $pdl: $(synthetic_lines "$OUT/bench.tmp")"
        done
        # prompts as step rows (the default), then each a prefill (before 580f5a5)
        for p in steps prefill; do
            WHISPERC_BATCH_PROMPT=$p timeout 90 "$B/whisper-c" bench --synthetic --device cuda \
                -m /tmp/ggml-base.en-random.bin --tokens 100 -bs 1 --runs 1 --batch-size 64 \
                --throughput 128 >"$OUT/bench.tmp" 2>&1 || rc=1
            say "synthetic base.en (random) batched, prompts as $p: $(sed -n '/^batched throughput/,$p' \
                "$OUT/bench.tmp" | grep -E '^  (encoder|prompts|decoder|total)' | tr -s ' ' | tr '\n' ';')"
        done
        # long-form windows (200 tokens of previous text: prefills, one lane at a time)
        timeout 60 "$B/whisper-c" bench --synthetic --device cuda -m /tmp/ggml-base.en-random.bin \
            --tokens 100 -bs 1 --runs 1 --batch-size 64 --throughput 64 --context-tokens 200 \
            >"$OUT/bench.tmp" 2>&1 || rc=1
        say "synthetic base.en (random) batched, 200 tokens of context: $(sed -n \
            '/^batched throughput/,$p' "$OUT/bench.tmp" | grep -E '^  (prompts|decoder|total)' |
            tr -s ' ' | tr '\n' ';')"
        rm -f /tmp/ggml-base.en-random.bin "$OUT/bench.tmp"
    else
        rc=1
    fi
    throughput_manifest 24 186 || return 1
    throughput_run tiny.en 64 "" || rc=1
    make_long_wav && throughput_long_manifest 64 || return 1
    throughput_run tiny.en 64 ", 64 long files" || rc=1
    rm -rf "$out"
    return "$rc"
}

[ $# -gt 0 ] || { sed -n '2,/^# shellcheck/{/^# shellcheck/d;p}' "$0"; exit 2; }
load_env
status=0
for stage in "$@"; do
    if ! declare -F "stage_$stage" >/dev/null; then
        echo "gpu-check.sh: unknown stage $stage" >&2
        exit 2
    fi
    t0=$(date +%s)
    "stage_$stage" >"$OUT/gpu-check-$stage.log" 2>&1
    rc=$?
    [ "$stage" = build ] && load_env # the env file is new after the build
    say "== $stage: $([ $rc -eq 0 ] && echo ok || echo "FAILED ($rc)") in $(($(date +%s) - t0)) s"
    [ $rc -eq 0 ] || status=1
done
exit $status
