#!/usr/bin/env python3
"""`btstub --record` keeps a long history by default, at a few bytes a
branch, and shows values all along it.

bench_checkpoints.c at -O2 runs 1,000 rounds of 1,000 loop iterations
(one taken branch each) between bench_begin and bench_end: a million
branches, 366 times what the former default of 64 KiB (2,730 branches)
kept, and more than 1,024 checkpoints (one every 700 branches) could
cover unthinned. Under `btstub --record` with no size given:
- `monitor record status` at bench_end says the default bound, 256 MiB
  of BTS records (11,184,810 branches), and that the thread holds every
  branch since its first instruction, none dropped, in under 2 bytes a
  branch (plus the store's fixed 128 KiB at most), within the per-thread
  cap it states;
- a reverse-continue from bench_end reaches bench_begin (with the former
  default it ran out of history inside the loop), and a continue from
  there, replaying, the first call of work(); at both every register
  gdb reads equals the live stop's there (read from copies of the
  program: with checkpoints dropped oldest first, the callee-saved ones
  were unavailable this far back).

Runs against btstub only (gdbserver has no --record).

    python3 test_record_history_default.py [-v]
"""

import re
import shlex

from harness import program, run_gdb, run_test, server_path

STATUS = re.compile(r"thread \d+: (\d+) of (\d+) branches in (\d+) bytes(, \d+ older dropped)?")
REGISTERS = "info registers rip rsp rbp rbx r12 r13 r14 r15"


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub has --record (skipped for %s)" % args.server, True)
        return
    prog = program("bench_checkpoints", "O2")
    target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog, "1000", "1000", "0"])
    commands = ["break bench_begin", "break bench_end", "continue", REGISTERS,
                "tbreak work", "continue", REGISTERS, "continue", "monitor record status",
                "reverse-continue", REGISTERS, "tbreak work", "continue", REGISTERS]
    r = run_gdb(commands, prog, target, timeout=300)
    ctx = r.transcript()
    status = r.of(8) or ""
    c.contains("the default bound is 256 MiB of BTS records", status,
               "268435456-byte buffers (11184810 branches)", ctx)
    c.contains("the per-thread cap is stated", status, "a thread's trace holds at most 1073741824 bytes", ctx)
    m = STATUS.search(status)
    c.true("status gives the branches held and their bytes", m is not None, ctx)
    if m:
        held, bound, size, dropped = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
        c.true("every branch since the first instruction is held (over a million)",
               held > 1000000 and bound == 11184810 and dropped is None, ctx)
        c.true("under 2 bytes a branch, plus at most 128 KiB", size <= 2 * held + 128 * 1024, ctx)
    c.contains("reverse-continue reaches bench_begin", r.of(9), "Breakpoint 1, ", ctx)
    c.true("history did not run out", "No more reverse-execution history" not in (r.of(9) or ""), ctx)
    for what, live, past in (("bench_begin", r.of(3), r.of(10)), ("work()'s first call", r.of(6), r.of(13))):
        c.true("%s: registers read live and in the past" % what,
               "rip" in (live or "") and "rip" in (past or "") and "unavailable" not in (past or ""), ctx)
        c.equal("%s: the past registers equal the live stop's" % what, live, past, ctx)


if __name__ == "__main__":
    run_test("test_record_history_default", main)
