#!/usr/bin/env python3
"""Whole dev set and long form against openai-whisper's golden outputs (../shared/golden).

  check_transcripts.py devset   RUNNER SHARED MODEL   every line of golden/MODEL/dev.jsonl
  check_transcripts.py longform RUNNER SHARED MODEL   the ljspeech-dev concatenation
  check_transcripts.py beam5    RUNNER SHARED MODEL   golden/MODEL/dev.beam5.jsonl (beam 5)
  check_transcripts.py multilingual RUNNER SHARED base golden/base/multilingual.jsonl

RUNNER is tests/run_transcribe. Criteria (issue: CPU engine, "What it must show"):
  devset:   tokens identical on every 16 kHz utterance (jfk.wav, LibriSpeech, LibriVox) and on
            >= 90% of the 22.05 kHz LJSpeech clips; WER (simple normaliser) at most 0.2 points
            above the reference's; the same language as the reference on every clip.
  longform: WER at most 0.5 points above the reference's, segment count within 5% of the
            reference's, no repeated-phrase loops.
  beam5:    (issue: decoding beyond greedy) beam_size = best_of = 5: tokens identical on >= 95%
            of the utterances, WER (simple) at most 0.2 points above the reference's.
  multilingual: the detected language and its top-5 list equal the reference's (probabilities
            within 0.02); transcripts and translations equal where the reference decoded at
            temperature 0.
  words:    golden/MODEL/words.jsonl (word_timestamps=True): the same words, start and end
            within 0.05 s of the reference's for >= 95% of the words.
"""
import json
import os
import re
import subprocess
import sys


def simple_normalise(text):
    """The "simple" normaliser of ../shared/README.md."""
    text = text.lower().replace("\u2019", "'")
    text = re.sub(r"[^a-z0-9' ]", " ", text)
    words = (w.strip("'") for w in text.split())
    return [w for w in words if w]


