#!/usr/bin/env python3
"""Launch options, end to end through gdb:

--wrapper CMD.. --   the program starts behind the wrapper (env sets a
                     variable the program then sees) and gdb still stops
                     at the program, not at the wrapper;
--disable-packet=vCont
                     the server answers vCont packets as unsupported, gdb
                     falls back to s/c and stepping still works;
--disable-packet=T, =Tthread, =threads
                     as gdbserver (stop-reply-no-thread.exp): stop replies
                     as S / without the thread, the T thread-alive query
                     still answered; with gdb's thread list and
                     multiprocess packets off, the threads program to a
                     breakpoint in a worker, `info threads`, `thread`, on
                     to its end: the same transcript as gdbserver's;
--startup-with-shell (the default), --no-startup-with-shell
                     as gdbserver: the program starts through $SHELL
                     and gets its arguments unchanged whatever they hold
                     (spaces, $, *, quotes), as when exec'd directly; a
                     program the shell cannot run ends the start-up with
                     "During startup program exited with code 127.";
address space randomization: disabled by default (two runs show the same
stack address), kept with --no-disable-randomization (different
addresses);
--busy-poll=USEC     (btstub only) the same stepping session, with the
                     poll off (0: btstub sleeps after every reply), at its
                     default and at its longest, prints the same stops, pcs
                     and exit code; a bad value is refused before anything
                     starts.

    python3 test_launch_options.py [--server gdbserver] [-v]
"""

import re

from harness import Server, normalise, program, run_command, run_gdb, run_gdb_tcp, run_test, \
    server_path, unified_diff


def stack_pointer(kind, prog, options, c, label):
    result, _ = run_gdb_tcp(kind, prog, [], ["break main", "continue",
                                             "print/x $sp", "kill"],
                            options=("--once",) + tuple(options))
    m = re.search(r"^\$1 = (0x[0-9a-f]+)$", result.of(2), re.M)
    c.true(label + ": $sp printed", m is not None, result.transcript())
    return m.group(1) if m else None


def check_wrapper(kind, c):
    prog = program("basic")
    result, server = run_gdb_tcp(
        kind, prog, ["alpha", "beta"],
        ["break main", "continue", "info symbol $pc",
         'print (char *) getenv("BTSTUB_WRAPPED")', "delete", "continue"],
        options=("--once", "--wrapper", "env", "BTSTUB_WRAPPED=yes", "--"))
    ctx = result.transcript() + "\nserver stderr:\n" + server.stderr
    c.matches("wrapper: stops in the program's main", result.of(1),
              r"^Breakpoint 1, main \(argc=3, argv=0x[0-9a-f]+\) at ", ctx)
    c.matches("wrapper: the wrapper's environment reached the program",
              result.of(3), r'^\$1 = 0x[0-9a-f]+ "yes"$', ctx)
    c.matches("wrapper: arguments arrived (exit code 07)", result.of(5),
              r"^\[Inferior 1 \(process \d+\) exited with code 07\]$", ctx)


def check_disable_vcont(kind, c):
    prog = program("basic")
    result, _ = run_gdb_tcp(
        kind, prog, ["alpha", "beta"],
        ["break add_one", "continue", "set debug remote 1", "next",
         "stepi", "set debug remote 0", "delete", "continue"],
        options=("--once", "--disable-packet=vCont"))
    ctx = result.transcript()
    debug = result.of(3) + result.of(4)
    c.not_contains("vCont disabled: gdb never resumes with vCont", debug,
                   "Sending packet: $vCont;", ctx)
    c.matches("vCont disabled: gdb steps with s", debug,
              r"Sending packet: \$s#", ctx)
    c.not_contains("vCont disabled: next and stepi give no error", debug,
                   "error", ctx)
    c.matches("vCont disabled: program exits normally", result.of(7),
              r"^\[Inferior 1 \(process \d+\) exited with code 07\]$", ctx)


NO_THREAD_SCRIPT = ["info threads", "break main", "continue", "info threads", "next", "thread", "continue"]


def no_thread_transcript(kind, option):
    prog = program("basic")
    with Server(kind, [prog, "alpha"], options=("--once", option)) as server:
        r = run_gdb(NO_THREAD_SCRIPT, prog, server.address,
                    extra_init=["set remote threads-packet off", "set remote multiprocess-feature-packet off"])
    return r


def check_stop_replies_without_thread(kind, c):
    if kind != "btstub":
        return
    for option in ("--disable-packet=T", "--disable-packet=Tthread", "--disable-packet=threads"):
        ref = no_thread_transcript("gdbserver", option)
        test = no_thread_transcript(kind, option)
        # Only the process ids differ. Under =threads gdbserver's `next`
        # (`s` packets, no thread ids) ends at basic.c:66, past the next
        # line: that command is checked against the program instead.
        skip = {4} if option.endswith("=threads") else set()
        # `info threads` pads its Target Id column to the id's width,
        # which follows how many digits the two runs' pids have.
        want, got = ([re.sub(r"Thread \d+", "Thread N", re.sub(r"Thread \d+ +", "Thread N  ", line))
                      for i in range(len(NO_THREAD_SCRIPT)) if i not in skip for line in normalise(r.of(i))]
                     for r in (ref, test))
        c.true("%s: the same transcript as gdbserver's" % option, want == got,
               unified_diff(want, got, "gdbserver", kind))
        c.true("%s: next goes to the next line, 57" % option, test.of(4).startswith("57\t"), test.transcript())
        c.not_contains("%s: no thread reported gone" % option, test.output, "has terminated", test.transcript())
        c.contains("%s: the program runs to its end" % option, test.of(6), "exited with code", test.transcript())


