#!/usr/bin/env python3
"""vfork children of a recorded program (tests/programs/spawner.c).

spawner.c starts children the four ways that go through vfork: vfork+exec,
system(), posix_spawn and popen. Each child shares the parent's memory until
it execs, and with it the int3s the branch tracer keeps there under
`--trace-stops=int3`: a child meeting one died of SIGTRAP (system()
returned 5, nothing printed). btstub takes them out at the vfork and puts
them back at the parent's vforkdone (stub/process/ptrace_fork.cc).

Each scenario runs the same gdb script against gdbserver (the reference)
and against `btstub --record --trace-stops=MODE`:

1. Every mode (int3, debugreg, step), spawner with and without a second
   thread that runs branchy work throughout (held while a child has the
   memory): the program's output (each child's line and status, "work x")
   equals gdbserver's, gdb's vfork notices ("[Detaching after vfork from
   child process N]") are the same, and the program exits normally (under
   --record after the stop before exit_group).
   (Under the sanitizers, here and in 3., the translating tracer and one
   other mode per case: harness.case_modes.)
   The same under int3 with gdb not offering vfork-events+ (`set remote
   vfork-event-feature-packet off`): btstub lets each child go at once and
   holds the other thread itself until the parent's vforkdone.
2. `catch vfork` (int3): the four catchpoint stops equal gdbserver's, the
   program output too.
3. The history of the parent across the vforks, every mode: at the line
   after system(), `reverse-next` goes back to the system() line (where
   gdb's own record full would land: it cannot record clone3 itself),
   another `reverse-next` to the line before, back over the vfork+exec's
   fflush, and two `next`s forward again through the history to the line
   after system(); `print r` there is 0; then the program runs to its end
   with the same output.
4. `set detach-on-fork off`, `set schedule-multiple on` (int3): gdb keeps
   the vfork+exec child as inferior 2, which execs echo and exits; the
   parent then hits a breakpoint after waitpid with status 0. The stops
   equal btstub's without recording (the parent's frame when gdb switches
   back to it is left out: where it stands then is the scheduler's). Not
   compared with gdbserver, whose exec'd child stops with a SIGSTOP here.
5. `set follow-fork-mode child` (int3): gdb follows the vfork+exec child
   and detaches the parent after the exec; the stops equal gdbserver's and
   the detached parent runs to its end with every child's output (a trace
   int3 left in its memory would kill it).

    python3 test_vfork_record.py [--server gdbserver] [-v]
"""

import re

from harness import (Server, case_modes, debug_registers_trap, marker_line, normalise, program, run_gdb, run_gdb_tcp,
                     run_test, source_line, unified_diff, wait_until)

ALL_MODES = ("translate", "int3", "debugreg", "step")


def modes():
    """Every mode this machine can run: debugreg only where debug registers
    trap (btstub --probe; elsewhere btstub refuses it, test_cli_trace)."""
    if debug_registers_trap():
        return ALL_MODES
    print("SKIP --trace-stops=debugreg: debug registers never trap here", flush=True)
    return tuple(m for m in ALL_MODES if m != "debugreg")
OUTPUT = ("vfork child\nvfork status 0\nsystem child\nsystem status 0\nspawn child\n"
          "spawn 0 status 0\npopen read popen child\npopen status 0\n")
THREADED_OUTPUT = OUTPUT + "work x\n"
NOTICE = re.compile(r"^\[Detaching after vfork from child process PID\]$")


def options(kind, mode):
    return ("--once", "--record", "--trace-stops=" + mode) if kind == "btstub" else ("--once",)


def both(kind, mode, prog, args, commands, timeout=120):
    """(gdbserver's result and server, `kind`'s result and server)."""
    ref = run_gdb_tcp("gdbserver", prog, args, commands, timeout=timeout)
    test = run_gdb_tcp(kind, prog, args, commands, options=options(kind, mode), timeout=timeout)
    return ref, test


def context(result, server):
    return result.transcript() + "\n--- server stdout ---\n" + server.stdout


def notices(result):
    return [l for l in normalise(result.output) if NOTICE.match(l)]


