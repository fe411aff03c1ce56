#!/usr/bin/env python3
"""What the client writes at a stop is what runs after it, and the past
keeps what ran before it.

client_patch.c (O0, O2) sums 1,000 calls of `value` (mov $1,%eax; ret)
before mark and 1,000 after, and prints the sum plus the global `offset`.
Stopped at mark, gdb writes 2 over the immediate and 5000 into `offset`
(M packets) and sets `bonus` to 204 (a 0xcc byte: refused under --record
before, as if gdb wrote a breakpoint into code), then at bias_set writes
70 into eax (bias returns it into `bonus`) and continues: the program
prints "sum 8070" under gdbserver. In a second session gdb calls
`value()` twice at mark (an inferior call: gdb writes an int3 byte on the
stack, refused before under --record) and the program goes on to print
"sum 2007". In a third, gdb pops mark with `return` and continues to the
end; going back, reverse-continue crosses the return to mark and the
first loop (before: "No more reverse-execution history" right after it).

Under `btstub --record` (each tracer: `--trace-stops=translate`, the
default, and `int3`):
- the program must print what gdbserver prints (the translating tracer ran
  its translation of the old code: "sum 7070"; a client write now drops
  translations of code under it);
- back from the held end by reverse-continue to the last call of `value`
  (after mark), the caller is the second loop, `offset` is 5000 and
  `bonus` 70, read from a copy of the program (a copy taken before the
  writes used to be re-run there: `offset` 0, `bonus` 7);
- back at the last call of `value` before mark (past mark, where the
  writes were made and whose copy holds them), `value`'s bytes are the old
  ones and `offset` 0, or unavailable; never what was written.

    python3 test_client_code_write.py [-v]
"""

from harness import marker_line, program, run_gdb_tcp, run_test

COMMANDS = [
    # Both breakpoints first: a breakpoint inserted later would make the
    # translating tracer drop its translations anyway.
    "break mark", "break *bias_set", "continue",         # 0-2: mark, live
    "set *(unsigned char *)((char *)value + 1) = 2",     # 3
    "x/6xb value",                                       # 4
    "set var offset = 5000",                             # 5
    "set var bonus = 204",                               # 6: a 0xcc byte into data
    "print bonus",                                       # 7
    "continue",                                          # 8: bias_set
    "set var $rax = 70",                                 # 9
    "continue",                                          # 10: to the end
]
PAST = [
    "delete", "break *value", "reverse-continue",        # 11-13: the last call of value
    "bt 2",                                              # 14
    "print offset",                                      # 15
    "x/6xb value",                                       # 16
    "monitor replay status",                             # 17
    "print bonus",                                       # 18
    "delete", "break mark", "reverse-continue",          # 19-21: mark, where the writes were made
    "delete", "break *value", "reverse-continue",        # 22-24: the last call before them
    "bt 2",                                              # 25
    "x/6xb value",                                       # 26
    "print offset",                                      # 27
]
# An inferior call: gdb writes registers and an int3 byte on the stack.
# Then back across them to the first loop (the calls' pc moves are in the
# history as asynchronous transfers: before, reverse execution ended there).
CALL = ["break mark", "continue", "print (int) value()", "print (int) value() + 10", "continue"]
# gdb's `return` pops mark; back from the end across it (the client's pc
# move is in the history as an asynchronous transfer: before, reverse
# execution ended right after it).
RETURN = ["break mark", "continue", "return", "continue",                                       # 0-3
          "delete", "break mark", "reverse-continue",                                           # 4-6: mark
          "delete", "break *value", "reverse-continue", "bt 2"]                                  # 7-10

PATCHED = "0xb8\t0x02\t0x00\t0x00\t0x00\t0xc3"
ORIGINAL = "0xb8\t0x01\t0x00\t0x00\t0x00\t0xc3"


