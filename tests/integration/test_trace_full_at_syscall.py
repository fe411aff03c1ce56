#!/usr/bin/env python3
"""A trace that fills just before a system call stops the program there,
under every --trace-stops mode.

full_at_syscall.c calls, round after round, a function that moves the
system call's number into eax and makes the call. Recording starts at
`recording_starts` (`monitor record start` with room for K branches,
K = 1..6, under --trace-full=stop); a K fills the trace with the call
into that function, and the ptrace tracer (int3 and step modes) reaches
the system call under steps of its own. At every K, each mode (int3, the
reference; step; debugreg; translate) must report the trace full
(`monitor record status`) with K of K branches, give the same stop reply,
registers (`g`; but the RF flag a debug-register stop leaves set) and qXfer:btrace:read:all blocks there, and, continued,
the same end. Some K must stop the program at a `syscall`, and there its
general registers must equal gdbserver's at the same point, stopped live
at a breakpoint (the first time it gets there).

Before, the stop the tracer asked for at the end of such a step was taken
for a step the client had not asked for and run on from: the program ran
untraced to its end (CI failed on it: test_translate_trace_full's int3
run, where the 100k trace filled at ld.so's `read`). The step mode also
stopped before a conditional jump it saw not taken, which is no branch.

Runs against btstub only (the gdbserver reference runs inside).

    python3 test_trace_full_at_syscall.py [-v]
"""

import re

from harness import Server, case_modes, debug_registers_trap, load_base, program, run_test, symbol_offset
from rsp_client import RspClient
from translate_compare import TIMEOUT, full_stop_facts, monitor, select_thread

MODES = ("int3", "step", "debugreg", "translate")
BRANCH_BYTES = 24  # one branch's share of a trace size
ROUNDS = "8"
FULL = re.compile(r"(\d+) of (\d+) branches in \d+ bytes, stopped: buffer full")
FEATURES = "multiprocess+;swbreak+;hwbreak+;vContSupported+;exec-events+"
GENERAL = 17 * 16 + 8  # rax..rip and eflags, in hex digits
EFLAGS_BYTE2 = 17 * 16 + 4  # eflags' third byte (RF is its bit 0), in hex digits


def without_rf(regs):
    """`g` with eflags' RF clear: a debug-register trace stop leaves it set
    (the kernel sets it so the instruction runs on without trapping again),
    as a live stop at a hardware breakpoint shows it too."""
    byte = int(regs[EFLAGS_BYTE2:EFLAGS_BYTE2 + 2], 16) & ~1
    return regs[:EFLAGS_BYTE2] + "%02x" % byte + regs[EFLAGS_BYTE2 + 2:]


def run_to(c, server, prog, name):
    """Runs the program to the function `name`'s first instruction."""
    at = load_base(server.inferior_pid, prog) + symbol_offset(prog, name)
    assert c.request("Z0,%x,1" % at) == "OK"
    reply = c.request("vCont;c", timeout=TIMEOUT)
    assert c.request("z0,%x,1" % at) == "OK"
    return reply


def recorded(prog, mode, branches):
    """From `recording_starts` on, recorded with room for `branches`: what
    the stop shows, and how the program ends when continued."""
    options = ("--once", "--trace-stops=" + mode, "--trace-full=stop")
    with Server("btstub", [prog, ROUNDS], options=options) as server:
        with RspClient.connect(server.port, timeout=TIMEOUT) as c:
            c.handshake(features=FEATURES)
            run_to(c, server, prog, "recording_starts")
            started, _ = monitor(c, "record start %d" % (BRANCH_BYTES * branches))
            facts = full_stop_facts(c, server, c.request("vCont;c", timeout=TIMEOUT))
    facts.update(started=started, stderr=server.stderr)
    return facts


def live_registers(prog, pc):
    """gdbserver's registers where the program first gets to `pc` after
    `recording_starts`, stopped at a breakpoint."""
    with Server("gdbserver", [prog, ROUNDS]) as server:
        with RspClient.connect(server.port, timeout=TIMEOUT) as c:
            c.handshake(features=FEATURES)
            run_to(c, server, prog, "recording_starts")
            assert c.request("Z0,%x,1" % pc) == "OK"
            reply = c.request("vCont;c", timeout=TIMEOUT)
            select_thread(c, reply)
            regs = c.request("g")
            c.send_packet("k")
    return reply, regs


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub records (skipped for %s)" % args.server, True)
        return
    for opt in ("O0", "O2"):
        prog = program("full_at_syscall", opt)
        at_syscall = []
        for branches in range(1, 7):
            label = "full_at_syscall_%s, room for %d" % (opt, branches)
            ref = None
            # Under the sanitizers, int3 and one other, turn about.
            for mode in case_modes(MODES, branches):
                if mode == "debugreg" and not debug_registers_trap():
                    continue
                got = recorded(prog, mode, branches)
                ctx = "%s status:\n%s\nstderr:\n%s" % (mode, got["status"], got["stderr"][-2000:])
                full = FULL.search(got["status"])
                c.true("%s, %s: stopped full with %d of %d branches" % (label, mode, branches, branches),
                       full is not None and full.group(1) == full.group(2) == str(branches),
                       "%s\nstop: %s\nstarted: %s" % (ctx, got["stop"], got["started"]))
                c.not_contains("%s, %s: no complaint from btstub" % (label, mode), got["stderr"], "btstub: ", ctx)
                if ref is None:
                    ref = got
                    continue
                c.equal("%s, %s: the stop int3's is" % (label, mode), ref["stop"], got["stop"], ctx)
                regs = without_rf(got["regs"]) if mode == "debugreg" else got["regs"]
                c.equal("%s, %s: the registers int3's are" % (label, mode), ref["regs"], regs, ctx)
                c.true("%s, %s: the branch trace int3's is" % (label, mode), ref["blocks"] == got["blocks"],
                       "%s against %s\n%s" % (ref["blocks"], got["blocks"], ctx))
                c.equal("%s, %s: continued, the end int3's is" % (label, mode), ref["ends"], got["ends"], ctx)
            if ref["code"] == "0f05":
                at_syscall.append((branches, ref))
        c.true("full_at_syscall_%s: some room stops the program at a syscall (%s)" %
               (opt, [b for b, _ in at_syscall]), len(at_syscall) > 0)
        if at_syscall:
            branches, ref = at_syscall[0]
            reply, regs = live_registers(prog, ref["pc"])
            c.equal("full_at_syscall_%s, room for %d: gdbserver stops there live" % (opt, branches),
                    re.search(r"(?:^|;)10:([0-9a-f]{16});", reply[3:]).group(1),
                    (ref["pc"]).to_bytes(8, "little").hex())
            c.equal("full_at_syscall_%s, room for %d: general registers gdbserver's are" % (opt, branches),
                    regs[:GENERAL], ref["regs"][:GENERAL])


if __name__ == "__main__":
    run_test("test_trace_full_at_syscall", main)
