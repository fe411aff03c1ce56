#!/usr/bin/env python3
"""The recorded history outlives the program's end.

Under btstub's own recording (`--record`, or `monitor record start`) a
program that ends (exit_group, its last thread's exit, or a fatal signal)
is held where it ends, reported as SIGKILL (as rr reports the end of a
recording), with its memory and registers still there: reverse commands
walk back from the end until the client lets it go (`continue`), kills it
or detaches. Checked on real programs:

- exit_paths.c (exits from a nested call): after the exit_group stop, the
  next `continue` holds the end; reverse-stepi lands where gdb's own
  record full stops before exit_group, and the walk back from there
  (probes: pc, frames, a global, a local, an argument) equals record
  full's, natively on the same program. Then forward to the end of the
  history, and `continue` ends the program with its status. The program
  and its checkpoint copies are counted at the end and after it.
- crash.c (SIGSEGV): the death is held at the faulting instruction,
  values there are the program's, and the final `continue` ends it with
  the signal, as gdbserver reports it without recording.
- thread_ends.c `alone` (main joins its thread, then exits: held) and
  `group` (a second thread ends the process: not held, the exit reported
  as gdbserver does).
- `kill` and `detach` at the held end leave no process behind;
  `monitor record start` holds the end as `--record` does.

Both sides run the programs with the GLIBC_TUNABLES that keep glibc off
the AVX-512 string functions record full cannot record.

    python3 test_past_exit.py [-v]
"""

import re
import shlex

from harness import marker_line, program, run_gdb, run_test, server_path
from test_past_watch import own_recording_against_record_full

PROBE = ("python exec(\"def probe(tag, *exprs):\\n"
         "  f = gdb.selected_frame()\\n"
         "  names = []\\n"
         "  g = f\\n"
         "  while g is not None and len(names) < 8:\\n"
         "    names.append(str(g.name()))\\n"
         "    g = g.older()\\n"
         "  vals = []\\n"
         "  for e in exprs:\\n"
         "    try:\\n"
         "      vals.append('%s=%s' % (e, gdb.parse_and_eval(e)))\\n"
         "    except gdb.error as err:\\n"
         "      vals.append('%s=<%s>' % (e, err))\\n"
         "  print('PROBE %s pc=%#x frames=%s %s' % (tag, f.pc(), ','.join(names), ' '.join(vals)))\\n\")")


def count_command(prog):
    """A gdb command printing how many processes run `prog` (the program
    and btstub's copies of it; zombies show as [name] and do not count)
    below this gdb (the shell's parent): other tests that run the same
    program at the same time (ctest -j2: test_translate_differential
    records exit_paths with its copies) are not counted."""
    return ("shell ps -eo pid=,ppid=,args= | awk -v root=$PPID -v prog='%s' "
            "'BEGIN {n = 0} {pp[$1] = $2; a = $3; for (i = 4; i <= NF; i++) a = a \" \" $i; args[$1] = a} "
            "END {for (p in args) if (args[p] == prog) {q = pp[p]; while (q > 1 && q != root) q = pp[q]; "
            "if (q == root) n++} print n}'" % prog)


def probes(text):
    return [l for l in text.splitlines() if l.startswith("PROBE ")]


def exit_walk():
    """From record full's exit stop (btstub: one reverse-stepi from the held end)."""
    return ["python probe('exit-stop', 'steps')",
            "reverse-finish", "python probe('reverse-finish', 'steps')",
            "break exit_paths.c:%d" % marker_line("exit_paths.c", "exit_call"), "reverse-continue",
            "python probe('exit_call', 'steps', 'code')",
            "reverse-stepi", "python probe('stepi', 'steps', 'code')",
            "delete", "continue", "python probe('end', 'steps')"]


def exit_paths(c, opt):
    prog = program("exit_paths", opt)
    reference = run_gdb([PROBE, "break main", "run", "record full", "continue"] + exit_walk(), prog, timeout=120)
    target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog])
    subject = run_gdb([PROBE, "continue", "continue", "python probe('held', 'steps')", count_command(prog),
                       "reverse-stepi"] + exit_walk() + ["continue", count_command(prog)], prog, target, timeout=120)
    tag = "exit_paths %s: " % opt
    c.contains(tag + "the first continue stops before exit_group", subject.of_command("continue", 0),
               "Program stopped.", subject.transcript())
    c.contains(tag + "the next continue holds the end, as SIGKILL", subject.of_command("continue", 1),
               "Program received signal SIGKILL", subject.transcript())
    c.true(tag + "the program and its copies are there at the held end",
           int(subject.of_command(count_command(prog)).strip() or 0) >= 1, subject.transcript())
    expected, actual = probes(reference.output), probes(subject.output)
    c.true(tag + "record full's walk has its probes", len(expected) == 5, reference.transcript())
    c.true(tag + "the held end is just after record full's exit stop, and nothing is unavailable",
           len(actual) == 6 and "<" not in actual[0] and "frames=_exit" in actual[0].replace("__GI__exit", "_exit"),
           subject.transcript())
    c.equal(tag + "the walk back from the end equals record full's", expected[:-1], actual[1:-1],
            subject.transcript())
    c.true(tag + "forward again to the end of the history: where the end was held",
           len(actual) == 6 and actual[-1].split()[2:] == actual[0].split()[2:], subject.transcript())
    c.contains(tag + "the last continue ends the program with its status", subject.of_command("continue", 3),
               "exited with code 05", subject.transcript())
    c.equal(tag + "no process of the program is left after its end", "0",
            subject.of_command(count_command(prog), 1).strip(), subject.transcript())