def plain_runs(c, kind, prog):
    # Recorded: the stop before exit_group, the held end, the exit.
    commands = ["continue"] * 3
    for i, (args, expected) in enumerate((([], OUTPUT), (["x"], THREADED_OUTPUT))):
        # gdbserver's run, once for every mode: what it prints and gdb's
        # notices do not depend on btstub's tracer.
        ref, ref_server = run_gdb_tcp("gdbserver", prog, args, commands, timeout=120)
        for mode in case_modes(modes(), i):
            label = "--trace-stops=%s%s" % (mode, ", two threads" if args else "")
            test, server = run_gdb_tcp(kind, prog, args, commands, options=options(kind, mode), timeout=120)
            ctx = context(test, server)
            c.equal("%s: the program's output (children and statuses) as under gdbserver" % label,
                    ref_server.stdout, server.stdout, ctx)
            c.equal("%s: every child ran and exited 0" % label, expected, server.stdout, ctx)
            c.true("%s: gdb's vfork notices as under gdbserver" % label,
                   len(notices(ref)) == 4 and notices(ref) == notices(test),
                   unified_diff(notices(ref), notices(test), "gdbserver", kind))
            c.contains("%s: the program exits normally" % label, test.output, "exited normally]", ctx)


def without_vfork_events(c, kind, prog):
    """gdb not offering vfork-events+: btstub lets each child go at once and
    holds the other threads itself until the vforkdone it asks for."""
    init = ["set remote vfork-event-feature-packet off"]
    for args, expected in (([], OUTPUT), (["x"], THREADED_OUTPUT)):
        label = "no vfork events%s" % (", two threads" if args else "")
        outputs = {}
        for k in ("gdbserver", kind):
            server = Server(k, [prog] + args, options=options(k, "int3"))
            try:
                result = run_gdb(["continue"] * 3, prog, server.address, timeout=120, extra_init=init)
                server.wait_exit(10.0)
            finally:
                server.stop()
            outputs[k] = server.stdout
        ctx = context(result, server)
        c.equal("%s: the program's output as under gdbserver" % label, outputs["gdbserver"], outputs[kind], ctx)
        c.equal("%s: every child ran and exited 0" % label, expected, outputs[kind], ctx)
        c.contains("%s: the program exits normally" % label, result.output, "exited normally]", ctx)


def catch_stops(result):
    """From the first continue to the last catchpoint stop, normalised."""
    lines = normalise(result.transcript().split("--- preamble ---", 1)[1])
    begin = next((i for i, l in enumerate(lines) if l == "(gdb) continue"), 0)
    end = max((i for i, l in enumerate(lines) if l.startswith("Catchpoint 1 ")), default=len(lines) - 1)
    return lines[begin:end + 2]


def catch_vfork(c, kind, prog):
    commands = ["catch vfork"] + ["continue"] * 4 + ["delete", "continue", "continue"]
    (ref, ref_server), (test, server) = both(kind, "int3", prog, [], commands)
    ctx = context(test, server)
    c.true("catch vfork: four catchpoint stops", test.output.count("Catchpoint 1 (vforked process") == 4, ctx)
    c.true("catch vfork: the same stops as under gdbserver", catch_stops(ref) == catch_stops(test),
           unified_diff(catch_stops(ref), catch_stops(test), "gdbserver", kind))
    c.equal("catch vfork: the program's output", OUTPUT, server.stdout, ctx)


