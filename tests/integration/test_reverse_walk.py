#!/usr/bin/env python3
"""Native reverse execution: plain gdb (no `record` on the gdb side) walks
backwards through btstub's recorded history, and visits exactly what gdb's
own `record full` visits.

reverse_walk.c is recorded from main to MARK main_print (`monitor record
start` at the first stop, so the recorded range stays small). Then one
script of reverse-stepi, reverse-step, reverse-next, reverse-finish and
reverse-continue (with and without breakpoints), and forward continue
through the history, runs twice, at -O0 and at -O2 (a breakpoint on the
first recorded instruction is the start of history, as in record full):

  reference  gdb runs the program itself with `record full` started at the
             same place (no server);
  subject    gdb -> btstub --record history (or, with --server gdbserver,
             gdb -> gdbserver with `record full` on the gdb side: proves the
             comparison itself).

After every motion a probe prints (pc, function, line) and the names of the
frames of `bt`; the two sequences must be equal. Then: running out of
history prints "No more reverse-execution history.", going forward reaches
the live end the same way, and the live program runs on to its normal exit.

    python3 test_reverse_walk.py [--server gdbserver] [-v]
"""

import harness
from harness import (GDB_PRELUDE, Server, gdb_path, marker_line, program,
                     run_command, run_test)

SOURCE = "reverse_walk.c"

# One line of Python per probe; defined once through `python exec`.
PROBE_DEFINITION = (
    "python exec(\"def btstub_probe(tag):\\n"
    "  f = gdb.selected_frame()\\n"
    "  sal = f.find_sal()\\n"
    "  names = []\\n"
    "  g = f\\n"
    "  while g is not None and len(names) < 12:\\n"
    "    names.append(str(g.name()))\\n"
    "    try:\\n"
    "      g = g.older()\\n"
    "    except gdb.error:\\n"
    "      g = None\\n"
    "  print('PROBE %s pc=%#x func=%s line=%s frames=%s' % "
    "(tag, f.pc(), f.name(), sal.line, ','.join(names)))\\n\")"
)

NO_HISTORY = "No more reverse-execution history."


def walk_commands():
    """The reverse walk, after the program stopped live at main_print.

    Returns a list of gdb commands; each motion is followed by a probe."""
    square = marker_line(SOURCE, "square_body")
    report = marker_line(SOURCE, "report_body")
    motions = [
        "reverse-stepi", "reverse-stepi", "reverse-stepi",
        "reverse-step",              # into report's body
        "reverse-step",              # back to main's call of report
        "reverse-next",              # over depth()
        "reverse-step",              # into depth's last line
        "reverse-step", "reverse-step", "reverse-step",
        "reverse-finish",            # out to the calling depth frame
        "reverse-next",
        "reverse-finish",
        "reverse-stepi",
        "break %d" % square,
        "reverse-continue",          # square(3)
        "reverse-continue",          # square(2)
        "reverse-finish",            # into sum_squares' loop
        "reverse-next",
        "delete",
        "reverse-continue",          # to the start of history
        "reverse-stepi",             # nothing older
        "stepi", "stepi",
        "break main",                # the first recorded instruction:
        "reverse-continue",          # the start of history, not a breakpoint
        "delete",
        "break %d" % report,
        "continue",                  # forward through the history to report
        "stepi",
        "continue",                  # the live end: no more history
    ]
    commands = []
    for i, motion in enumerate(motions):
        commands.append(motion)
        if not motion.startswith(("break", "delete")):
            commands.append("python btstub_probe('%d:%s')" % (i, motion))
    return commands


def setup_commands(opt, record_cmd):
    """From the first stop in main: start recording, run to main_print."""
    return [
        PROBE_DEFINITION,
        "break main",
        None,  # replaced: run (native) or continue (remote)
        record_cmd,
        "break %d" % marker_line(SOURCE, "main_print"),
        "continue",
        "delete",
        "python btstub_probe('live')",
    ]


