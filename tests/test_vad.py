#!/usr/bin/env python3
"""test_vad.py — params.vad end to end on the VAD test file (tools/vad_testfile.py: the 16 kHz
dev clips separated by 20 s of digital silence and of -50 dBFS noise), tiny.en, word timestamps.

usage: test_vad.py RUN_TRANSCRIBE SHARED_DIR VAD_TESTFILE_PY [SILERO_VAD_FILE]

With a Silero VAD file (tests/test_silero_vad.py passes one), the VAD runs are Silero's.

Checks (issue 6, VAD): the same words as without VAD (WER against the clips' references at
most 0.5 points above the run without VAD), every word and segment with VAD inside a clip's
true position (start - 0.1 s .. end + 0.1 s, original time base), every clip transcribed,
and less audio decoded. Exits 77 when the model or the clips are missing.
"""
import json
import os
import subprocess
import sys
import tempfile

import testlib
from check_transcripts import simple_normalise, word_edits  # this directory, as testlib
from testlib import check

TOL = 0.1  # seconds, the tolerance on timestamps


def transcribe(runner, model, wav, vad, vad_model=None):
    args = [runner, model, "-t", "2", "--words"] + (["--vad"] if vad else [])
    args += ["--vad-model", vad_model] if vad_model else []
    args += [wav]
    r = subprocess.run(args, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({r.returncode}):\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def wer(ref_words, text):
    return 100.0 * word_edits(ref_words, simple_normalise(text)) / max(len(ref_words), 1)


def main():
    runner, shared, tool = sys.argv[1], testlib.shared_dir(sys.argv[2]), sys.argv[3]
    vad_model = sys.argv[4] if len(sys.argv) > 4 else None
    model = os.path.join(shared, "models", "ggml-tiny.en.bin")
    need = [model, os.path.join(shared, "audio", "librivox"), os.path.join(shared, "audio", "jfk")]
    testlib.skip_unless_exist(need)
    with tempfile.TemporaryDirectory(prefix="wc_test_vad_") as tmp:
        wav, meta = os.path.join(tmp, "vad.wav"), os.path.join(tmp, "vad.json")
        subprocess.run([sys.executable, tool, shared, wav, meta], check=True)
        with open(meta) as f:
            clips = json.load(f)["clips"]
        plain = transcribe(runner, model, wav, False)
        vad = transcribe(runner, model, wav, True, vad_model)

    ref = simple_normalise(" ".join(c["reference"] for c in clips))
    w_plain, w_vad = wer(ref, plain["text"]), wer(ref, vad["text"])
    print(f"WER without VAD {w_plain:.2f}%, with VAD {w_vad:.2f}%; "
          f"{plain['seconds']:.1f} s without, {vad['seconds']:.1f} s with")
    check(w_vad <= w_plain + 0.5, f"WER with VAD ({w_vad:.2f}) <= without ({w_plain:.2f}) + 0.5")

    def clip_of(t0, t1):
        for i, c in enumerate(clips):
            if c["start"] - TOL <= t0 and t1 <= c["end"] + TOL:
                return i
        return -1

    words = [w for s in vad["segments"] for w in s["words"]]
    outside = [w for w in words if clip_of(w["start"], w["end"]) < 0]
    check(words and not outside, f"all {len(words)} words inside a clip +- {TOL} s "
          f"(outside: {[(w['word'], w['start'], w['end']) for w in outside[:5]]})")
    segs = [s for s in vad["segments"] if s["text"].strip()]
    bad = [(s["start"], s["end"]) for s in segs if clip_of(s["start"], s["end"]) < 0]
    check(not bad, f"every segment inside one clip +- {TOL} s (outside: {bad[:5]})")
    hit = {clip_of(w["start"], w["end"]) for w in words}
    check(hit >= set(range(len(clips))), f"words in every clip ({sorted(hit)})")
    return testlib.exit_status()


if __name__ == "__main__":
    sys.exit(main())