def history(c, kind, prog):
    after = marker_line("spawner.c", "after_system")
    commands = ["break %d" % after, "continue", "reverse-next", "reverse-next", "next", "next", "print r",
                "delete", "continue", "continue", "continue"]
    system_line = source_line("spawner.c", "system_call")
    for mode in case_modes(modes(), 2):
        if kind != "btstub":
            c.true("--trace-stops=%s: btstub's own recording (skipped for %s)" % (mode, kind), True)
            continue
        result, server = run_gdb_tcp(kind, prog, [], commands, options=options(kind, mode), timeout=120)
        ctx = context(result, server)
        label = "--trace-stops=%s" % mode
        c.contains("%s: the breakpoint after system()" % label, result.of(1), "%d\t" % after, ctx)
        c.true("%s: reverse-next goes back to the system() line" % label,
               result.of(2).rstrip("\n").endswith(system_line), ctx)
        c.true("%s: reverse-next again to the line before, fflush" % label,
               result.of(3).rstrip("\n").endswith("%d\t  fflush(stdout);" % (marker_line("spawner.c", "system_call") - 2)),
               ctx)
        c.true("%s: next forward through the history to the system() line" % label,
               result.of(4).rstrip("\n").endswith(system_line), ctx)
        c.contains("%s: and past it to the line after" % label, result.of(5), "%d\t" % after, ctx)
        c.value("%s: system() returned 0" % label, result.of(6), "0")
        c.equal("%s: the program's output" % label, OUTPUT, server.stdout, ctx)
        c.contains("%s: the program exits normally" % label, result.output, "exited normally]", ctx)


FRAME = re.compile(r"^(#0 |\d+\t|\[Switching to thread )")
PORT = re.compile(r"remote 127\.0\.0\.1:\d+")


def kept_child_stops(result):
    lines = normalise(result.transcript().split("--- preamble ---", 1)[1])
    return [PORT.sub("remote PORT", l) for l in lines
            if not FRAME.match(l) and not l.startswith(("Reading ", "warning: "))]


def detach_on_fork_off(c, kind, prog):
    wait_line = marker_line("spawner.c", "vfork_status")
    commands = ["set detach-on-fork off", "set schedule-multiple on", "break %d" % wait_line, "continue",
                "info inferiors", "inferior 1", "continue", "print status"]
    if kind != "btstub":
        c.true("detach-on-fork off: btstub's own recording (skipped for %s)" % kind, True)
        return
    ref, _ = run_gdb_tcp(kind, prog, [], commands)
    test, server = run_gdb_tcp(kind, prog, [], commands, options=options(kind, "int3"), timeout=120)
    ctx = context(test, server)
    c.contains("detach-on-fork off: the child execs echo", test.of(3), "is executing new program: ", ctx)
    c.contains("detach-on-fork off: the child exits", test.of(3), "[Inferior 2 (process ", ctx)
    c.contains("detach-on-fork off: the parent goes on to the breakpoint", test.of(6), "%d\t" % wait_line, ctx)
    c.value("detach-on-fork off: the child's status", test.of(7), "0")
    c.true("detach-on-fork off: the same stops as without recording",
           kept_child_stops(ref) == kept_child_stops(test),
           unified_diff(kept_child_stops(ref), kept_child_stops(test), "without recording", "--record"))


def follow_child(c, kind, prog):
    commands = ["set follow-fork-mode child", "continue"]
    stops = {}
    for k in ("gdbserver", kind):
        server = Server(k, [prog], options=options(k, "int3"))
        try:
            result = run_gdb(commands, prog, server.address, timeout=120)
            # The detached parent runs on by itself: wait for its last line.
            wait_until(lambda: "popen status" in server.stdout, 30.0)
        finally:
            server.stop()
        stops[k] = kept_child_stops(result)
    ctx = context(result, server)
    c.contains("follow-fork-mode child: gdb follows the vfork child", result.of(1),
               "[Attaching after Thread ", ctx)
    c.contains("follow-fork-mode child: the child exits", result.of(1), "[Inferior 2 (process ", ctx)
    c.true("follow-fork-mode child: the same stops as under gdbserver", stops["gdbserver"] == stops[kind],
           unified_diff(stops["gdbserver"], stops[kind], "gdbserver", kind))
    c.equal("follow-fork-mode child: the detached parent ran to its end", OUTPUT, server.stdout, ctx)


def main(args, c):
    prog = program("spawner")
    plain_runs(c, args.server, prog)
    without_vfork_events(c, args.server, prog)
    catch_vfork(c, args.server, prog)
    history(c, args.server, prog)
    detach_on_fork_off(c, args.server, prog)
    follow_child(c, args.server, prog)


if __name__ == "__main__":
    run_test("test_vfork_record", main)
