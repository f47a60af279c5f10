#!/usr/bin/env python3
"""The library as a user gets it: `meson install` into a temporary destdir, then the programs
in examples/ built against the installed header and libraries through pkg-config alone.

  test_install.py BUILD_DIR SOURCE_DIR SHARED_DIR SANITIZE

- libwhisperc.h compiles as C11 -pedantic and as C++;
- examples/simple.c, linked with the shared library, transcribes jfk;
- examples/simple.c, linked with the static library (pkg-config --static), does the same;
- examples/parallel.c with 4 threads sharing one model gives the transcripts of 1 thread.
SANITIZE is the build's b_sanitize option: the examples are built with the same flags. On a
CPU with AVX2 and FMA, a program linked with the library never runs OpenBLAS's Prescott
kernels (the library has OpenBLAS choose again where it fell back to them: 76 s for this test
on a CPU newer than Debian's OpenBLAS, 8 s after); where it could not, the examples run with the
OPENBLAS_CORETYPE whisperc_blas_coretype_advice() names.
"""
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile

import testlib
from testlib import check

build, source, shared, sanitize = sys.argv[1:5]
source = pathlib.Path(source)
model = pathlib.Path(shared) / "models" / "ggml-tiny.en.bin"
testlib.skip_unless_exist([model])


