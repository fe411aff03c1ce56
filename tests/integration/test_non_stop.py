#!/usr/bin/env python3
"""gdb's non-stop mode (`set non-stop on`) on tests/programs/non_stop.c,
gdb run interactively on a pseudo-terminal, the same session against
gdbserver (the reference) and the server under test:

- main stops at a breakpoint while the worker thread keeps running: `info
  threads` shows it "(running)" and its counter advances while main's
  memory is read;
- `interrupt` of the worker alone (vCont;t): it stops, its counter with it;
  `thread apply all bt` shows both threads;
- main continues alone: a short-lived thread starts and exits while the
  worker stays stopped;
- `continue -a &` runs both, `interrupt -a` stops both; Ctrl-C during
  `continue -a` stops the thread that takes the SIGINT;
- `continue -a` to the end: the worker exits, main hits its last
  breakpoint, then the process exits.

Normalised outputs must be identical to gdbserver's. Then btstub with
--record: non-stop mode is refused with its reason (docs/protocol.md).
A forking program in non-stop mode, with the fork child detached,
followed, or kept (detach-on-fork off): gdb's transcripts as with
gdbserver.

    python3 test_non_stop.py [--server gdbserver] [-v]
"""

import re
import time

import harness
from harness import Server, normalise, program, run_test, unified_diff
from pty_gdb import PtyGdb

PROMPT = r"^\(gdb\) "
STOPPED = r'Thread (\d+) "non_stop_O0" stopped\.'


def settle(gdb, seconds=0.3):
    """Reads what gdb prints asynchronously (a stop, a prompt again) so
    that the next command's output starts clean."""
    until = time.monotonic() + seconds
    while gdb._read(until):
        pass
    gdb._pending = ""


def ticks(c, label, text):
    m = c.matches(label, text, r"^\$\d+ = (\d+)$")
    return int(m.group(1)) if m else None


def frames_of_worker(lines):
    """The worker's frame in `info threads` depends on where the interrupt
    caught it (tick, worker or inside usleep): only that it is not running
    is compared."""
    out = []
    for line in lines:
        m = re.match(r'^(\*? *2 +Thread PID\.TID "non_stop_O0" +)(.*)$', line)
        if m and m.group(2) != "(running)":
            line = m.group(1) + "<stopped somewhere>"
        out.append(line)
    return out


def session(c, gdb, label):
    """Runs the script; returns {name: output} of the compared commands."""
    out = {}
    gdb.expect(PROMPT, 30)
    gdb.command("break main_stop")
    out["continue to main_stop"] = gdb.command("continue", 30)
    out["info threads, worker running"] = gdb.command("info threads")
    c.matches(label + "worker shown running", out["info threads, worker running"],
              r'^ +2 +Thread \d+\.\d+ "non_stop_O0" +\(running\)$')
    first = ticks(c, label + "counter read while the worker runs", gdb.command("print ticks"))
    time.sleep(0.4)
    second = ticks(c, label + "counter read again", gdb.command("print ticks"))
    c.true(label + "the worker runs while main is stopped",
           first is not None and second is not None and second > first,
           "ticks %r then %r" % (first, second))

    out["thread 2"] = gdb.command("thread 2")
    gdb.command("interrupt")
    gdb.expect(STOPPED, 15)
    settle(gdb)
    out["info threads, both stopped"] = gdb.command("info threads")
    bt = gdb.command("thread apply all bt")
    c.matches(label + "bt of main", bt, r"^#0 +main_stop \(\) at .*non_stop\.c:\d+$")
    c.matches(label + "bt of the worker", bt, r"^#\d+ +0x[0-9a-f]+ in worker \(arg=0x0\) at .*non_stop\.c:\d+$|"
              r"^#\d+ +worker \(arg=0x0\) at .*non_stop\.c:\d+$")
    out["thread apply 1 bt"] = gdb.command("thread apply 1 bt")
    stopped = ticks(c, label + "counter after interrupt", gdb.command("print ticks"))
    time.sleep(0.3)
    still = ticks(c, label + "counter a while later", gdb.command("print ticks"))
    c.true(label + "the interrupted worker stays stopped", stopped is not None and stopped == still,
           "ticks %r then %r" % (stopped, still))

    gdb.command("thread 1")
    gdb.command("break main_joined")
    out["continue main alone"] = gdb.command("continue", 30)
    c.matches(label + "main reached main_joined", out["continue main alone"],
              r"hit Breakpoint 2, main_joined \(\)")
    out["info threads after the short thread"] = gdb.command("info threads")
    after = ticks(c, label + "counter after main ran", gdb.command("print ticks"))
    c.true(label + "the worker stayed stopped while main ran", after == still,
           "ticks %r then %r" % (still, after))

    gdb.command("continue -a &")
    settle(gdb)
    running = gdb.command("info threads")
    c.true(label + "continue -a & runs both threads", running.count("(running)") == 2, running)
    gdb.command("interrupt -a")
    gdb.expect(STOPPED, 15)
    gdb.expect(STOPPED, 15)
    settle(gdb)
    resumed = ticks(c, label + "counter after continue -a", gdb.command("print ticks"))
    c.true(label + "the worker ran during continue -a", resumed is not None and after is not None and resumed > after,
           "ticks %r then %r" % (after, resumed))
    out["info threads after interrupt -a"] = gdb.command("info threads")

    # Ctrl-C during a foreground `continue -a` (vCtrlC): the program gets
    # SIGINT, the thread that takes it stops, the other runs on.
    gdb.send("continue -a\n")
    gdb.expect(r"^Continuing\.", 15)
    time.sleep(0.3)
    gdb.send("\x03")
    gdb.expect(r'Thread \d+ "non_stop_O0" received signal SIGINT, Interrupt\.', 15)
    settle(gdb)
    gdb.command("interrupt -a")
    gdb.expect(STOPPED, 15)
    settle(gdb)
    after_ctrl_c = gdb.command("info threads")
    c.true(label + "Ctrl-C then interrupt -a leave no thread running", "(running)" not in after_ctrl_c,
           after_ctrl_c)

    gdb.command("set var stop_worker = 1")
    gdb.command("delete")
    gdb.command("break main_done")
    gdb.command("thread 1")
    out["continue -a to main_done"] = gdb.command("continue -a", 30)
    c.matches(label + "main reached main_done", out["continue -a to main_done"],
              r"hit Breakpoint \d+, main_done \(\)")
    out["info threads, worker gone"] = gdb.command("info threads")
    out["continue to the exit"] = gdb.command("continue", 30)
    c.matches(label + "the program exits", out["continue to the exit"],
              r"\[Inferior 1 \(process \d+\) exited normally\]")
    if harness.VERBOSE:
        print(gdb.log)
    return out


