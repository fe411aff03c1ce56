#!/usr/bin/env python3
"""What the client writes at a stop is what runs after it, and the past
keeps what ran before it.

client_patch.c (O0, O2) sums 1,000 calls of `value` (mov $1,%eax; ret)
before mark and 1,000 after, and prints the sum plus the global `offset`.
Stopped at mark, gdb writes 2 over the immediate and 5000 into `offset`
(M packets) and continues: the program prints "sum 8000" under gdbserver.

Under `btstub --record` (each tracer: `--trace-stops=translate`, the
default, and `int3`):
- the program must print what gdbserver prints (the translating tracer ran
  its translation of the old code: "sum 7000"; a client write now drops
  translations of code under it);
- back from the held end by reverse-continue to the last call of `value`
  (after mark), the caller is the second loop and `offset` is 5000, read
  from a copy of the program (a copy taken before the write used to be
  re-run there: `offset` 0, and the patched code counted visits wrong);
- back at the last call of `value` before mark (past mark, where the
  writes were made and whose copy holds them), `value`'s bytes are the old
  ones and `offset` 0, or unavailable; never what was written.

    python3 test_client_code_write.py [-v]
"""

from harness import marker_line, program, run_gdb_tcp, run_test

COMMANDS = [
    "break mark", "continue",                            # 0-1: mark, live
    "set *(unsigned char *)((char *)value + 1) = 2",     # 2
    "x/6xb value",                                       # 3
    "set var offset = 5000",                             # 4
    "continue",                                          # 5: to the end
]
PAST = [
    "break *value", "reverse-continue",                  # 6-7: the last call of value
    "bt 2",                                              # 8
    "print offset",                                      # 9
    "x/6xb value",                                       # 10
    "monitor replay status",                             # 11
    "delete", "break mark", "reverse-continue",          # 12-14: mark, where the writes were made
    "delete", "break *value", "reverse-continue",        # 15-17: the last call before them
    "bt 2",                                              # 18
    "x/6xb value",                                       # 19
    "print offset",                                      # 20
]

PATCHED = "0xb8\t0x02\t0x00\t0x00\t0x00\t0xc3"
ORIGINAL = "0xb8\t0x01\t0x00\t0x00\t0x00\t0xc3"


def main(args, c):
    before = marker_line("client_patch.c", "before")
    after = marker_line("client_patch.c", "after")
    for opt in ("O0", "O2"):
        prog = program("client_patch", opt)
        reference, ref_server = run_gdb_tcp("gdbserver", prog, [], COMMANDS)
        ref_ctx = reference.transcript() + "\n--- gdbserver stdout ---\n" + ref_server.stdout
        c.contains("%s: gdbserver reads the patched byte" % opt, reference.of(3), PATCHED, ref_ctx)
        c.contains("%s: gdbserver runs the patched code" % opt, ref_server.stdout, "sum 8000", ref_ctx)
        if args.server != "btstub":
            continue
        for stops in ("translate", "int3"):
            what = "%s, --trace-stops=%s" % (opt, stops)
            result, server = run_gdb_tcp("btstub", prog, [], COMMANDS + PAST,
                                         options=("--once", "--record", "--trace-stops=" + stops))
            ctx = result.transcript() + "\n--- btstub stdout ---\n" + server.stdout + \
                "\n--- btstub stderr ---\n" + server.stderr
            c.contains("%s: the patched byte reads live" % what, result.of(3), PATCHED, ctx)
            c.contains("%s: the program ran the patched code, as under gdbserver" % what, server.stdout,
                       "sum 8000", ctx)
            c.matches("%s: back at the last call of value" % what, result.of(7), r"Breakpoint \d+, .*value", ctx)
            c.matches("%s: called from the second loop" % what, result.of(8),
                      r"#1 .*main \(\) at .*client_patch\.c:%d" % after, ctx)
            c.contains("%s: after the write, offset is what was written" % what, result.of(9), "= 5000", ctx)
            c.contains("%s: after the write, value's bytes are the patched ones" % what, result.of(10),
                       PATCHED, ctx)
            c.contains("%s: read from a copy" % what, result.of(11), "copy", ctx)
            c.matches("%s: back at mark" % what, result.of(14), r"Breakpoint \d+, .*mark", ctx)
            c.matches("%s: back at the last call before the writes" % what, result.of(17),
                      r"Breakpoint \d+, .*value", ctx)
            c.matches("%s: called from the first loop" % what, result.of(18),
                      r"#1 .*main \(\) at .*client_patch\.c:%d" % before, ctx)
            past = result.of(19)
            c.true("%s: before the write, value's bytes are the old ones or unavailable" % what,
                   ORIGINAL in past or "Cannot access memory" in past, past, ctx)
            past = result.of(20)
            c.true("%s: before the write, offset is 0 or unavailable" % what,
                   "= 0" in past or "unavailable" in past or "Cannot access" in past, past, ctx)

if __name__ == "__main__":
    run_test("test_client_code_write", main)
