#!/usr/bin/env python3
"""A client that leaves its breakpoints inserted while it resumes gets each
breakpoint hit of each thread reported once: btstub steps a thread off the
breakpoint it stopped at, with the other threads held. (gdbserver does
not: it reports the same hit again and leaves stepping over it to the
client, as gdb does by removing the breakpoint for one step; this rule is
btstub's own, docs/protocol.md.)

tests/programs/ret_hits.c: four threads call hit(k, i) fifty times each;
the client puts a Z0 on hit's ret and continues from every stop, reading
k and i (rdi, rsi) of the thread that stopped. Every (k, i) must be
reported exactly once, under btstub and btstub recording with translated
code and with int3 trace stops.

- Recorded, hits were reported again and again (one thread's first hit
  55 times). A thread whose breakpoint stop was reaped while every
  thread was being stopped for another's keeps the all-stop's SIGSTOP
  queued; stepped off the breakpoint later under the ptrace tracer's own
  int3 on that ret (step_held), it stopped at that SIGSTOP before running
  anything, and btstub took it for a thread the tracer had moved there
  unrun (a flag left from an earlier resume, which step_held did not
  renew as other resumes do): it ran into the breakpoint again.
- Not recording, hits were lost (2 of 50 reported for one thread): the
  int3 was lifted for the step until its event was reaped, and the
  threads started meanwhile ran past it.

A breakpoint on a system call that blocks until another thread acts
(tests/programs/blocking_step.c: a read of a pipe the main thread writes
100 ms later) is still stepped off with the int3 lifted and the other
threads running: held, they would never write, and the step (and btstub)
would wait for good. The run must end after the one hit.

    python3 test_breakpoint_resume.py [-v]
"""

import collections
import re
import struct

from harness import Server, load_base, program, recording_setups, run_test, symbol_offset
from rsp_client import RspClient, RspError
from translate_compare import elf_facts

THREADS, ROUNDS = 4, 50
TIMEOUT = 60
BLOCKING_TIMEOUT = 20


def registers(c, *numbers):
    """64-bit registers of the current thread (`g`: rax, rbx, rcx, rdx, rsi, rdi, ...)."""
    reply = c.request("g")
    return tuple(struct.unpack("<q", bytes.fromhex(reply[16 * n:16 * n + 16]))[0] for n in numbers)


def session(server, prog, ret_offset):
    """Every (k, i) reported at the breakpoint, and the last reply."""
    hits = []
    with RspClient.connect(server.port, timeout=TIMEOUT) as c:
        c.handshake()
        base = load_base(server.inferior_pid, prog)
        inserted = c.request("Z0,%x,1" % (base + ret_offset))
        if inserted != "OK":
            return hits, "Z0: " + inserted
        reply = c.request("vCont;c", timeout=TIMEOUT)
        for _ in range(THREADS * ROUNDS * 2 + 10):
            thread = re.search(r"thread:([0-9a-fp.]+);", reply)
            if not reply.startswith("T05") or "swbreak" not in reply or thread is None:
                break
            c.request("Hg" + thread.group(1))
            hits.append(registers(c, 5, 4))  # rdi, rsi: k and i
            reply = c.request("vCont;c", timeout=TIMEOUT)
        c.send_packet("k")
    return hits, reply


def blocking_session(server, prog):
    """The replies to a continue and to the one after it, with a Z0 left on
    blocking_step's read_syscall."""
    with RspClient.connect(server.port, timeout=BLOCKING_TIMEOUT) as c:
        c.handshake()
        base = load_base(server.inferior_pid, prog)
        inserted = c.request("Z0,%x,1" % (base + symbol_offset(prog, "read_syscall")))
        if inserted != "OK":
            return ["Z0: " + inserted]
        replies = [c.request("vCont;c", timeout=BLOCKING_TIMEOUT)]
        try:
            replies.append(c.request("vCont;c", timeout=BLOCKING_TIMEOUT))
        except (OSError, RspError) as e:
            replies.append("no reply in %d s (%s)" % (BLOCKING_TIMEOUT, e))
        c.send_packet("k")
    return replies


def main(args, c):
    prog = program("ret_hits", "O2")
    ret_offset = elf_facts(prog, "hit")[1][0]  # as linked: the program is position independent
    if args.server != "btstub":
        c.true("gdbserver reports a hit again where btstub steps off it (skipped for %s)" % args.server, True)
        return
    want = sorted((k, i) for k in range(THREADS) for i in range(ROUNDS))
    for name, options in [("plain", [])] + recording_setups(args.server):
        with Server(args.server, [prog, str(THREADS), str(ROUNDS)], options=("--once",) + tuple(options)) as server:
            hits, last = session(server, prog, ret_offset)
        twice = sorted(hit for hit, n in collections.Counter(hits).items() if n > 1)
        c.equal("%s: no hit reported twice" % name, [], twice, "last reply: %s" % last)
        c.equal("%s: each (thread, round) reported" % name, want, sorted(set(hits)), "last reply: %s" % last)
        c.true("%s: the run ends after the last hit" % name, last.startswith(("W", "T00", "X")), "", last)
    blocking = program("blocking_step", "O2")
    for name, options in [("plain", [])] + recording_setups(args.server):
        with Server(args.server, [blocking], options=("--once",) + tuple(options)) as server:
            replies = blocking_session(server, blocking)
        c.true("%s, blocking call: the breakpoint is hit" % name,
               replies[0].startswith("T05") and "swbreak" in replies[0], "", replies)
        c.true("%s, blocking call: stepped off it, the run ends" % name,
               len(replies) > 1 and replies[1].startswith(("W", "T00")), "", replies)


if __name__ == "__main__":
    run_test("test_breakpoint_resume", main)
