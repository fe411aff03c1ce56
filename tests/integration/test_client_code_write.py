#!/usr/bin/env python3
"""Code the client patches at a stop runs patched, and the past keeps
what ran there.

client_patch.c (O0, O2) sums 1,000 calls of `value` (mov $1,%eax; ret)
before mark and 1,000 after. Stopped at mark, gdb writes 2 over the
immediate (an M packet) and continues: the program prints "sum 3000" under
gdbserver. Under `btstub --record` the translating tracer ran its
translation of the old code (printed "sum 2000": the write never reached
what runs); now a client write tells the tracer, which drops translations
of code under it (and the ptrace tracer forgets the blocks it decoded
there). Each tracer (`--trace-stops=translate`, the default, and `int3`)
must print what gdbserver prints. Back at mark by reverse-continue from
the held end, `value`'s bytes are the old ones (a checkpoint's copy), or
unavailable where a read from the present would give the patched ones
(the write is noted like a map change: stub/tracing/map_changes.h),
never the patched byte.

    python3 test_client_code_write.py [-v]
"""

from harness import program, run_gdb_tcp, run_test

COMMANDS = [
    "break mark", "continue",                            # 0-1: mark, live
    "set *(unsigned char *)((char *)value + 1) = 2",     # 2
    "x/6xb value",                                       # 3
    "continue",                                          # 4: to the end
]
PAST = [
    "reverse-continue",                                  # 5: mark, in the past
    "x/6xb value",                                       # 6
    "monitor replay status",                             # 7
]

PATCHED = "0xb8\t0x02\t0x00\t0x00\t0x00\t0xc3"
ORIGINAL = "0xb8\t0x01\t0x00\t0x00\t0x00\t0xc3"


def main(args, c):
    for opt in ("O0", "O2"):
        prog = program("client_patch", opt)
        reference, ref_server = run_gdb_tcp("gdbserver", prog, [], COMMANDS)
        ref_ctx = reference.transcript() + "\n--- gdbserver stdout ---\n" + ref_server.stdout
        c.contains("%s: gdbserver reads the patched byte" % opt, reference.of(3), PATCHED, ref_ctx)
        c.contains("%s: gdbserver runs the patched code" % opt, ref_server.stdout, "sum 3000", ref_ctx)
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
                       "sum 3000", ctx)
            c.matches("%s: back at mark" % what, result.of(5), r"Breakpoint 1, .*mark", ctx)
            past = result.of(6)
            c.true("%s: in the past, value's bytes are the old ones or unavailable" % what,
                   ORIGINAL in past or "Cannot access memory" in past, past, ctx)


if __name__ == "__main__":
    run_test("test_client_code_write", main)