def word_edits(ref, hyp):
    """Levenshtein distance between word lists (substitutions, insertions, deletions)."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def wer(pairs):
    """WER in percent over (reference, hypothesis) pairs: total edits / total reference words,
    skipping utterances whose normalised reference is empty."""
    edits = words = 0
    for ref, hyp in pairs:
        r = simple_normalise(ref)
        if not r:
            continue
        edits += word_edits(r, simple_normalise(hyp))
        words += len(r)
    return 100.0 * edits / max(words, 1)


def run(runner, model, args):
    out = subprocess.run([runner, model, "-t", "2"] + args, check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def tokens_of(result):
    return [t for s in result["segments"] for t in s["tokens"]]


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def check_devset(runner, shared, model):
    golden = [json.loads(l) for l in open(os.path.join(shared, "golden", model, "dev.jsonl"))]
    ref_wer = json.load(open(os.path.join(shared, "golden", model, "dev.wer.json")))
    paths = [os.path.join(shared, g["audio"]) for g in golden]
    ours = run(runner, os.path.join(shared, "models", "ggml-%s.bin" % model), paths)
    assert len(ours) == len(golden), "runner gave %d results for %d files" % (len(ours), len(golden))
    groups = {"16k": [0, 0], "ljspeech": [0, 0]}
    lang_bad, failed = [], False
    for g, o in zip(golden, ours):
        group = "ljspeech" if "ljspeech" in g["audio"] else "16k" if g["audio"] != "audio/jfk/jfk.flac" else None
        same = tokens_of(o) == tokens_of(g)
        if group:
            groups[group][0] += same
            groups[group][1] += 1
        if not same:
            i = first_difference(tokens_of(o), tokens_of(g))
            print("differs: %s at token %d\n  ours: %s\n  ref:  %s" % (g["audio"], i, o["text"], g["text"]))
        if o["language"] != g["language"]:
            lang_bad.append((g["audio"], o["language"], g["language"]))
    # the reference's "all" subset (n=196) leaves out jfk.flac, a copy of jfk.wav
    ours_wer = wer([(g["reference"], o["text"]) for g, o in zip(golden, ours)
                    if g["audio"] != "audio/jfk/jfk.flac"])
    their_wer = ref_wer["wer"]["all"]["simple"]
    print("%s dev set: %d utterances" % (model, len(golden)))
    for name, (same, n) in groups.items():
        print("  tokens identical, %-9s %d / %d (%.1f%%)" % (name + ":", same, n, 100.0 * same / max(n, 1)))
    print("  WER (simple): whisper-c %.3f, reference %.3f (limit %.3f)" % (ours_wer, their_wer, their_wer + 0.2))
    print("  language: %d mismatches %s" % (len(lang_bad), lang_bad[:5]))
    print("  seconds: %.1f" % sum(o["seconds"] for o in ours))
    if groups["16k"][0] != groups["16k"][1]:
        failed = True, print("FAIL: a 16 kHz utterance differs from the reference")
    if groups["ljspeech"][0] < 0.9 * groups["ljspeech"][1]:
        failed = True, print("FAIL: fewer than 90% of LJSpeech clips identical")
    if ours_wer > their_wer + 0.2:
        failed = True, print("FAIL: WER more than 0.2 points above the reference")
    if lang_bad:
        failed = True, print("FAIL: language differs")
    return 1 if failed else 0


def check_beam5(runner, shared, model):
    golden = [json.loads(l) for l in open(os.path.join(shared, "golden", model, "dev.beam5.jsonl"))]
    ref_wer = json.load(open(os.path.join(shared, "golden", model, "dev.beam5.wer.json")))
    paths = [os.path.join(shared, g["audio"]) for g in golden]
    ours = run(runner, os.path.join(shared, "models", "ggml-%s.bin" % model), ["--beam", "5"] + paths)
    assert len(ours) == len(golden), "runner gave %d results for %d files" % (len(ours), len(golden))
    same = 0
    for g, o in zip(golden, ours):
        if tokens_of(o) == tokens_of(g):
            same += 1
        else:
            i = first_difference(tokens_of(o), tokens_of(g))
            print("differs: %s at token %d\n  ours: %s\n  ref:  %s" % (g["audio"], i, o["text"], g["text"]))
    ours_wer = wer([(g["reference"], o["text"]) for g, o in zip(golden, ours)])
    their_wer = ref_wer["wer"]["simple"]
    print("%s beam 5: %d utterances" % (model, len(golden)))
    print("  tokens identical: %d / %d (%.1f%%)" % (same, len(golden), 100.0 * same / len(golden)))
    print("  WER (simple): whisper-c %.3f, reference %.3f (limit %.3f)" % (ours_wer, their_wer, their_wer + 0.2))
    print("  seconds: %.1f" % sum(o["seconds"] for o in ours))
    failed = False
    if same < 0.95 * len(golden):
        failed = True, print("FAIL: fewer than 95% of utterances identical")
    if ours_wer > their_wer + 0.2:
        failed = True, print("FAIL: WER more than 0.2 points above the reference")
    return 1 if failed else 0


def check_multilingual(runner, shared, model):
    path = os.path.join(shared, "golden", model, "multilingual.jsonl")
    if not os.path.exists(path):
        print("SKIP: no %s (multilingual models only)" % path)
        return 77
    golden = [json.loads(l) for l in open(path)]
    paths = [os.path.join(shared, g["audio"]) for g in golden]
    mpath = os.path.join(shared, "models", "ggml-%s.bin" % model)
    detected = run(runner, mpath, ["--detect"] + paths)
    runs = {"transcribe": run(runner, mpath, paths), "translate": run(runner, mpath, ["--translate"] + paths)}
    failed = False
    for i, g in enumerate(golden):
        ours_top = detected[i]["detect_top5"]
        codes_same = [c for c, _ in ours_top] == [c for c, _ in g["detect_top5"]]
        worst = max(abs(p - q) for (_, p), (_, q) in zip(ours_top, g["detect_top5"]))
        ok = codes_same and worst <= 0.02
        print("%s: detect %s (max |dp| %.4f) %s" % (g["audio"], ours_top[0][0], worst, "ok" if ok else "FAIL"))
        failed |= not ok
        for task, results in runs.items():
            ref, ours = g[task], results[i]
            greedy = all(s["temperature"] == 0.0 for s in ref["segments"])
            same = tokens_of(ours) == tokens_of(ref) and ours["language"] == ref["language"]
            verdict = "identical" if same else ("FAIL" if greedy else "differs (reference sampled at T > 0: not compared)")
            print("  %-10s %s\n    ours: %s\n    ref:  %s" % (task, verdict, ours["text"], ref["text"]))
            failed |= greedy and not same
    return 1 if failed else 0


def check_words(runner, shared, model):
    golden = [json.loads(l) for l in open(os.path.join(shared, "golden", model, "words.jsonl"))]
    paths = [os.path.join(shared, g["audio"]) for g in golden]
    ours = run(runner, os.path.join(shared, "models", "ggml-%s.bin" % model), ["--words"] + paths)
    assert len(ours) == len(golden), "runner gave %d results for %d files" % (len(ours), len(golden))
    n = within = exact = 0
    failed = False
    for g, o in zip(golden, ours):
        gw = [w for s in g["segments"] for w in s["words"]]
        ow = [w for s in o["segments"] for w in s["words"]]
        if [w["word"] for w in gw] != [w["word"] for w in ow]:
            failed = True
            print("FAIL: %s: words differ\n  ours: %s\n  ref:  %s" % (
                g["audio"], [w["word"] for w in ow], [w["word"] for w in gw]))
            continue
        for a, b in zip(ow, gw):
            n += 1
            da, db = abs(a["start"] - b["start"]), abs(a["end"] - b["end"])
            within += da <= 0.05 + 1e-9 and db <= 0.05 + 1e-9
            exact += da < 0.0051 and db < 0.0051
            if da > 0.05 + 1e-9 or db > 0.05 + 1e-9:
                print("  %s: %r %.2f-%.2f, reference %.2f-%.2f" % (
                    os.path.basename(g["audio"]), a["word"], a["start"], a["end"], b["start"], b["end"]))
        worst_p = max((abs(a["probability"] - b["probability"]) for a, b in zip(ow, gw)), default=0)
        print("%s: %d words, max |dp| %.4f" % (os.path.basename(g["audio"]), len(gw), worst_p))
    print("%s word timestamps: %d words; within 0.05 s: %d (%.1f%%); identical: %d (%.1f%%)" % (
        model, n, within, 100.0 * within / max(n, 1), exact, 100.0 * exact / max(n, 1)))
    if within < 0.95 * n:
        failed = True, print("FAIL: fewer than 95% of the words within 0.05 s")
    return 1 if failed else 0


def repeated_loops(texts, n=4, times=3):
    """Segments repeating the same text `times` times in a row, or an n-word phrase repeated
    `times` times back to back: the signature of a decoding loop."""
    loops = []
    for i in range(len(texts) - times + 1):
        if texts[i].strip() and all(texts[i + k] == texts[i] for k in range(times)):
            loops.append(texts[i])
    words = simple_normalise(" ".join(texts))
    for i in range(len(words) - n * times + 1):
        phrase = words[i:i + n]
        if all(words[i + k * n:i + (k + 1) * n] == phrase for k in range(times)):
            loops.append(" ".join(phrase))
    return loops


def first_fallback(segments):
    """Index of the first segment decoded at temperature > 0 (len if none)."""
    return next((i for i, s in enumerate(segments) if s["temperature"] > 0), len(segments))


def same_segment(a, b):
    return abs(a["start"] - b["start"]) < 0.011 and abs(a["end"] - b["end"]) < 0.011


def check_longform(runner, shared, model):
    """Long form, twice.

    1. transcribe() defaults against golden/longform.json: WER, no loops, and the segments
       identical (times) up to the reference's first temperature fallback. After a fallback the
       reference's segmentation depends on torch's random draw (openai-whisper gives 207
       segments with the golden draw, 109 with torch.manual_seed(1), on tiny.en), so the
       total segment count there is reported, not checked.
    2. temperature 0 only against tests/data/longform-greedy-MODEL.json (openai-whisper,
       deterministic): segment count within 5%, WER, no more loops than the reference.
    """
    golden = json.load(open(os.path.join(shared, "golden", model, "longform.json")))
    here = os.path.dirname(os.path.abspath(__file__))
    greedy = json.load(open(os.path.join(here, "data", "longform-greedy-%s.json" % model)))
    wav_dir = os.path.join(shared, "audio", "ljspeech-dev", "wavs")
    names = sorted(f for f in os.listdir(wav_dir) if f.endswith(".flac"))
    truth = {}
    for line in open(os.path.join(shared, "audio", "ljspeech-dev", "metadata.csv"), encoding="utf-8"):
        parts = line.rstrip("\n").split("|")
        truth[parts[0]] = parts[2]
    reference = " ".join(truth[n[:-5]] for n in names)
    files = [os.path.join(wav_dir, n) for n in names]
    model_path = os.path.join(shared, "models", "ggml-%s.bin" % model)
    failed = False
    print("%s long form (%d clips, %.1f s):" % (model, len(names), golden["duration"]))

    ours = run(runner, model_path, ["--concat"] + files)[0]
    segs, ref_segs = ours["segments"], golden["segments"]
    ours_wer, their_wer = wer([(reference, ours["text"])]), golden["wer"]["simple"]
    loops = repeated_loops([s["text"] for s in segs])
    n_det = first_fallback(ref_segs)
    n_same = next((i for i, (a, b) in enumerate(zip(segs, ref_segs)) if not same_segment(a, b)),
                  min(len(segs), len(ref_segs)))
    print("  defaults (with fallback), vs golden/longform.json:")
    print("    WER (simple): whisper-c %.3f, reference %.3f (limit %.3f)" % (ours_wer, their_wer, their_wer + 0.5))
    print("    segments identical before the reference's first fallback: %d of %d" % (min(n_same, n_det), n_det))
    print("    segments in all: whisper-c %d, reference %d (after a fallback this follows the random draw)"
          % (len(segs), len(ref_segs)))
    print("    repeated-phrase loops: %d %s" % (len(loops), loops[:3]))
    print("    seconds: %.1f" % ours["seconds"])
    failed |= ours_wer > their_wer + 0.5 or n_same < n_det or bool(loops)

    ours = run(runner, model_path, ["--no-fallback", "--concat"] + files)[0]
    segs, ref_segs = ours["segments"], greedy["segments"]
    ours_wer = wer([(reference, ours["text"])])
    their_wer = wer([(reference, "".join(s["text"] for s in ref_segs))])
    loops = repeated_loops([s["text"] for s in segs])
    ref_loops = repeated_loops([s["text"] for s in ref_segs])
    n_same = next((i for i, (a, b) in enumerate(zip(segs, ref_segs)) if not same_segment(a, b)),
                  min(len(segs), len(ref_segs)))
    dev = 100.0 * (len(segs) - len(ref_segs)) / len(ref_segs)
    print("  temperature 0 only, vs tests/data/longform-greedy-%s.json:" % model)
    print("    WER (simple): whisper-c %.3f, reference %.3f (limit %.3f)" % (ours_wer, their_wer, their_wer + 0.5))
    print("    segments: whisper-c %d, reference %d (%+.1f%%, limit 5%%); first %d identical"
          % (len(segs), len(ref_segs), dev, n_same))
    # without fallback nothing breaks a repetition loop: tiny.en loops exactly as the reference
    print("    repeated-phrase loops: whisper-c %d, reference %d" % (len(loops), len(ref_loops)))
    print("    seconds: %.1f" % ours["seconds"])
    failed |= ours_wer > their_wer + 0.5 or abs(dev) > 5.0 or len(loops) > len(ref_loops)
    if failed:
        print("FAIL")
    return 1 if failed else 0


def main():
    checks = {"devset": check_devset, "longform": check_longform, "beam5": check_beam5,
              "multilingual": check_multilingual, "words": check_words}
    if len(sys.argv) != 5 or sys.argv[1] not in checks:
        print(__doc__)
        return 2
    mode, runner, shared, model = sys.argv[1:]
    shared = os.environ.get("WHISPERC_SHARED") or shared
    if not os.path.exists(os.path.join(shared, "models", "ggml-%s.bin" % model)):
        print("SKIP: %s not found (set WHISPERC_SHARED)" % shared)
        return 77
    return checks[mode](runner, shared, model)


if __name__ == "__main__":
    sys.exit(main())
