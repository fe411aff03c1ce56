"""csmith's random C programs, generated from a seed and built for a test.

csmith (Debian's packages csmith and libcsmith-dev, .ci/setup.sh) writes
the same program for the same seed, version and options (its own random
generator; only the header comment names the output file, which is always
csmith_SEED.c here). Each program computes a checksum over its globals and
prints "checksum = X"; a run under translation must print what a native
run prints.

OPTIONS are csmith's defaults: options that bound the program's size
(--max-funcs 4 --max-block-depth 3 --max-array-len-per-dim 4
--max-expr-complexity 5 were tried) made programs that hardly run beyond the
C library's start-up and the checksum (a few thousand branches of their
own),
while the default programs run 10,000-200,000 and some loop for minutes:
callers run each program natively under a timeout first, and the test's
seeds were picked among the quick ones.
"""

import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

from harness import run_command

OPTIONS = []
VERSION = "2.3.0"
CHECKSUM = re.compile(r"^checksum = [0-9A-F]+$", re.M)


def include_dir():
    """The directory holding csmith.h (Debian: /usr/include/csmith), or None."""
    for path in sorted(glob.glob("/usr/include/csmith*")) + ["/usr/local/include/csmith"]:
        if os.path.isfile(os.path.join(path, "csmith.h")):
            return path
    return None


def missing():
    """Why csmith programs cannot be made here, or None when they can."""
    if not shutil.which("csmith"):
        return "no csmith on PATH (Debian package csmith, .ci/setup.sh installs it)"
    if include_dir() is None:
        return "no csmith.h under /usr/include/csmith* (Debian package libcsmith-dev)"
    return None


def version():
    """csmith's version, e.g. "2.3.0"."""
    # Even --version writes platform.info into the working directory.
    with tempfile.TemporaryDirectory(prefix="btstub-csmith-") as directory:
        out = subprocess.run(["csmith", "--version"], capture_output=True, text=True, cwd=directory).stdout
    m = re.search(r"csmith (\S+)", out)
    return m.group(1) if m else out.strip()


def generate(seed, directory, options=None):
    """Writes csmith_SEED.c into `directory` (csmith's `options`, default
    OPTIONS); returns its path and the sha256 of its text."""
    name = "csmith_%d.c" % seed
    options = OPTIONS if options is None else options
    # csmith writes platform.info into its working directory.
    status, out, err = run_command(["csmith", "--seed", str(seed)] + options + ["-o", name],
                                   timeout=60.0, cwd=directory)
    path = os.path.join(directory, name)
    if status != 0 or not os.path.exists(path):
        raise RuntimeError("csmith --seed %d failed (%s): %s%s" % (seed, status, out, err))
    with open(path, "rb") as f:
        return path, hashlib.sha256(f.read()).hexdigest()


def build(source, opt):
    """Compiles `source` with gcc at -`opt` (PIE, -g, warnings off: csmith's
    code is full of what gcc warns about); returns the executable's path.
    `opt` may carry more flags: "O3 -march=native"."""
    exe = "%s_%s" % (os.path.splitext(source)[0], re.sub(r"\W+", "_", opt))
    status, out, err = run_command(["gcc"] + ("-" + opt).split() + ["-g", "-w", "-fPIE", "-pie", "-I",
                                                                   include_dir(), source, "-o", exe],
                                   timeout=120.0)
    if status != 0:
        raise RuntimeError("gcc -%s %s failed (%s): %s%s" % (opt, source, status, out, err))
    return exe


def native_run(exe, timeout=10.0):
    """Runs `exe` without a debugger: (exit status or None on timeout,
    stdout)."""
    status, out, _ = run_command([exe], timeout=timeout)
    return status, out


def checksum(output):
    """The "checksum = X" line of a program's output, or None."""
    m = CHECKSUM.search(output)
    return m.group(0) if m else None