def compared(output):
    lines = normalise(output)
    # gdb's thread numbers for the short-lived thread and which stop
    # message comes first are timing, not the server's doing.
    lines = [l for l in lines if not re.match(r"^\[(New )?Thread PID\.TID.*\]$", l)]
    # main waits in pthread_join for the worker: its futex holds the tid.
    lines = [re.sub(r"expected=\d+", "expected=TID", l) for l in lines]
    return frames_of_worker(lines)


def record_refused(c):
    prog = program("non_stop")
    with Server("btstub", [prog], options=("--once", "--record")) as server:
        result = harness.run_gdb(["info threads"], prog, server.address,
                                 extra_init=["set non-stop on"])
    c.contains("--record: non-stop refused with the reason", result.output,
               "Remote refused setting non-stop mode with: E.Non-stop mode is not supported while "
               "btstub records branches")


def check_forks(c, server_kind):
    """A program that forks and vforks, in non-stop mode, with each way gdb
    treats a fork child: detached at once (the default), followed
    (follow-fork-mode child), kept as a second inferior (detach-on-fork
    off). gdb's transcript must equal gdbserver's."""
    prog = program("forker")
    commands = ["break shared_work", "continue", "info inferiors", "info threads", "continue",
                "info threads", "continue", "info threads", "continue"]
    for mode in ("set follow-fork-mode parent", "set follow-fork-mode child", "set detach-on-fork off"):
        outputs = {}
        for kind in ("gdbserver", server_kind):
            with Server(kind, [prog]) as server:
                result = harness.run_gdb(commands, prog, server.address, extra_init=["set non-stop on", mode])
            outputs[kind] = [re.sub(r"127\.0\.0\.1:\d+", "ADDRESS", line) for line in normalise(result.output)]
        c.true("fork, non-stop, %s: same as gdbserver" % mode, outputs["gdbserver"] == outputs[server_kind],
               unified_diff(outputs["gdbserver"], outputs[server_kind], "gdbserver", server_kind))
        c.true("fork, non-stop, %s: the fork was seen" % mode,
               any("fork" in line for line in outputs[server_kind]), "\n".join(outputs[server_kind]))


def main(args, c):
    check_forks(c, args.server)
    prog = program("non_stop")
    outputs = {}
    for kind in ("gdbserver", args.server):
        with Server(kind, [prog]) as server, \
                PtyGdb(prog, ["set non-stop on", "target remote " + server.address]) as gdb:
            outputs[kind] = session(c, gdb, kind + ": ")
            gdb.send("quit\n")
    ref, test = outputs["gdbserver"], outputs[args.server]
    for name in ref:
        a, b = compared(ref[name]), compared(test.get(name, ""))
        c.true("same as gdbserver: " + name, a == b, unified_diff(a, b, "gdbserver", args.server))
    if args.server == "btstub":
        record_refused(c)


if __name__ == "__main__":
    run_test("test_non_stop", main)
