#!/usr/bin/env python3
"""A program that takes SIGTRAP itself keeps its handler under --record.

sigtrap_handler.c (O0, O2): a SIGTRAP handler (no SA_NODEFER: SIGTRAP is
blocked while it runs) for three raise(SIGTRAP)s; SIGTRAP blocked by
sigprocmask over a loop (the mask read back there), then unblocked and
raised; then SIGTRAP ignored and raised three times; it prints what it
saw, the disposition it reads back and whether its mask blocks SIGTRAP.

From main on gdb passes SIGTRAP on (`handle SIGTRAP nostop noprint
pass`) and continues to the end, under gdbserver (the reference: no trap of its own
meets the program), btstub without recording, and btstub under `--record`
with both tracers (`--trace-stops=int3` and `translate`). Each prints what
the program prints natively and ends normally. Recorded, the history runs
back from the end through the three ignored raises (i as it was) into the
handler's fourth run (hits 3, before its increment).

Before, under --record the second raise killed the program: a trap of
the tracer's (a step, an int3) inside the handler reached the kernel as
a forced SIGTRAP while SIGTRAP was blocked, and the kernel unblocked it
and reset the handler to SIG_DFL (force_sig_info_to_task); and any trap
reset the ignored SIGTRAP to SIG_DFL too (ptrace_trap_guard.cc).

    python3 test_sigtrap_handler.py [-v]
"""

import shlex

from harness import marker_line, program, run_gdb, run_test, server_path, stdio_target

NATIVE = (["handled %d: %d" % (i, i) for i in (1, 2, 3)] +
          ["blocked: mask blocks trap 1", "unblocked: hits 4"] +
          ["ignored %d" % i for i in (1, 2, 3)] +
          ["disposition ignore", "mask blocks trap 0"])


def main(args, c):
    for opt in ("O0", "O2"):
        prog = program("sigtrap_handler", opt)
        runs = [("gdbserver", stdio_target("gdbserver", prog, []))]
        if args.server == "btstub":
            btstub = server_path("btstub")
            runs.append(("btstub", stdio_target("btstub", prog, [])))
            for mode in ("int3", "translate"):
                runs.append(("btstub --record --trace-stops=" + mode,
                             "| " + shlex.join([btstub, "--record", "--trace-stops=" + mode, "-", prog])))
        for name, target in runs:
            label = "%s, %s" % (opt, name)
            # From main on (a `continue` from a stop with SIGTRAP passes
            # that SIGTRAP on: `signal 0` does not).
            commands = ["tbreak main", "continue", "handle SIGTRAP nostop noprint pass", "signal 0"]
            recording = "--record" in name
            if recording:
                # Back from the end through the ignored raises (each in the
                # history as it ran: i as live) into the handler's last run.
                commands += ["break sigtrap_handler.c:%d" % marker_line("sigtrap_handler.c", "ignored_print")]
                commands += ["reverse-continue", "print i"] * 3
                commands += ["delete", "break on_trap", "reverse-continue", "print hits"]
            result = run_gdb(commands, prog, target=target)
            out = result.output
            if recording:
                for n, want in ((6, 3), (8, 2), (10, 1)):
                    c.contains("%s: back at the ignored raise with i == %d" % (label, want), result.of(n - 1),
                               "sigtrap_handler.c:%d" % marker_line("sigtrap_handler.c", "ignored_print"),
                               out[-3000:])
                    c.equal("%s: ... i read from the past" % label, "%d" % want,
                            result.of(n).strip().split("= ", 1)[-1], out[-3000:])
                c.contains("%s: back in the handler's fourth run" % label, result.of(13), "on_trap", out[-3000:])
                c.equal("%s: ... hits is 3 there" % label, "3", result.of(14).strip().split("= ", 1)[-1],
                        out[-3000:])
            for line in NATIVE:
                c.contains("%s: prints %r as natively" % (label, line), out, line, out[-3000:])
            # Under --record btstub holds the program at its exit_group.
            c.true("%s: the program ran to its end" % label,
                   "exited normally" in out or "_exit (" in out, "", out[-3000:])
            c.true("%s: no SIGTRAP ended it" % label, "terminated with signal SIGTRAP" not in out, "",
                   out[-3000:])


if __name__ == "__main__":
    run_test("test_sigtrap_handler", main)