def crash(c):
    prog = program("crash", "O0")
    reference = run_gdb(["continue", "continue"], prog, "| " + shlex.join([server_path("gdbserver"), "-", prog]), timeout=60)
    target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog])
    subject = run_gdb([PROBE, "continue", "python probe('signal', 'v')", "continue", "python probe('held', 'v')",
                       "reverse-step", "python probe('back', 'v')", "continue", "continue"], prog, target,
                      timeout=120)
    got = probes(subject.output)
    c.contains("crash: a fatal signal's end is held", subject.of_command("continue", 1),
               "Program received signal SIGKILL", subject.transcript())
    c.true("crash: held at the faulting instruction with the program's values",
           len(got) == 3 and got[0].replace("signal", "held") == got[1] and "v=3" in got[1], subject.transcript())
    c.true("crash: reverse-step from the held end goes back into the program",
           len(got) == 3 and "main" in got[2] and "<" not in got[2],
           subject.transcript())
    c.equal("crash: the last continue ends it as gdbserver reports it",
            reference.of_command("continue", 1).strip().splitlines()[-2:],
            subject.of_command("continue", 3).strip().splitlines()[-2:], subject.transcript())
    ending = reference.of_command("continue", 1).strip().splitlines()[-2:]
    # Straight from the held end: gdb passes the SIGKILL it was told of
    # (vCont;C09); and with SIGKILL not stopping, gdb resumes at once.
    for setup, label in (([], "continue from the held end"),
                         (["handle SIGKILL nostop noprint"], "SIGKILL nostop noprint")):
        r = run_gdb(setup + ["continue", "continue", "print $_siginfo.si_signo", "print $pc = 0", "continue"],
                    prog, target, timeout=120)
        last = r.of_command("continue", 1 if setup else 2)
        c.equal("crash, %s: ends as gdbserver reports it" % label, ending, last.strip().splitlines()[-2:],
                r.transcript())
        if not setup:
            c.value("crash: $_siginfo at the held end is SIGKILL's", r.of_command("print $_siginfo.si_signo"), "9")
            c.contains("crash: registers at the held end cannot change (a call or jump would end it)",
                       r.of_command("print $pc = 0"), "The program has ended; its registers cannot change",
                       r.transcript())


def threads(c, mode, held, back=True):
    prog = program("thread_ends", "O0")
    reference = run_gdb(["continue"], prog, "| " + shlex.join([server_path("gdbserver"), "-", prog, mode]), timeout=60)
    target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog, mode])
    # The exit_group stop first; then, held, the end (and, back, a step
    # back and forward again to the end of history) and the exit.
    moves = ["continue", "continue"] + (["reverse-stepi", "continue"] if back else []) + ["continue"] if held \
        else ["continue", "continue"]
    subject = run_gdb(moves + ["info threads"], prog, target, timeout=120)
    ending = re.sub(r"process \d+", "process N", reference.of_command("continue").strip().splitlines()[-1])
    last = re.sub(r"process \d+", "process N",
                  subject.of_command("continue", len([m for m in moves if m == "continue"]) - 1))
    if held:
        c.contains("thread_ends %s: the end is held" % mode, subject.of_command("continue", 1),
                   "received signal SIGKILL", subject.transcript())
    c.contains("thread_ends %s: the program ends as under gdbserver" % mode, last, ending, subject.transcript())


def kill_and_detach(c):
    prog = program("exit_paths", "O0")
    count = count_command(prog)
    target = "target extended-remote | " + shlex.join([server_path("btstub"), "--multi", "--record", "-"])
    r = run_gdb([target, "set remote exec-file " + prog, "run", "continue", count, "kill", count], prog,
                timeout=120)
    c.contains("kill: the end is held", r.of_command("continue"), "Program received signal SIGKILL", r.transcript())
    c.true("kill: the program is there while held", int(r.of_command(count, 0).strip() or 0) >= 1, r.transcript())
    c.equal("kill: nothing of the program is left", "0", r.of_command(count, 1).strip(), r.transcript())
    target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog])
    r = run_gdb(["continue", "continue", "detach", "shell sleep 0.2", count], prog, target, timeout=120)
    c.contains("detach: the end is held", r.of_command("continue", 1), "Program received signal SIGKILL",
               r.transcript())
    c.equal("detach: the program ends once let go", "0", r.of_command(count).strip(), r.transcript())


def record_start(c):
    prog = program("exit_paths", "O0")
    target = "| " + shlex.join([server_path("btstub"), "-", prog])
    r = run_gdb([PROBE, "break finish_up", "continue", "delete", "monitor record start", "continue", "continue",
                 "reverse-stepi", "python probe('exit-stop', 'steps')",
                 "break exit_paths.c:%d" % marker_line("exit_paths.c", "exit_call"), "reverse-continue",
                 "python probe('exit_call', 'steps', 'code')", "reverse-step", "python probe('start', 'steps')",
                 "delete", "continue", "continue"], prog, target, timeout=120)
    got = probes(r.output)
    c.contains("monitor record start: the end is held", r.of_command("continue", 2), "Program received signal SIGKILL",
               r.transcript())
    c.true("monitor record start: back from the end, with values",
           len(got) == 3 and "steps=8" in got[0] and "frames=finish_up,main steps=8 code=5" in got[1] and
           "frames=finish_up,main steps=3" in got[2], r.transcript())
    c.contains("monitor record start: the program ends", r.of_command("continue", 4), "exited with code 05",
               r.transcript())


def main(args, c):
    if not own_recording_against_record_full(args, c):
        return
    for opt in ("O0", "O2"):
        exit_paths(c, opt)
    crash(c)
    threads(c, "alone", True)
    threads(c, "group", False)
    threads(c, "running", True, back=False)  # the first thread exits while another runs
    kill_and_detach(c)
    record_start(c)


if __name__ == "__main__":
    run_test("test_past_exit", main)