def run(cmd, **kw):
    print("+", " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], check=True, text=True, capture_output=True, **kw)


tmp = pathlib.Path(tempfile.mkdtemp(prefix="whisperc-install-"))
run(["meson", "install", "-C", build, "--destdir", tmp, "--no-rebuild", "--quiet"])
pcs = list(tmp.rglob("libwhisperc.pc"))
check(len(pcs) == 1, "one libwhisperc.pc installed")
headers = list(tmp.rglob("libwhisperc.h"))
check(len(headers) == 1, "libwhisperc.h installed")
# The installed .pc names the final prefix: a copy pointing into the destdir stands in for it.
pc_dir = tmp / "pkgconfig"
pc_dir.mkdir()
pc_text = pcs[0].read_text()
prefix = next(l.split("=", 1)[1] for l in pc_text.splitlines() if l.startswith("prefix="))
(pc_dir / "libwhisperc.pc").write_text(pc_text.replace(f"prefix={prefix}", f"prefix={tmp}{prefix}", 1))
env = dict(os.environ, PKG_CONFIG_PATH=str(pc_dir))


def pkg(*args, name="libwhisperc"):
    return shlex.split(run(["pkg-config", *args, name], env=env).stdout)


cflags, libs = pkg("--cflags"), pkg("--libs")
san = [f"-fsanitize={sanitize}"] if sanitize not in ("", "none") else []
cc = os.environ.get("CC", "cc")
cxx = os.environ.get("CXX", "c++")
warn = ["-Wall", "-Wextra", "-Werror", "-pedantic"]

hdr_test = tmp / "header.c"
hdr_test.write_text("#include <libwhisperc.h>\nint main(void) { return whisperc_lang_count() > 0 ? 0 : 1; }\n")
run([cc, "-std=c11", *warn, *cflags, "-fsyntax-only", hdr_test])
check(True, "libwhisperc.h compiles as C11 -pedantic")
hdr_cpp = tmp / "header.cpp"
hdr_cpp.write_text(hdr_test.read_text())
try:
    run([cxx, "-std=c++11", *warn, *cflags, "-fsyntax-only", hdr_cpp])
    check(True, "libwhisperc.h compiles as C++11")
except FileNotFoundError:
    print(f"note: no C++ compiler ({cxx}); C++ check skipped")

libdir = pathlib.Path(pkg("--variable=libdir")[0])
# binaries built before the defaults functions became inline still find them
syms = {l.split()[-1] for l in run(["nm", "-D", "--defined-only", libdir / "libwhisperc.so"])
        .stdout.splitlines()}
check({"whisperc_full_default_params", "whisperc_model_default_params", "whisperc_full_params_init",
       "whisperc_model_params_init"} <= syms, "the defaults functions, old and sized, exported")
run_env = dict(os.environ, LD_LIBRARY_PATH=str(libdir), ASAN_OPTIONS="detect_leaks=1")
# A program embedding the library, where the distribution's OpenBLAS does not know this CPU
# (its fallback kernels 15 times slower here): the library has OpenBLAS choose again as it is
# loaded (src/cpu/blas_core.c), so on a CPU with AVX2 and FMA the kernels are never Prescott's.
# Where it could not, the examples run with the OPENBLAS_CORETYPE it advises, as its warning
# tells a user to.
advice = tmp / "advice.c"
advice.write_text("#include <stdio.h>\n#include <libwhisperc.h>\n"
                  "int main(void) { const char *c = whisperc_blas_coretype_advice();\n"
                  "    printf(\"%s %s\\n\", whisperc_blas_core(), c ? c : \"-\"); return 0; }\n")
run([cc, "-std=c11", *warn, *san, *cflags, advice, "-o", tmp / "advice", *libs])
kernels, core = run([tmp / "advice"], env=run_env).stdout.split()
print(f"OpenBLAS kernels in a program linked with the library: {kernels}")
flags = set(open("/proc/cpuinfo").read().split()) if os.path.exists("/proc/cpuinfo") else set()
expect_chosen = ({"avx2", "fma"} <= flags and "OPENBLAS_CORETYPE" not in os.environ and
                 os.environ.get("WHISPERC_BLAS_RESELECT") != "0")
if expect_chosen:
    check(kernels.lower() != "prescott", f"an embedding program never runs OpenBLAS's Prescott "
          f"fallback on an AVX2 CPU ({kernels})")
if core != "-":
    print(f"note: OPENBLAS_CORETYPE={core} for the examples")
    run_env["OPENBLAS_CORETYPE"] = core
simple = tmp / "simple"
run([cc, "-std=c11", *warn, *san, *cflags, source / "examples/simple.c", "-o", simple, *libs])
jfk = pathlib.Path(shared) / "audio/jfk/jfk.wav"
out = run([simple, model, jfk], env=run_env).stdout
print(out, end="")
check("ask not what your country can do for you" in out, "simple (shared library) transcribes jfk")

# libwhisperc.a with its dependencies' shared libraries (Debian ships few of their .a files).
private = pkg("--libs", "--static")
static_libs = ["-l:libwhisperc.a" if a == "-lwhisperc" else a for a in private[:private.index("-lwhisperc") + 1]]
static_libs += [a for a in pkg("--libs-only-other", "--libs-only-l", "--static") if a.startswith("-p")]
for req in pkg("--print-requires-private"):
    if req[0].isalpha():
        static_libs += pkg("--libs", name=req)
static_libs += ["-lm", "-ldl", "-lpthread"]
simple_static = tmp / "simple-static"
run([cc, "-std=c11", *warn, *san, *cflags, source / "examples/simple.c", "-o", simple_static,
     *static_libs])
needed = run(["readelf", "-d", simple_static]).stdout
check("libwhisperc" not in needed, "simple-static does not need libwhisperc.so")
# the kernels with the static library, whose constructor may run in another order
run([cc, "-std=c11", *warn, *san, *cflags, advice, "-o", tmp / "advice-static", *static_libs])
kernels_static = run([tmp / "advice-static"], env=dict(os.environ)).stdout.split()[0]
if expect_chosen:
    check(kernels_static.lower() != "prescott", f"the same linked with the static library "
          f"({kernels_static})")
out_static = run([simple_static, model, jfk],
                 env={k: v for k, v in run_env.items() if k != "LD_LIBRARY_PATH"}).stdout
check(out_static == out, "simple (static library) prints the same")

parallel = tmp / "parallel"
run([cc, "-std=c11", *warn, *san, *cflags, source / "examples/parallel.c", "-o", parallel, *libs,
     "-lpthread"])
files = [jfk, pathlib.Path(shared) / "audio/jfk/jfk.flac"] + sorted(
    (pathlib.Path(shared) / "audio/ljspeech-dev/wavs").glob("LJ001-000*.flac"))[:6]
one = run([parallel, model, "1", *files], env=run_env).stdout
four = run([parallel, model, "4", *files], env=run_env).stdout
print(four, end="")
check(one.count("\n") == len(files) and "ERROR" not in one, "parallel: every file transcribed")
check(one == four, f"parallel: 4 threads on one model == 1 thread ({len(files)} files)")

subprocess.run(["rm", "-rf", str(tmp)])
print(f"{'FAILED' if testlib.failures else 'OK'}")
sys.exit(testlib.exit_status())
