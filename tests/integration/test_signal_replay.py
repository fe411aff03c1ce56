#!/usr/bin/env python3
"""A signal in the recorded past, going back and forward (signal_replay.c,
-O0 and -O2, `btstub --record`; found by a review session):

1. The present is not changed by going back: stopped live by SIGUSR1
   (`continue`), `reverse-stepi`, `continue` to the end of the history
   ("No more reverse-execution history"), `continue`: the program gets the
   signal it stood at, as without going back (it prints "handled 1" and
   exits with 1; gdbserver, the same commands without the reverse step,
   prints the same). Before, gdb's plain resume from the replay's end
   dropped it ("handled 0"). With `handle SIGUSR1 nopass` the signal is
   the client's to drop, going back or not ("handled 0", as gdbserver).
2. At -O0: a watchpoint replayed forward up to the signal's delivery: the search
   cannot re-run across it, and the `continue` that meets it stops
   ("Program stopped.") with the reason on the console, the thread where
   it was. Before, btstub answered the resume with an error, which gdb
   takes for a stop that keeps the last watchpoint's reason: it found the
   value unchanged and resumed again, forever.

3. A signal delivered where the thread stood at a breakpoint: stopped
   at the first mark(), gdb sends SIGUSR1 to the program (nostop, pass),
   `continue` to the second mark(): the signal is delivered at the first
   one's pc and the handler returns there (gdb's step over its breakpoint
   hides that visit). `reverse-continue` stops at that visit (handled 2,
   as record full does), the next one at the first mark() as the client
   stood there live (handled 1). Before, the cursor reported the delivery
   and went on past the breakpoint before it: the second reverse-continue
   ended at the start of the history.

4. A watched write that is the history's last instruction (watch_at_end.c:
   stopped live right after it): replayed forward, its change is
   reported, and the next live write's old value is the right one.
   Before, the forward continue said "No more reverse-execution history"
   and the change was never shown ("Old value = 2, New value = 4" next).
5. Without copies of the program (`--checkpoint-memory=0`) nothing tells
   where a watched value changed: a `continue` in the past with a
   watchpoint stops at once with the reason. Before, the watchpoint was
   taken and every change passed unseen.

    python3 test_signal_replay.py [--server gdbserver] [-v]
"""

from harness import debug_registers_trap, marker_line, program, run_gdb_tcp, run_test

SOURCE = "signal_replay.c"


def recorded(prog, commands, options=("--once", "--record"), timeout=90):
    """A gdb session over `btstub --record`: its result and the context a
    failed check prints."""
    result, server = run_gdb_tcp("btstub", prog, [], commands, options=options, timeout=timeout)
    return result, result.transcript() + "\n--- server stderr ---\n" + server.stderr


def exits(code):
    return "exited normally]" if code == "00" else "exited with code %s]" % code


def check_owed(args, c, opt, nopass):
    prog = program("signal_replay", opt)
    handled = "0" if nopass else "1"
    back = ["reverse-stepi", "continue"] if args.server == "btstub" else []
    commands = (["handle SIGUSR1 nopass"] if nopass else []) + ["continue"] + back + ["continue"] * 3
    options = ("--once", "--record") if args.server == "btstub" else ("--once",)
    result, server = run_gdb_tcp(args.server, prog, [], commands, options=options, timeout=120)
    ctx = result.transcript() + "\n--- server stdout ---\n" + server.stdout + "\n--- stderr ---\n" + server.stderr
    tag = "%s%s" % (opt, " nopass" if nopass else "")
    first = 1 if nopass else 0
    c.contains("%s: the live stop is SIGUSR1's" % tag, result.of(first), "received signal SIGUSR1", ctx)
    if back:
        c.contains("%s: forward again to the end of the history" % tag, result.of(first + 2),
                   "No more reverse-execution history", ctx)
    c.contains("%s: the program prints its count as natively" % tag, server.stdout,
               "watched 10 handled %s" % handled, ctx)
    c.true("%s: and exits with it" % tag,
           any(exits("0" + handled) in result.of(i) for i in range(len(commands))), ctx)


def check_watch(args, c, opt, checkpoints=True):
    if args.server != "btstub":
        return
    prog = program("signal_replay", opt)
    write = marker_line(SOURCE, "write")
    commands = [
        "handle SIGUSR1 nostop noprint pass",              # 0
        "break mark",                                      # 1
        "continue",                                        # 2
        "break %s:%d if k == 0" % (SOURCE, write),         # 3
        "reverse-continue",                                # 4
        "delete",                                          # 5
        "watch watched",                                   # 6
        "continue",                                        # 7
        "continue",                                        # 8
        "continue",                                        # 9
        "print watched",                                   # 10
        "kill",                                            # 11
    ]
    result, ctx = recorded(prog, commands, ("--once", "--record") + (() if checkpoints else ("--checkpoint-memory=0",)))
    c.contains("%s: back before the first write" % opt, result.of(4), "Breakpoint 2, main", ctx)
    if not checkpoints:
        opt += " without copies"
        c.contains("%s: the watch cannot be searched: the reason" % opt, result.of(7),
                   "btstub keeps no copies of the program", ctx)
        c.contains("%s: ... and a stop" % opt, result.of(7), "Program stopped.", ctx)
        c.contains("%s: the thread stayed where it was" % opt, result.of(9), "signal_replay.c:%d" % write, ctx)
        return
    c.matches("%s: the first write, replayed" % opt, result.of(7), r"(?s)Old value = 0\nNew value = 1", ctx)
    c.matches("%s: the second write, replayed" % opt, result.of(8), r"(?s)Old value = 1\nNew value = 3", ctx)
    c.contains("%s: the next one lies past the signal: the reason" % opt, result.of(9),
               "Cannot watch in this part of the recorded past", ctx)
    c.contains("%s: ... and a stop" % opt, result.of(9), "Program stopped.", ctx)
    c.contains("%s: the thread stayed where it was" % opt, result.of(10), "= 3", ctx)