SHELL_WORDS = ["a b", "$HOME", "*.c", "it's", ""]


def check_startup_shell(kind, c):
    prog = program("basic", "O0")
    for options in ((), ("--startup-with-shell",), ("--no-startup-with-shell",)):
        label = " ".join(options) or "default"
        # gdbserver without a shell refuses an argument with a space in it
        # ("can't handle command-line argument containing whitespace") and
        # drops an empty one.
        words = [w for w in SHELL_WORDS if w and " " not in w] if options == ("--no-startup-with-shell",) else SHELL_WORDS
        commands = ["break main", "continue"] + ["print argv[%d]" % (i + 1) for i in range(len(words))] + \
                   ["print argc", "kill"]
        result, _ = run_gdb_tcp(kind, prog, words, commands, options=("--once",) + options)
        for i, word in enumerate(words):
            c.contains("%s: argv[%d] arrives unchanged" % (label, i + 1), result.of(2 + i),
                       '"%s"' % word.replace('"', '\\"'), result.transcript())
        c.contains("%s: argc" % label, result.of(2 + len(words)), "= %d" % (len(words) + 1),
                   result.transcript())
    if kind == "btstub":
        # The exec stop the shell leaves is inside execve; a step from
        # there would run nothing. btstub's first stepi runs the first
        # instruction, as after a direct exec (gdb.btrace/reconnect.exp).
        for options in (("--startup-with-shell",), ("--no-startup-with-shell",)):
            result, _ = run_gdb_tcp(kind, prog, [], ["print/x $pc", "stepi", "print/x $pc", "kill"],
                                    options=("--once",) + options)
            before = re.search(r"= (0x[0-9a-f]+)", result.of(0) or "")
            after = re.search(r"= (0x[0-9a-f]+)", result.of(2) or "")
            c.true("%s: the first stepi runs an instruction" % options[0],
                   before is not None and after is not None and before.group(1) != after.group(1),
                   result.transcript())
    status, _, err = run_command([server_path(kind), "--once", "--startup-with-shell", "127.0.0.1:0",
                                  "/no/such/program"], 15)
    c.true("missing program: non-zero exit", status not in (0, None), "status %r" % status)
    c.contains("missing program: the shell's exit status, in gdbserver's words", err,
               "During startup program exited with code 127.\nExiting")
    status, _, err = run_command([server_path(kind), "--once", "--no-startup-with-shell", "127.0.0.1:0",
                                  "/no/such/program"], 15)
    c.true("missing program, no shell: non-zero exit", status not in (0, None), "status %r" % status)
    c.contains("missing program, no shell: says why", err, "No such file or directory")


def check_randomization(kind, c):
    prog = program("basic")
    fixed = [stack_pointer(kind, prog, [], c, "default run %d" % i)
             for i in (1, 2)]
    c.true("randomization disabled by default: same $sp twice",
           None not in fixed and fixed[0] == fixed[1], str(fixed))
    kept = [stack_pointer(kind, prog, ["--no-disable-randomization"], c,
                          "--no-disable-randomization run %d" % i)
            for i in (1, 2)]
    c.true("--no-disable-randomization: $sp differs between runs",
           None not in kept and kept[0] != kept[1], str(kept))


STEPPING = ["break add_one", "continue", "stepi 40", "info registers rip",
            "next", "finish", "tbreak main", "delete 1", "continue"]


def check_busy_poll(kind, c):
    if kind != "btstub":
        print("SKIP --busy-poll is btstub's own option")
        return
    prog = program("basic")
    transcripts = {}
    for value in ("0", None, "100000"):
        options = ("--once",) + (("--busy-poll=" + value,) if value else ())
        result, _ = run_gdb_tcp(kind, prog, ["alpha", "beta"], STEPPING,
                                options=options)
        label = "--busy-poll=%s" % (value or "default")
        ctx = result.transcript()
        c.matches(label + ": 40 steps end in add_one", result.of(3),
                  r"^rip +0x[0-9a-f]+ +0x[0-9a-f]+ <add_one\+\d+>$", ctx)
        c.matches(label + ": program exits with code 07", result.of(8),
                  r"^\[Inferior 1 \(process \d+\) exited with code 07\]$",
                  ctx)
        transcripts[label] = normalise(result.transcript().split("\n", 1)[1])
    base = transcripts.pop("--busy-poll=0")
    for label, lines in transcripts.items():
        c.true(label + ": same transcript as with the poll off",
               lines == base, unified_diff(base, lines, "--busy-poll=0", label))
    status, _, err = run_command([server_path(kind), "--busy-poll=soon", "--once",
                                  "127.0.0.1:0", prog], 15)
    c.true("--busy-poll=soon: non-zero exit", status not in (0, None),
           "status %r" % status)
    c.contains("--busy-poll=soon: says what is wrong", err,
               "Bad --busy-poll=soon")
    c.not_contains("--busy-poll=soon: does not start the program", err,
                   "Process ")


def main(args, c):
    check_wrapper(args.server, c)
    check_disable_vcont(args.server, c)
    check_stop_replies_without_thread(args.server, c)
    check_startup_shell(args.server, c)
    check_randomization(args.server, c)
    check_busy_poll(args.server, c)


if __name__ == "__main__":
    run_test("test_launch_options", main)
