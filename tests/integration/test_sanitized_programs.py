#!/usr/bin/env python3
"""Programs built with AddressSanitizer and ThreadSanitizer record
(tests/programs/sanitized/sanitized_run.c, built as sanitized_asan and
sanitized_tsan where the C compiler can). Their runtimes refuse to start
when anything lies in the ranges they keep for shadow memory; btstub's
per-thread logs lay at 16 TiB, inside both, and under `--record` ASan
aborted ("Shadow memory range interleaves with an existing memory
mapping") and TSan died ("unexpected memory mapping").

Each program runs natively, then under gdb over the server with
`continue` until it exits (btstub --record stops at the exit_group and
then holds the end, reported as SIGKILL: docs/past-state.md); it must
print the same "sum S" line and exit 0. LeakSanitizer
cannot run under ptrace (any debugger): ASAN_OPTIONS=detect_leaks=0 on
every side for that.

Then the ASan program with leak detection on, as a user gets it by
default: at its exit LeakSanitizer clones an untraced process sharing the
memory (CLONE_VM | CLONE_UNTRACED) to stop the program's threads, which
fails under any tracer; the program ends "with code 01" after "LeakSanitizer
has encountered a fatal error", under gdbserver and under btstub alike.
Under `--record` that process ran into the tracer's int3s, died of
SIGTRAP, and the program waited for it without end; btstub now runs such a
clone traced.

    python3 test_sanitized_programs.py [--server gdbserver] [-v]
"""

import os
import shlex
import subprocess

from harness import programs_dir, run_gdb, run_test, server_path


def main(args, c):
    # The harness's options (log_path: a sanitized btstub's reports) stay.
    harness_options = os.environ.get("ASAN_OPTIONS", "")
    os.environ["ASAN_OPTIONS"] = harness_options + ":detect_leaks=0"
    ran = 0
    for name in ("sanitized_asan", "sanitized_tsan"):
        prog = os.path.join(programs_dir(), name)
        if not os.access(prog, os.X_OK):
            print("SKIP %s: not built (the C compiler cannot link the sanitizer)" % name)
            continue
        ran += 1
        native = subprocess.run([prog], capture_output=True, text=True, timeout=60)
        c.equal("%s: runs natively" % name, 0, native.returncode, native.stderr)
        line = native.stdout.strip()
        c.true("%s: prints its sum" % name, line.startswith("sum "), native.stdout)
        options = ["--record"] if args.server == "btstub" else []
        target = "| " + shlex.join([server_path(args.server)] + options + ["-", prog])
        r = run_gdb(["continue", "continue", "continue"], prog, target, timeout=240)
        text = r.output
        c.true("%s: the same line under the server" % name, line in text, r.transcript())
        c.true("%s: no sanitizer refused to start" % name,
               "interleaves with an existing memory mapping" not in text and "unexpected memory mapping" not in text,
               r.transcript())
        c.true("%s: exits 0" % name, "exited normally" in text, r.transcript())
    if ran == 0:
        print("SKIP no sanitized program built")
        return
    prog = os.path.join(programs_dir(), "sanitized_asan")
    if os.access(prog, os.X_OK):
        os.environ["ASAN_OPTIONS"] = harness_options
        for kind in ("gdbserver", args.server):
            options = ["--record"] if kind == "btstub" else []
            target = "| " + shlex.join([server_path(kind)] + options + ["-", prog])
            r = run_gdb(["continue", "continue", "continue"], prog, target, timeout=240)
            c.true("%s, leak detection on: LeakSanitizer gives up under ptrace" % kind,
                   "LeakSanitizer has encountered a fatal error" in r.output, r.transcript())
            c.true("%s, leak detection on: the program ends with code 01" % kind,
                   "exited with code 01" in r.output, r.transcript())


if __name__ == "__main__":
    run_test("test_sanitized_programs", main)
