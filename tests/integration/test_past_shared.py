#!/usr/bin/env python3
"""Going back never writes into memory the program shares, and the past
shows what the program held there then.

past_shared.c writes a running sum in tick(i), i = 1..5000, into an
anonymous MAP_SHARED page, a MAP_SHARED file, a memfd and a SysV shared
memory segment (and a private global); every 1,000 ticks it appends a row
to a log with write() and bumps a row count in the shared file (SQLite's
WAL pattern); a forked child waits on a futex in the shared page and prints
what it sees at the end. Copies of the program re-run in the past share
those pages unless btstub makes them private (fork keeps them shared).

Recorded by btstub (`--record`, and `monitor record start` at the 2,000th
tick), at -O0 and -O2: stop at the 3,000th and 3,001st tick, reverse-continue
to the 3,000th, print every sum (they must be the sum of 1..2999, what the
program held there: the sum is the reference), `finish` there (a copy runs
tick(3000): the sums of 1..3000), reverse-continue again (1..2999), then
continue to the end. The program's output, its child's, and the bytes of
the shared file and the log must equal a run of the program with no
debugger. Before copies made shared memory private, the past showed the
present's sums and every re-run added to the live ones.

With `big` the program also writes a sum into a 16 MiB shared mapping,
more than a checkpoint copies: in the past its value is unknown (gdb says
so, never a number), and the program's output and files are still a run's.

    python3 test_past_shared.py [-v]
"""

import os
import shutil
import subprocess
import tempfile

from harness import Server, program, run_gdb, run_test

SUMS = ["anon[1]", "filemap[1]", "memfdmap[1]", "sysv[1]", "priv"]


def expected_sum(n):
    return str(n * (n + 1) // 2)


def reference_run(prog, directory, extra):
    done = subprocess.run([prog, directory] + extra, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    return done.stdout.decode(), files(directory)


def files(directory):
    out = {}
    for name in ("shared.map", "rows.log"):
        with open(os.path.join(directory, name), "rb") as f:
            out[name] = f.read()
    return out


def probe(tag):
    """Prints every sum, the last tick seen and the row count."""
    return ["echo @@%s\\n" % tag] + ["print %s" % e for e in SUMS + ["anon[0]", "filemap[2]"]]


def commands(mode):
    if mode == "--record":
        start = ["break tick", "ignore 1 2999", "continue"]
    else:
        start = ["break tick", "ignore 1 1999", "continue", "monitor record start", "ignore 1 999", "continue"]
    return start + ["continue", "reverse-continue"] + probe("back") + ["finish"] + probe("finished") + \
        ["reverse-continue"] + probe("again") + ["delete"] + ["continue"] * 5


def values(result, tag):
    """The printed values of probe(tag), in order."""
    text = result.output
    start = text.find("@@%s\n" % tag)
    if start < 0:
        return None
    out = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("$"):
            out.append(line.split(" = ", 1)[1])
            if len(out) == len(SUMS) + 2:
                break
    return out


def session(prog, directory, mode, extra, script):
    options = ["--once"] + (["--record"] if mode == "--record" else [])
    server = Server("btstub", [prog, directory] + extra, options=options)
    try:
        result = run_gdb(script, prog, server.address, timeout=120)
        server.wait_exit(15.0)
    finally:
        server.stop()
    return result, server


def check_output(c, label, result, server, directory, ref_out, ref_files):
    c.contains("%s: the program ran to its end" % label, result.output, "exited normally", result.transcript())
    c.equal("%s: the program's and its child's output is a run's without a debugger" % label, ref_out,
            server.stdout)
    got = files(directory)
    for name in sorted(ref_files):
        c.equal("%s: %s holds a run's bytes" % (label, name), ref_files[name], got[name])


def check_big(c, opt, prog):
    """A shared mapping too large to copy: unknown in the past."""
    label = "%s big" % opt
    directory = tempfile.mkdtemp(prefix="btstub-past-shared-")
    try:
        ref_out, ref_files = reference_run(prog, directory, ["big"])
        script = ["break tick", "ignore 1 2999", "continue", "continue", "reverse-continue", "print big[1]",
                  "print anon[1]", "delete"] + ["continue"] * 5
        result, server = session(prog, directory, "--record", ["big"], script)
        c.matches("%s: back at the 3,000th tick the big mapping's sum is unknown, and said so" % label,
                  result.of_command("print big[1]"), r"^(Cannot access memory at address 0x[0-9a-f]+|"
                  r"\$\d+ = <unavailable>)$")
        anon = result.of_command("print anon[1]").strip()
        c.true("%s: the small shared page's sum is the program's then or unknown" % label,
               anon.endswith(" = " + expected_sum(2999)) or "unavailable" in anon or "Cannot access" in anon, anon)
        check_output(c, label, result, server, directory, ref_out, ref_files)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def check(c, opt, mode, prog, ref_out, ref_files):
    label = "%s %s" % (opt, mode)
    directory = tempfile.mkdtemp(prefix="btstub-past-shared-")
    try:
        result, server = session(prog, directory, mode, [], commands(mode))
        at_3000 = [expected_sum(2999)] * len(SUMS) + ["2999", "2"]
        after = [expected_sum(3000)] * len(SUMS) + ["3000", "2"]
        c.equal("%s: back at the 3,000th tick every shared sum is the program's then" % label, at_3000,
                values(result, "back"), result.transcript())
        c.contains("%s: finish there returns to main" % label, result.of_command("finish"), "main (")
        c.equal("%s: after finish, tick(3000)'s writes and no more" % label, after, values(result, "finished"),
                result.transcript())
        c.equal("%s: back again, the same as the first time" % label, at_3000, values(result, "again"),
                result.transcript())
        check_output(c, label, result, server, directory, ref_out, ref_files)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main(args, c):
    if args.server != "btstub":
        c.true("btstub's own recording (skipped for %s)" % args.server, True)
        return
    for opt in ("O0", "O2"):
        prog = program("past_shared", opt)
        directory = tempfile.mkdtemp(prefix="btstub-past-shared-ref-")
        try:
            ref_out, ref_files = reference_run(prog, directory, [])
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        c.true("%s: the reference run prints its sums" % opt,
               ("anon=%s " % expected_sum(5000)) in ref_out and "rows=5" in ref_out, ref_out)
        for mode in ("--record", "monitor record start"):
            check(c, opt, mode, prog, ref_out, ref_files)
        check_big(c, opt, prog)


if __name__ == "__main__":
    run_test("test_past_shared", main)
