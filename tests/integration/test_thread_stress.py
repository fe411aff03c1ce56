#!/usr/bin/env python3
"""200 short threads (tests/programs/stress200.c: 100 created and joined one
at a time, then 10 batches of 10 running at once):

1. Plain run to a breakpoint after the last join: gdb lists one thread, and
   /proc/PID/task holds only the main thread (no exited thread left
   unreaped); then the program runs to its end: "exited normally" (its exit
   code says the threads' results were right; a stray int3 would kill it),
   program output "sum ...", server exits with 0.
2. A breakpoint in serial_fn hit three times (arg = 0, 1, 2, in that order),
   then deleted; the program runs to a normal exit. The gdb transcript
   must equal gdbserver's on the same script.

    python3 test_thread_stress.py [--server gdbserver] [-v]
"""

import harness
from harness import Server, check_same_transcript, program, run_gdb, run_gdb_tcp, run_test

EXPECTED_SUM = sum(i * 2 + 1 for i in range(100)) + sum(i * 3 for i in range(100))

BREAK_COMMANDS = [
    "break serial_fn",
    "continue",
    "print (long)arg",
    "continue",
    "print (long)arg",
    "continue",
    "print (long)arg",
    "delete",
    "continue",
]


def plain_run(kind, c, prog):
    server = Server(kind, [prog])
    try:
        pid = server.inferior_pid
        commands = [
            "break all_joined",
            "continue",
            "info threads",
            "shell ls /proc/%d/task | wc -l" % pid,
            "continue",
        ]
        result = run_gdb(commands, prog, server.address, timeout=120)
        status = server.wait_exit(20)
    finally:
        server.stop()
    ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
    c.contains("all_joined reached", result.of(1), "Breakpoint 1, all_joined",
               ctx)
    threads = [line for line in result.of(2).splitlines()
               if line.strip() and not line.lstrip().startswith("Id")]
    c.equal("gdb lists one thread after the joins", 1, len(threads), ctx)
    c.equal("only the main thread left in /proc", "1", result.of(3).strip(), ctx)
    c.contains("exit reported", result.of(4), "exited normally", ctx)
    c.equal("program output", "sum %d\n" % EXPECTED_SUM, server.stdout, ctx)
    c.equal("server exits with 0", 0, status, server.stderr)
    c.true("program gone after the server", pid is not None and not harness.pid_alive(pid),
           "pid %s still alive" % pid)


def main(args, c):
    prog = program("stress200")
    plain_run(args.server, c, prog)

    runs = {}
    for kind in ("gdbserver", args.server):
        result, server = run_gdb_tcp(kind, prog, [], BREAK_COMMANDS, timeout=120)
        runs[kind] = (result, server)
    ref, _ = runs["gdbserver"]
    test, test_server = runs[args.server]
    ctx = test.transcript()
    for n, expected in ((2, "0"), (4, "1"), (6, "2")):
        c.value("serial_fn hit with arg = %s" % expected, test.of(n), expected)
    c.contains("exit after deleting the breakpoint", test.of(-1),
               "exited normally", ctx)
    c.equal("program output with breakpoints", "sum %d\n" % EXPECTED_SUM,
            test_server.stdout, ctx)
    check_same_transcript(c, "same gdb transcript as gdbserver", ref, test, args.server)


if __name__ == "__main__":
    run_test("test_thread_stress", main)