def check_breakpoint_signal(args, c, opt):
    if args.server != "btstub":
        return
    prog = program("signal_replay", opt)
    commands = [
        "handle SIGUSR1 nostop noprint pass",                                               # 0
        "break mark",                                                                       # 1
        "continue",                                                                         # 2
        "print handled",                                                                    # 3
        "python import os, signal; os.kill(gdb.selected_inferior().pid, signal.SIGUSR1)",  # 4
        "continue",                                                                         # 5
        "print handled",                                                                    # 6
        "reverse-continue",                                                                 # 7
        "print handled",                                                                    # 8
        "reverse-continue",                                                                 # 9
        "print handled",                                                                    # 10
        "kill",                                                                             # 11
    ]
    result, ctx = recorded(prog, commands)
    tag = "%s signal at a breakpoint" % opt
    c.contains("%s: live at the first mark" % tag, result.of(2), "Breakpoint 1, ", ctx)
    c.contains("%s: handled once there" % tag, result.of(3), "= 1", ctx)
    c.contains("%s: live at the second mark" % tag, result.of(5), "Breakpoint 1, ", ctx)
    c.contains("%s: the signal was handled" % tag, result.of(6), "= 2", ctx)
    c.contains("%s: back at the first mark's pc after the handler" % tag, result.of(7), "Breakpoint 1, ", ctx)
    c.contains("%s: ... handled twice there" % tag, result.of(8), "= 2", ctx)
    c.contains("%s: back at the first mark as it stood live" % tag, result.of(9), "Breakpoint 1, ", ctx)
    c.contains("%s: ... handled once, as live" % tag, result.of(10), "= 1", ctx)


def check_watch_at_end(args, c, opt):
    if args.server != "btstub":
        return
    prog = program("watch_at_end", opt)
    line = marker_line("watch_at_end.c", "after_writes")
    commands = [
        "break watch_at_end.c:%d" % line,  # 0
        "continue",                         # 1
        "watch watched",                    # 2
        "reverse-continue",                 # 3
        "reverse-continue",                 # 4
        "continue",                         # 5
        "continue",                         # 6
        "print watched",                    # 7
        "continue",                         # 8
        "kill",                             # 9
    ]
    result, ctx = recorded(prog, commands)
    tag = "%s watch at the end" % opt
    c.matches("%s: back over the third write" % tag, result.of(3), r"(?s)Old value = 3\nNew value = 2", ctx)
    c.matches("%s: back over the second" % tag, result.of(4), r"(?s)Old value = 2\nNew value = 1", ctx)
    c.matches("%s: forward over the second" % tag, result.of(5), r"(?s)Old value = 1\nNew value = 2", ctx)
    # gdb prints the first of the stop's reasons by number: the breakpoint
    # at the live pc, as it does live when a watched write precedes it.
    c.matches("%s: forward over the third, the history's last instruction: a stop there" % tag, result.of(6),
              r"(?s)(Old value = 2\nNew value = 3|Breakpoint 1, main)", ctx)
    c.not_contains("%s: ... not the history's end" % tag, result.of(6), "No more reverse-execution history", ctx)
    c.contains("%s: the value there" % tag, result.of(7), "= 3", ctx)
    c.matches("%s: live on: the fourth write, from the right old value" % tag, result.of(8),
              r"(?s)Old value = 3\nNew value = 4", ctx)


def main(args, c):
    for opt in ("O0", "O2"):
        check_owed(args, c, opt, nopass=False)
        check_owed(args, c, opt, nopass=True)
        check_breakpoint_signal(args, c, opt)
    # Watches in the past run in a copy's debug registers; btstub refuses
    # Z2-Z4 where they never trap (test_watch checks that).
    if not debug_registers_trap():
        print("SKIP watchpoints across signals: debug registers never trap here (btstub --probe)")
        return
    # At -O2 the first two writes are one store: the replayed stops are
    # -O0's alone.
    check_watch(args, c, "O0")
    check_watch(args, c, "O0", checkpoints=False)
    for opt in ("O0", "O2"):
        check_watch_at_end(args, c, opt)


if __name__ == "__main__":
    run_test("test_signal_replay", main)
