#!/usr/bin/env python3
"""The program starts with the file descriptors gdbserver gives it.

tests/programs/list_fds.c prints every descriptor it starts with and what
it refers to. Run to its end through btstub and through gdbserver, over
stdio (`target remote | SERVER - prog`, where both servers give the
program /dev/null as stdin and their stderr as stdout) and over TCP, the
lists must be equal (socket and pipe inode numbers aside). btstub once
left the program an extra /dev/null on fd 3 over stdio.

    python3 test_program_fds.py [-v]
"""

import re

from harness import Server, program, run_gdb, run_test, stdio_target

FD_LINE = re.compile(r"^fd (\d+) -> (.*)$")


def fd_list(text):
    fds = []
    for line in text.splitlines():
        m = FD_LINE.match(line.strip())
        if m:
            fds.append("fd %s -> %s" % (m.group(1), re.sub(r"\[\d+\]", "[N]", m.group(2))))
    return fds


def over_stdio(kind, prog):
    r = run_gdb(["continue"], prog, stdio_target(kind, prog, []))
    return fd_list(r.output), r.transcript()


def over_tcp(kind, prog):
    server = Server(kind, [prog], options=("--once",))
    try:
        r = run_gdb(["continue"], prog, server.address)
        server.wait_exit(10.0)
    finally:
        server.stop()
    return fd_list(server.stdout), r.transcript() + server.stdout + server.stderr


def main(args, c):
    prog = program("list_fds")
    for how, run in (("stdio", over_stdio), ("tcp", over_tcp)):
        reference, _ = run("gdbserver", prog)
        fds, context = run(args.server, prog)
        c.true("%s: gdbserver's program lists its descriptors" % how, len(reference) >= 3, str(reference))
        c.equal("%s: the program starts with gdbserver's descriptors" % how, reference, fds, context)


if __name__ == "__main__":
    run_test("test_program_fds", main)