def run_script(commands, prog, target=None):
    argv = [gdb_path(), "-batch", "-nx", "-q", "-iex",
            "set debuginfod enabled off"]
    for line in GDB_PRELUDE:
        argv += ["-ex", line]
    argv.append(prog)
    if target:
        argv += ["-ex", "target remote " + target]
    for cmd in commands:
        argv += ["-ex", cmd]
    status, out, err = run_command(argv, timeout=240, env=harness.gdb_environment())
    # A reference run that shows gdb 13.1's XSAVE fault raises
    # BrokenReference here (reference.py).
    result = harness.checked_result(argv, [], out + err, status, target)
    return status, result.output


def probes(text):
    return [line for line in text.splitlines() if line.startswith("PROBE ")]


def reference(prog):
    cmds = setup_commands(None, "record full")
    cmds[2] = "run"
    # record full would stop the program at its exit syscall: the live run
    # to the end is checked on the subject only.
    return run_script(cmds + walk_commands(), prog)


def subject(kind, prog):
    record_cmd = "monitor record start" if kind == "btstub" else "record full"
    cmds = setup_commands(None, record_cmd)
    cmds[2] = "continue"
    # Live again: a step, then on to the normal exit.
    tail = ["python print('AFTER-LIVE')"]
    tail += ["monitor replay status"] if kind == "btstub" else []
    tail += ["stepi",
             "python btstub_probe('live-step')", "continue"]
    # Recorded by btstub, the program stops before its exit_group as under
    # record full, its end is held at the next continue, and it exits at
    # the one after.
    tail += ["python print('BEFORE-EXIT')", "continue", "python print('HELD')", "continue"] \
        if kind == "btstub" else []
    if kind == "gdbserver":
        tail = ["record stop"] + tail
    options = ("--once",)
    with Server(kind, [prog], options=options) as server:
        status, text = run_script(cmds + walk_commands() + tail, prog,
                                  server.address)
        server.wait_exit(10.0)
    # The program's own output goes to the server's stdout.
    return status, text, server.stdout


def check(kind, opt, c):
    prog = program("reverse_walk", opt)
    ref_status, ref_text = reference(prog)
    c.equal("%s: reference gdb exits 0" % opt, 0, ref_status, ref_text)
    sub_status, sub_text, program_output = subject(kind, prog)
    c.equal("%s: gdb exits 0" % opt, 0, sub_status, sub_text)
    expected, actual = probes(ref_text), probes(sub_text)
    c.true("%s: reference has probes" % opt, len(expected) > 20, ref_text)
    after = sub_text.split("AFTER-LIVE")[-1]
    c.matches("%s: a live step after the history" % opt, after,
              r"PROBE live-step pc=0x[0-9a-f]+ func=main ")
    c.lines("%s: (pc, function, line, frames) at every stop" % opt,
            "\n".join(actual), expected, sub_text)
    c.equal("%s: history runs out the same number of times" % opt,
            ref_text.count(NO_HISTORY), sub_text.count(NO_HISTORY), sub_text)
    c.true("%s: history ran out going back and forward" % opt,
           sub_text.count(NO_HISTORY) >= 2, sub_text)
    c.contains("%s: live again: the program prints its result" % opt, program_output, "total 17")
    ending = after
    if kind == "btstub":
        before_exit, _, ending = after.partition("BEFORE-EXIT")
        c.contains("%s: stops before exit_group" % opt, before_exit, "Program stopped.")
        held, _, ending = ending.partition("HELD")
        c.contains("%s: the end is held" % opt, held, "Program received signal SIGKILL")
    c.matches("%s: and exits normally" % opt, ending,
              r"\[Inferior 1 \(process \d+\) exited normally\]")
    if kind == "btstub":
        c.matches("%s: monitor replay status: live" % opt, after, r"Not replaying")


def main(args, c):
    for opt in ("O0", "O2"):
        check(args.server, opt, c)


if __name__ == "__main__":
    run_test("test_reverse_walk", main)