def main(args, c):
    before = marker_line("client_patch.c", "before")
    after = marker_line("client_patch.c", "after")
    for opt in ("O0", "O2"):
        prog = program("client_patch", opt)
        reference, ref_server = run_gdb_tcp("gdbserver", prog, [], COMMANDS)
        ref_ctx = reference.transcript() + "\n--- gdbserver stdout ---\n" + ref_server.stdout
        c.contains("%s: gdbserver reads the patched byte" % opt, reference.of(4), PATCHED, ref_ctx)
        c.contains("%s: gdbserver's 204" % opt, reference.of(7), "= 204", ref_ctx)
        ref_call, ref_call_server = run_gdb_tcp("gdbserver", prog, [], CALL)
        c.contains("%s: gdbserver's inferior call" % opt, ref_call.of(2), "= 1", ref_call.transcript())
        reference_call = "sum 2007"
        c.contains("%s: gdbserver's run after the calls" % opt, ref_call_server.stdout, reference_call,
                   ref_call.transcript())
        c.contains("%s: gdbserver runs the patched code" % opt, ref_server.stdout, "sum 8070", ref_ctx)
        if args.server != "btstub":
            continue
        for stops in ("translate", "int3"):
            what = "%s, --trace-stops=%s" % (opt, stops)
            result, server = run_gdb_tcp("btstub", prog, [], COMMANDS + PAST,
                                         options=("--once", "--record", "--trace-stops=" + stops))
            ctx = result.transcript() + "\n--- btstub stdout ---\n" + server.stdout + \
                "\n--- btstub stderr ---\n" + server.stderr
            c.contains("%s: the patched byte reads live" % what, result.of(4), PATCHED, ctx)
            c.contains("%s: a variable set to 204 (0xcc) reads back" % what, result.of(7), "= 204", ctx)
            c.contains("%s: the program ran the patched code, as under gdbserver" % what, server.stdout,
                       "sum 8070", ctx)
            c.matches("%s: back at the last call of value" % what, result.of(13), r"Breakpoint \d+, .*value", ctx)
            c.matches("%s: called from the second loop" % what, result.of(14),
                      r"#1 .*main \(\) at .*client_patch\.c:%d" % after, ctx)
            c.contains("%s: after the write, offset is what was written" % what, result.of(15), "= 5000", ctx)
            c.contains("%s: after the write, value's bytes are the patched ones" % what, result.of(16),
                       PATCHED, ctx)
            c.contains("%s: read from a copy" % what, result.of(17), "copy", ctx)
            c.contains("%s: after the register write, bonus is what bias returned" % what, result.of(18),
                       "= 70", ctx)
            c.matches("%s: back at mark" % what, result.of(21), r"Breakpoint \d+, .*mark", ctx)
            c.matches("%s: back at the last call before the writes" % what, result.of(24),
                      r"Breakpoint \d+, .*value", ctx)
            c.matches("%s: called from the first loop" % what, result.of(25),
                      r"#1 .*main \(\) at .*client_patch\.c:%d" % before, ctx)
            past = result.of(26)
            c.true("%s: before the write, value's bytes are the old ones or unavailable" % what,
                   ORIGINAL in past or "Cannot access memory" in past, past, ctx)
            past = result.of(27)
            c.true("%s: before the write, offset is 0 or unavailable" % what,
                   "= 0" in past or "unavailable" in past or "Cannot access" in past, past, ctx)
            call, call_server = run_gdb_tcp("btstub", prog, [], CALL,
                                            options=("--once", "--record", "--trace-stops=" + stops))
            call_ctx = call.transcript() + "\n--- btstub stdout ---\n" + call_server.stdout
            c.contains("%s: an inferior call answers (was refused)" % what, call.of(2), "= 1", call_ctx)
            c.contains("%s: a second one too" % what, call.of(3), "= 11", call_ctx)
            c.contains("%s: the program goes on as under gdbserver" % what, call_server.stdout,
                       reference_call, call_ctx)
            ret, ret_server = run_gdb_tcp("btstub", prog, [], RETURN,
                                          options=("--once", "--record", "--trace-stops=" + stops))
            ret_ctx = ret.transcript() + "\n--- btstub stdout ---\n" + ret_server.stdout
            c.matches("%s: back across the second loop and the return to mark" % what, ret.of(6),
                      r"Breakpoint \d+, .*mark", ret_ctx)
            c.matches("%s: back to the first loop's last call" % what, ret.of(9), r"Breakpoint \d+, .*value",
                      ret_ctx)
            c.matches("%s: called from the first loop" % what, ret.of(10),
                      r"#1 .*main \(\) at .*client_patch\.c:%d" % before, ret_ctx)

if __name__ == "__main__":
    run_test("test_client_code_write", main)
