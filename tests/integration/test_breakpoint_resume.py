#!/usr/bin/env python3
"""A client that leaves its breakpoints inserted while it resumes gets no
breakpoint hit reported twice: btstub steps a thread off the breakpoint it
stopped at. (gdbserver does not: it reports the same hit again and leaves
stepping over it to the client, as gdb does by removing the breakpoint
for one step; this rule is btstub's own, docs/protocol.md.)

tests/programs/ret_hits.c: four threads call hit(k, i) fifty times each;
the client puts a Z0 on hit's ret and continues from every stop, reading
k and i (rdi, rsi) of the thread that stopped. No (k, i) may be reported
twice, under btstub and btstub recording with translated code and with
int3 trace stops; recording, every (k, i) must be reported (the step off
is made with the other threads held, as the tracer's int3 shares the
ret). Not recording, btstub lifts the int3 for the step while the others
start, and they can pass it unseen: a known gap for clients that do not
step over breakpoints themselves (gdb and lldb do).

Recorded, hits were reported again and again (one thread's first hit 55
times). A thread whose breakpoint stop was reaped while every thread was
being stopped for another's keeps the all-stop's SIGSTOP queued; stepped
off the breakpoint later under the ptrace tracer's own int3 on that ret
(step_held), it stopped at that SIGSTOP before running anything, and
btstub took it for a thread the tracer had moved there unrun (a flag left
from an earlier resume, which step_held did not renew as other resumes
do): it ran into the breakpoint again instead of stepping off it.

    python3 test_breakpoint_resume.py [-v]
"""

import collections
import re
import struct

from harness import Server, load_base, program, recording_setups, run_test
from rsp_client import RspClient
from translate_compare import elf_facts

THREADS, ROUNDS = 4, 50
TIMEOUT = 60


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
        if name != "plain":
            c.equal("%s: each (thread, round) reported" % name, want, sorted(set(hits)), "last reply: %s" % last)
        c.true("%s: the run ends after the last hit" % name, last.startswith(("W", "T00", "X")), "", last)


if __name__ == "__main__":
    run_test("test_breakpoint_resume", main)
