#!/usr/bin/env python3
"""A fault in code the translating tracer runs from its cache names the
program's own instruction in si_addr (tests/programs/fault_address.c).

The kernel fills a SIGFPE's (SIGILL's) si_addr from the pc, which under
`--record` is the cache's: btstub puts the original address in its place
before the signal goes on. Checked two ways, at -O0 and -O2, against the
server under test and gdbserver:
- a SA_SIGINFO handler compares si_addr with the pc in its ucontext at
  each of 20 divisions by zero: all equal, as natively;
- gdb at the SIGFPE stop (the program without its handler):
  `$_siginfo._sifields._sigfault.si_addr` equals `$pc`.
Before, the handler saw 0 of 20 equal, and gdb a cache address.

    python3 test_fault_address.py [--server gdbserver] [-v]
"""

import re
import shlex
import subprocess

from harness import program, run_gdb, run_test, server_path


def target(args, prog, *prog_args):
    options = ["--record"] if args.server == "btstub" else []
    return "| " + shlex.join([server_path(args.server)] + options + ["-", prog] + list(prog_args))


def main(args, c):
    for opt in ("O0", "O2"):
        prog = program("fault_address", opt)
        native = subprocess.run([prog], capture_output=True, text=True, timeout=30)
        c.equal("%s: natively every si_addr is the pc" % opt, "rounds 20 same 20\ndone\n", native.stdout)
        handled = run_gdb(["handle SIGFPE nostop noprint pass", "continue"], prog, target(args, prog), timeout=120)
        c.true("%s: under the server too" % opt, "rounds 20 same 20" in handled.of(1), handled.transcript())
        plain = run_gdb(["continue", "print/x $pc", "print/x (unsigned long) $_siginfo._sifields._sigfault.si_addr",
                         "print $_siginfo.si_signo"], prog, target(args, prog, "plain"), timeout=120)
        ctx = plain.transcript()
        c.contains("%s: SIGFPE stops the program" % opt, plain.of(0), "SIGFPE", ctx)
        pc = re.search(r"= (0x[0-9a-f]+)", plain.of(1))
        addr = re.search(r"= (0x[0-9a-f]+)", plain.of(2))
        c.true("%s: $_siginfo's si_addr is the pc" % opt, pc is not None and addr is not None and
               pc.group(1) == addr.group(1), ctx)
        c.value("%s: $_siginfo says SIGFPE" % opt, plain.of(3), "8")


if __name__ == "__main__":
    run_test("test_fault_address", main)
