#!/usr/bin/env python3
"""test_batch.py — `whisper-c batch`: resumable batch transcription.

usage: test_batch.py WHISPER_C SHARED_DIR [B_SANITIZE]

Over N ljspeech-dev clips (symbolic links; N = 60, or 20 in a sanitized build, where decoding is
~3x slower, or $WHISPERC_BATCH_TEST_FILES) with --jobs 2 -t 1:
  - a run killed with SIGKILL mid-way leaves only complete outputs and whole results lines; a
    second run stopped with SIGTERM exits 143; the third completes: every input has exactly one
    complete result, the texts are openai-whisper's, no temporary file is left, results.jsonl
    has one line per input; a fourth run skips everything
  - a second run on the same directory while one runs is refused (the lock)
  - two shards of one manifest cover it exactly once, and --merge joins them
  - failures are recorded with their error and skipped until --retry-failed (whose results
    file stays as it was when its model does not load or its decoding states do not fit)
  - manifests: txt, csv (quoted fields, id column), jsonl; duplicate ids and bad rows rejected;
    a quoted glob takes audio files only, unless its pattern names an extension
  - --batch-size 4 (whisperc_full_batch per worker): every output byte for byte the default
    run's, in every format, after a SIGKILL mid-way and a resume; a group whose batched call
    fails gives each item the error it has alone; an output that cannot be placed fails its
    item only (a group's outputs are synced together)
  - a full disk stops the run instead of failing the items after it (where unshare -rm works)
Exits 77 (skip) when the shared model or audio is missing.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import testlib
from testlib import check


exe, shared = sys.argv[1], testlib.shared_dir(sys.argv[2])
model = os.path.join(shared, "models", "ggml-tiny.en.bin")
wavs = sorted(glob.glob(os.path.join(shared, "audio", "ljspeech-dev", "wavs", "*.flac")))
golden = os.path.join(shared, "golden", "tiny.en", "dev.jsonl")
sanitized = len(sys.argv) > 3 and sys.argv[3] not in ("", "none")
n_files = int(os.environ.get("WHISPERC_BATCH_TEST_FILES", "20" if sanitized else "60"))
common = ["-m", model, "-j", "2", "-t", "1", "-bs", "1"]  # greedy: dev.jsonl's texts


def batch(args, **kw):
    return subprocess.run([exe, "batch", *args], capture_output=True, text=True, timeout=900, **kw)


def start(args):
    return subprocess.Popen([exe, "batch", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def no_sanitizer_report(r, what):
    check("Sanitizer" not in r.stderr and "runtime error" not in r.stderr,
          f"{what}: no sanitizer report")


def read_lines(path):
    """Complete lines of a results file (a partial last one is left out)."""
    if not os.path.exists(path):
        return []
    data = open(path, "rb").read().decode()
    return [json.loads(l) for l in data.split("\n")[:-1] if l]


def wait_lines(path, n, proc, limit=600):
    t0 = time.time()
    while time.time() - t0 < limit and proc.poll() is None:
        if len(read_lines(path)) >= n:
            return True
        time.sleep(0.05)
    return False


def stray_files(out, ids, results_names=("results.jsonl",)):
    """Files under out that are neither outputs of ids nor results files."""
    want = {f"{i}.{e}" for i in ids for e in ("txt", "json")} | set(results_names)
    found = set()
    for root, dirs, files in os.walk(out):
        for f in files:
            found.add(os.path.relpath(os.path.join(root, f), out))
    return sorted(found - want), sorted(want - found)


def outputs_complete(out):
    """Every output present is whole: each .json parses and matches its .txt."""
    bad = []
    for j in glob.glob(os.path.join(out, "**", "*.json"), recursive=True):
        try:
            d = json.load(open(j))
            txt = open(j[:-5] + ".txt").read() if os.path.exists(j[:-5] + ".txt") else None
            if "text" not in d or (txt is not None and " ".join(txt.split()) != " ".join(d["text"].split())):
                bad.append(j)
        except ValueError:
            bad.append(j)
    return bad


def verify_complete(out, ids, what, results="results.jsonl"):
    lines = read_lines(os.path.join(out, results))
    got = [l["id"] for l in lines]
    check(sorted(got) == sorted(ids), f"{what}: {results} has exactly one line per input "
          f"({len(got)} lines, {len(set(got))} ids, {len(ids)} inputs)")
    check(all(l["status"] == "ok" and l["error"] is None and l["duration"] > 0 and
              l["language"] == "en" and l["seconds"] > 0 and l["rtf"] > 0 for l in lines),
          f"{what}: every line ok with duration, language, seconds, rtf")
    stray, missing = stray_files(out, ids, (results,))
    check(not stray and not missing, f"{what}: one txt and one json per input, no temporary "
          f"file (stray {stray[:5]}, missing {missing[:5]})")
    bad = outputs_complete(out)
    check(not bad, f"{what}: every output complete ({bad[:3]})")


def golden_texts():
    texts = {}
    if os.path.exists(golden):
        for line in open(golden):
            d = json.loads(line)
            texts[os.path.basename(d["audio"]).rsplit(".", 1)[0]] = " ".join(d["text"].split())
    return texts


def test_kill_resume(tmp, inputs, ids):
    """SIGKILL, then SIGTERM, then a run to the end; a concurrent run is refused meanwhile."""
    out = os.path.join(tmp, "out")
    res = os.path.join(out, "results.jsonl")
    p = start([*common, "-o", out, inputs])
    reached = wait_lines(res, max(3, len(ids) // 6), p)
    r2 = batch([*common, "-o", out, inputs])
    check(r2.returncode == 1 and "another whisper-c batch run" in r2.stderr,
          f"a second run on the same directory is refused ({r2.returncode}: {r2.stderr.strip()[-150:]})")
    p.kill()
    p.wait()
    n_killed = len(read_lines(res))
    check(reached and 0 < n_killed < len(ids), f"SIGKILL after {n_killed} of {len(ids)} items")
    bad = outputs_complete(out)
    check(not bad, f"after SIGKILL: every output present is complete ({bad[:3]})")
    stray = [f for f in stray_files(out, ids)[0] if not f.startswith(".batch/")]
    check(not stray, f"after SIGKILL: partial files only in .batch/ ({stray[:5]})")

    p = start([*common, "-o", out, inputs])
    wait_lines(res, n_killed + 2, p)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=600)
    n_term = len(read_lines(res))
    check(p.returncode == 143 and "resume" in err,
          f"SIGTERM: exit 143 and says how to resume ({p.returncode}: {err.strip()[-200:]})")
    check(n_killed < n_term <= len(ids), f"SIGTERM after {n_term} items")
    check(not os.path.exists(os.path.join(out, ".batch")), "SIGTERM: no staging left")

    t0 = time.time()
    r = batch([*common, "-o", out, inputs])
    check(r.returncode == 0, f"resumed run: exit 0 ({r.stderr.strip()[-300:]})")
    check(f"{n_term} done before" in r.stderr and f"{len(ids) - n_term} to run" in r.stderr,
          f"resumed run: skips the {n_term} finished items")
    no_sanitizer_report(r, "resumed run")
    print(f"        resumed run of {len(ids) - n_term} items: {time.time() - t0:.1f} s")
    verify_complete(out, ids, "after kill + resume")

    texts, gold = {}, golden_texts()
    for i in ids:
        texts[i] = " ".join(json.load(open(os.path.join(out, i + ".json")))["text"].split())
    same = sum(texts[i] == gold.get(i) for i in ids)
    # LJSpeech is resampled from 22050 Hz (soxr, not ffmpeg): a few near-ties decode otherwise,
    # as with `transcribe`; check_transcripts.py holds the dev set to the same 90%
    check(same >= 0.9 * len(ids), f"texts are openai-whisper's: {same}/{len(ids)} (>= 90%)")

    t0 = time.time()
    r = batch([*common, "-o", out, inputs])
    check(r.returncode == 0 and "0 to run" in r.stderr and time.time() - t0 < 10,
          f"rerun: skips everything ({time.time() - t0:.2f} s)")
    verify_complete(out, ids, "after rerun")


def test_shards(tmp, paths, ids):
    manifest = os.path.join(tmp, "list.jsonl")
    with open(manifest, "w") as f:
        for p, i in zip(paths, ids):
            f.write(json.dumps({"path": p, "id": "utt/" + i}) + "\n")
    out = os.path.join(tmp, "sharded")
    got = []
    for k in (0, 1):
        r = batch([*common, "--shard", f"{k}/2", "-o", out, "--manifest", manifest])
        check(r.returncode == 0, f"shard {k}/2: exit 0 ({r.stderr.strip()[-300:]})")
        lines = read_lines(os.path.join(out, f"results.shard-{k}-of-2.jsonl"))
        got.append({l["id"] for l in lines})
        check(len(lines) == len(got[-1]) > 0, f"shard {k}/2: {len(lines)} items, one line each")
    want = {"utt/" + i for i in ids}
    check(not (got[0] & got[1]) and got[0] | got[1] == want,
          f"two shards cover the manifest exactly once ({len(got[0])} + {len(got[1])} = {len(want)})")
    r = batch(["--merge", out, "--manifest", manifest])
    check(r.returncode == 0 and "0 of" in r.stderr,
          f"--merge: exit 0, nothing missing ({r.stderr.strip()[-200:]})")
    merged = [l["id"] for l in read_lines(os.path.join(out, "results.jsonl"))]
    check(merged == sorted(want), f"--merge: results.jsonl has every id once, sorted ({len(merged)})")
    check(all(os.path.exists(os.path.join(out, i + ".txt")) for i in want),
          "sharded outputs in subdirectories named by the ids")
    # four shards of two items started together, again and again (after the first round each
    # skips everything): none trips over another's removal of .batch/ or of its lock file
    two = os.path.join(tmp, "two.jsonl")
    with open(two, "w") as f:
        f.write("".join(json.dumps({"path": p, "id": i}) + "\n" for p, i in zip(paths, ids[:2])))
    bad = []
    for _ in range(25):
        procs = [start([*common, "-j", "1", "--shard", f"{k}/4", "-o", out + "4", "--manifest",
                        two, "-q"]) for k in range(4)]
        for p in procs:
            _, err = p.communicate(timeout=300)
            if p.returncode != 0:
                bad.append((p.returncode, err.strip()[-200:]))
    check(not bad, f"four shards started together 25 times: every run exits 0 ({bad[:2]})")
    # a failed line of an id that is not an input: the inputs are all ok (exit 0); without the
    # inputs, a failed line is a failure
    with open(os.path.join(out, "results.shard-0-of-2.jsonl"), "a") as f:
        f.write(json.dumps({"id": "other/x", "status": "failed", "error": "elsewhere"}) + "\n")
    r = batch(["--merge", out, "--manifest", manifest])
    r2 = batch(["--merge", out])
    check(r.returncode == 0 and r2.returncode == 1 and "1 failed" in r2.stderr,
          f"--merge: another id's failed line counts without the inputs only ({r.returncode}, "
          f"{r2.returncode})")
    os.unlink(os.path.join(out, "results.shard-1-of-2.jsonl"))
    r = batch(["--merge", out, "--manifest", manifest])
    check(r.returncode == 1 and "shard 1/2 has no results file" in r.stderr and
          "no result for" in r.stderr, f"--merge names a missing shard and its ids ({r.returncode})")
    # --shard 0/1 (a job array of one task) writes its shard file, which --merge joins
    r = batch([*common, "--shard", "0/1", "-o", out + "1", "--manifest", two, "-q"])
    r2 = batch(["--merge", out + "1", "--manifest", two])
    check(r.returncode == 0 and r2.returncode == 0 and
          os.path.exists(os.path.join(out + "1", "results.shard-0-of-1.jsonl")) and
          len(read_lines(os.path.join(out + "1", "results.jsonl"))) == 2,
          f"--shard 0/1: its shard file, merged ({r.returncode}, {r2.returncode}, "
          f"{r2.stderr.strip()[-200:]})")


def test_failures(tmp, paths):
    d = os.path.join(tmp, "fail")
    os.makedirs(d)
    bad = os.path.join(d, "corrupt.wav")
    with open(bad, "w") as f:
        f.write("not audio at all\n" * 50)
    manifest = os.path.join(d, "list.txt")
    with open(manifest, "w") as f:
        f.write(f"# two good files and a bad one\n{paths[0]}\n\n{bad}\n{paths[1]}\n")
    out = os.path.join(d, "out")
    r = batch([*common, "-o", out, "--manifest", manifest])
    lines = {l["id"]: l for l in read_lines(os.path.join(out, "results.jsonl"))}
    fid = bad[1:].rsplit(".", 1)[0]  # a manifest path without an id: the path, made relative
    check(r.returncode == 1 and "FAILED" in r.stderr and "corrupt.wav" in r.stderr,
          f"a corrupt file: exit 1, named on stderr ({r.returncode})")
    check(len(lines) == 3 and lines.get(fid, {}).get("status") == "failed" and
          "corrupt.wav" in (lines.get(fid, {}).get("error") or ""),
          f"a corrupt file: recorded as failed with its error ({lines.get(fid)})")
    check(not os.path.exists(os.path.join(out, fid + ".txt")), "a corrupt file: no output")
    r = batch([*common, "-o", out, "--manifest", manifest])
    check(r.returncode == 1 and "1 failed before" in r.stderr and "0 to run" in r.stderr,
          f"rerun: the failure is skipped, exit still 1 ({r.returncode})")
    res = os.path.join(out, "results.jsonl")
    before = open(res).read()
    r = batch([*common, "-m", os.path.join(d, "no-such-model.bin"), "-o", out, "--manifest",
               manifest, "--retry-failed"])
    check(r.returncode == 1 and open(res).read() == before,
          f"--retry-failed whose model does not load: exit 1, results.jsonl as it was, the "
          f"failure's line kept ({r.returncode})")
    r = batch([*common, "--max-memory", "100", "-o", out, "--manifest", manifest, "--retry-failed"])
    check(r.returncode == 1 and "decoding state" in r.stderr and open(res).read() == before,
          f"--retry-failed whose decoding states do not fit: exit 1, results.jsonl as it was "
          f"({r.returncode}, {r.stderr.strip()[-120:]!r})")
    os.unlink(bad)
    os.symlink(paths[2], bad)  # fixed: now an audio file
    r = batch([*common, "-o", out, "--manifest", manifest, "--retry-failed"])
    lines = read_lines(os.path.join(out, "results.jsonl"))
    check(r.returncode == 0 and "1 to run" in r.stderr, f"--retry-failed runs it again ({r.returncode})")
    check(len(lines) == 3 and all(l["status"] == "ok" for l in lines),
          f"--retry-failed: one ok line per id ({[l['status'] for l in lines]})")
    no_sanitizer_report(r, "--retry-failed")


def test_manifests(tmp, paths):
    d = os.path.join(tmp, "manifests")
    os.makedirs(d)
    csv = os.path.join(d, "list.csv")
    with open(csv, "w") as f:
        f.write('speaker,"Path",id\r\n')
        f.write(f'"Smith, J.","{paths[0]}",first\r\n')
        f.write(f'x,{paths[1]},"sec""ond"\r\n')
    out = os.path.join(d, "out-csv")
    r = batch([*common, "--formats", "txt", "-o", out, "--manifest", csv])
    ids = sorted(l["id"] for l in read_lines(os.path.join(out, "results.jsonl")))
    check(r.returncode == 0 and ids == ["first", "sec_ond"],
          f"csv manifest: quoted fields, ids from the id column ({ids})")
    check(sorted(os.listdir(out)) == ["first.txt", "results.jsonl", "sec_ond.txt"],
          f"--formats txt: only txt outputs ({sorted(os.listdir(out))})")

    # a quoted glob: its matches taken by audio extension, unless it names an extension itself
    g = os.path.join(d, "g")
    os.makedirs(g)
    shutil.copy(paths[0], os.path.join(g, "a.flac"))
    for name in ("a.txt", "notes.txt"):
        with open(os.path.join(g, name), "w") as f:
            f.write("not audio\n")
    out = os.path.join(d, "out-glob")
    r = batch([*common, "--formats", "txt", "-o", out, os.path.join(g, "*")])
    ids = sorted(l["id"] for l in read_lines(os.path.join(out, "results.jsonl")))
    check(r.returncode == 0 and ids == ["a"], f"glob 'g/*': the audio file only ({r.returncode}, {ids})")
    r = batch([*common, "-o", os.path.join(d, "o-glob2"), os.path.join(g, "notes*")])
    check(r.returncode == 1 and "no audio file matches" in r.stderr,
          f"glob 'g/notes*': no audio file, refused ({r.returncode}, {r.stderr.strip()[-150:]})")
    out = os.path.join(d, "out-glob3")
    r = batch([*common, "--formats", "txt", "-o", out, os.path.join(g, "*.txt")])
    st = sorted(l["status"] for l in read_lines(os.path.join(out, "results.jsonl")))
    check(r.returncode == 1 and st == ["failed", "failed"],
          f"glob 'g/*.txt': the files it names taken (and failed: not audio) ({r.returncode}, {st})")

    dup = os.path.join(d, "dup.jsonl")
    with open(dup, "w") as f:
        f.write(json.dumps({"path": paths[0], "id": "same"}) + "\n")
        f.write(json.dumps({"path": paths[1], "id": "same"}) + "\n")
    r = batch([*common, "-o", os.path.join(d, "o2"), "--manifest", dup])
    check(r.returncode == 1 and "duplicate id 'same'" in r.stderr and paths[0] in r.stderr and
          paths[1] in r.stderr, f"duplicate ids: refused, both paths named ({r.stderr.strip()[:200]})")
    with open(dup, "w") as f:
        f.write(json.dumps({"path": paths[0], "id": "Spk1/Utt"}) + "\n")
        f.write(json.dumps({"path": paths[1], "id": "spk1/utt"}) + "\n")
    r = batch([*common, "-o", os.path.join(d, "o2"), "--manifest", dup])
    check(r.returncode == 1 and "'Spk1/Utt' and 'spk1/utt' differ only in case" in r.stderr and
          paths[0] in r.stderr and paths[1] in r.stderr,
          f"ids differing only in case: refused, both paths named ({r.stderr.strip()[:200]})")
    with open(dup, "w") as f:
        f.write(json.dumps({"path": paths[0], "id": "take"}) + "\n")
        f.write(json.dumps({"path": paths[1], "id": "take.score"}) + "\n")
    r = batch([*common, "-o", os.path.join(d, "o2"), "--manifest", dup, "-otxt", "-ls"])
    check(r.returncode == 1 and "would both write take.score.txt" in r.stderr,
          f"ids whose outputs meet (take's score.txt, take.score's txt): refused "
          f"({r.stderr.strip()[:200]})")
    r = batch([*common, "-o", os.path.join(d, "o2b"), "--manifest", dup, "--formats", "txt"])
    check(r.returncode == 0, f"the same ids without score.txt: run ({r.stderr.strip()[-200:]})")
    for ids, said in ((("a", "A.txt/b"), "id 'A.txt/b' writes into a directory A.txt, but id 'a'"),
                      (("x", "Results.jsonl/y"), "id 'Results.jsonl/y' writes into a directory "
                       "Results.jsonl, the name of a results file")):
        with open(dup, "w") as f:
            for p, i in zip(paths, ids):
                f.write(json.dumps({"path": p, "id": i}) + "\n")
        r = batch([*common, "-o", os.path.join(d, "o2c"), "--manifest", dup, "--formats", "txt"])
        check(r.returncode == 1 and said in r.stderr,
              f"ids {ids}: a file where a directory goes, refused ({r.stderr.strip()[:200]})")
    badcsv = os.path.join(d, "bad.csv")
    with open(badcsv, "w") as f:
        f.write(f'path,id\n{paths[0]},a\n"{paths[1]}"x,b\n')
    r = batch([*common, "-o", os.path.join(d, "o3"), "--manifest", badcsv])
    check(r.returncode == 1 and "bad.csv: line 3" in r.stderr,
          f"a malformed csv row: refused with its line ({r.stderr.strip()[:200]})")
    badjson = os.path.join(d, "bad.jsonl")
    with open(badjson, "w") as f:
        f.write(json.dumps({"path": paths[0]}) + '\n{"file": 3}\n')
    r = batch([*common, "-o", os.path.join(d, "o4"), "--manifest", badjson])
    check(r.returncode == 1 and "bad.jsonl: line 2" in r.stderr,
          f"a jsonl line without a path: refused with its line ({r.stderr.strip()[:200]})")
    check(not any(os.path.exists(os.path.join(d, o)) for o in ("o2", "o3", "o4")),
          "manifest errors: no output directory created")

    for args, what in ((["--shard", "2/2"], "--shard 2/2"), (["--shard", "x"], "--shard x"),
                       (["-j", "0"], "-j 0"), ([], "no -o"), (["-of", "x"], "-of")):
        out = [] if what == "no -o" else ["-o", os.path.join(d, "o5")]
        r = batch([*common, *out, *args, paths[0]])
        check(r.returncode == 2 and r.stderr.strip(), f"usage error: {what}: exit 2")
    r = batch(["-m", model, "--gpus", "0", "-o", os.path.join(d, "o6"), paths[0]])
    check(r.returncode != 0 and "CUDA" in r.stderr, f"--gpus without a usable GPU: a clear error "
          f"({r.stderr.strip()[-200:]})")


def test_batch_size(tmp, paths):
    """--batch-size 4 against the default run, byte for byte, through a kill and a resume, the
    next group's files read ahead on 3 threads (--read-threads, a GPU worker's default)."""
    d = os.path.join(tmp, "bsz")
    os.makedirs(d)
    fmts = ["--formats", "txt,json,srt,vtt,csv,tsv,lrc"]
    one = ["-m", model, "-j", "1", "-t", "2", "-bs", "1", *fmts]
    ref = os.path.join(d, "ref")
    r = batch([*one, "-o", ref, *paths])
    check(r.returncode == 0, f"--batch-size reference run: exit 0 ({r.stderr.strip()[-200:]})")
    out = os.path.join(d, "out")
    res = os.path.join(out, "results.jsonl")
    ahead = ["--batch-size", "4", "--read-threads", "3"]
    p = start([*one, *ahead, "-o", out, *paths])
    reached = wait_lines(res, 4, p)
    p.kill()
    p.wait()
    n_killed = len(read_lines(res))
    check(reached and 0 < n_killed < len(paths),
          f"--batch-size 4: SIGKILL after {n_killed} of {len(paths)} items")
    r = batch([*one, *ahead, "-o", out, *paths])
    check(r.returncode == 0 and f"{n_killed} done before" in r.stderr,
          f"--batch-size 4: the resumed run skips the {n_killed} finished items ({r.returncode})")
    no_sanitizer_report(r, "--batch-size 4")
    lines = read_lines(res)
    check(len(lines) == len(paths) and all(l["status"] == "ok" and l["duration"] > 0 and
                                           l["seconds"] > 0 for l in lines),
          f"--batch-size 4: one ok line per item ({len(lines)})")
    want = sorted(f for f in os.listdir(ref) if f != "results.jsonl")
    got = sorted(f for f in os.listdir(out) if f != "results.jsonl")
    same = [f for f in want if f in got and
            open(os.path.join(ref, f), "rb").read() == open(os.path.join(out, f), "rb").read()]
    check(got == want and len(same) == len(want) == 7 * len(paths),
          f"--batch-size 4: {len(same)}/{len(want)} outputs byte for byte the default run's "
          f"(differ: {sorted(set(want) - set(same))[:4]})")
    # an English-only model asked for German: refused before the first item (not once an
    # item, thousands of times), nothing recorded, alone or in groups
    for extra in ([], ["--batch-size", "4", "--read-threads", "2"]):
        o = os.path.join(d, "de" + str(len(extra)))
        r = batch([*one, *extra, "-l", "de", "-o", o, *paths[:3]])
        lines = read_lines(os.path.join(o, "results.jsonl"))
        check(r.returncode != 0 and r.stderr.count("English-only") == 1 and not lines,
              f"-l de on an English-only model {extra}: refused once, before any item "
              f"({r.returncode}, {len(lines)} lines, {r.stderr.strip()[-200:]!r})")
    # one item's output cannot be placed (a directory where its .txt goes): inside a group
    # whose files are synced together, that item fails with its own error, the others are ok,
    # and nothing is left in staging
    o = os.path.join(d, "blocked")
    ids = [os.path.splitext(os.path.basename(x))[0] for x in paths[:3]]
    os.makedirs(os.path.join(o, ids[1] + ".txt"))
    r = batch([*one, "--batch-size", "4", "-o", o, *paths[:3]])
    lines = {l["id"]: l for l in read_lines(os.path.join(o, "results.jsonl"))}
    check(r.returncode == 1 and lines.get(ids[1], {}).get("status") == "failed" and
          "cannot write" in (lines[ids[1]].get("error") or "") and
          all(lines.get(i, {}).get("status") == "ok" for i in (ids[0], ids[2])) and
          os.path.isfile(os.path.join(o, ids[2] + ".json")) and
          not os.path.exists(os.path.join(o, ids[1] + ".json")) and
          not os.path.exists(os.path.join(o, ".batch")),
          f"--batch-size 4, an output that cannot be placed: that item failed, the others ok "
          f"({r.returncode}, {sorted((k, v['status']) for k, v in lines.items())})")


def test_disk_full(tmp, paths):
    """A full disk stops the run (exit 1, saying so) instead of failing every later item: the
    items it could not write get no line and run again on resume. The output directory is a
    48 KiB tmpfs in a user and mount namespace (skipped where unshare -rm is refused)."""
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        print("skip: a full disk (unshare -rm refused here)")
        return
    d = os.path.join(tmp, "full")
    manifest = os.path.join(d, "list.txt")
    os.makedirs(d)
    with open(manifest, "w") as f:
        f.write("".join(p + "\n" for p in paths))
    for size in (1, 3):
        out = os.path.join(d, f"out{size}")
        os.makedirs(out)
        script = (f'mount -t tmpfs -o size=48k none "{out}" || exit 99; "$@"; rc=$?; '
                  f'cat "{out}/results.jsonl"; exit $rc')
        r = subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", exe, "batch", *common,
                            "--batch-size", str(size), "--formats", "txt,json", "-o", out,
                            "--manifest", manifest], capture_output=True, text=True, timeout=900)
        if r.returncode == 99:
            print("skip: a full disk (no tmpfs mount here)")
            return
        lines = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
        what = f"--batch-size {size}, the disk full"
        check(r.returncode == 1 and "No space left on device" in r.stderr and
              "run the same command again to resume" in r.stderr,
              f"{what}: exit 1, the run stops saying why ({r.returncode}, "
              f"{r.stderr.strip()[-300:]!r})")
        check(0 < len(lines) < len(paths) and all(l["status"] == "ok" for l in lines),
              f"{what}: only the items written have a line, all ok "
              f"({[l['status'] for l in lines]} of {len(paths)})")
        no_sanitizer_report(r, what)


def main():
    r = subprocess.run([exe, "batch", "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and "--shard K/N" in r.stdout and "--batch-size N" in r.stdout,
          "batch --help")
    if not (os.path.exists(model) and len(wavs) >= n_files):
        print(f"SKIP: {model} or {n_files} clips in {shared}/audio/ljspeech-dev missing "
              "(set WHISPERC_SHARED)")
        return 77 if testlib.failures == 0 else 1
    tmp = tempfile.mkdtemp(prefix="wc_test_batch_")
    try:
        inputs = os.path.join(tmp, "in")
        os.makedirs(inputs)
        ids = []
        for w in wavs[:n_files]:
            os.symlink(w, os.path.join(inputs, os.path.basename(w)))
            ids.append(os.path.basename(w).rsplit(".", 1)[0])
        t0 = time.time()
        test_kill_resume(tmp, inputs, ids)
        t1 = time.time()
        test_shards(tmp, wavs[:max(4, n_files // 4)], ids[:max(4, n_files // 4)])
        t2 = time.time()
        test_failures(tmp, wavs)
        test_manifests(tmp, wavs)
        t3 = time.time()
        test_batch_size(tmp, wavs[:12])
        test_disk_full(tmp, wavs[:8])
        print(f"        {n_files} files: kill/resume {t1 - t0:.0f} s, shards {t2 - t1:.0f} s, "
              f"failures and manifests {t3 - t2:.0f} s, --batch-size {time.time() - t3:.0f} s")
    finally:
        shutil.rmtree(tmp)
    print(f"{testlib.failures} failure(s)")
    return testlib.exit_status()


sys.exit(main())
