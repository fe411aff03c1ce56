"""--trace-full=stop under --trace-stops=translate stops where the ptrace
tracer stops: before the first branch that does not fit.

record_workload (1,000 rounds, about 250,000 branches) runs under
`btstub --record --trace-size=SIZE --trace-full=stop` with
--trace-stops=int3 (the ptrace tracer, the reference) and
--trace-stops=translate, for trace sizes that fill in the first log (100k:
4,266 branches), after most of it (333k), and, with 5,000 rounds (about
700,000 branches at -O2), after one and two whole 256 Ki-record logs (7m:
305,834 branches, 13m: 567,978). At the stop both runs must report the trace
full ("stopped: buffer full"), give the same stop reply, the same
registers (`g`; where the stop is outside the program's own code, but
the 8-byte slots in which a second int3 run differs from the first: a
trace that fills in ld.so may stop where a register holds the time stamp
counter it read, or a thread id) and the same branch
trace (qXfer:btrace:read:all), and,
continued, end the same way with the same output. The translate run must
have logged most branches in translated code and, where the trace fills
in the program's own code, reached the stop at a log-full exit, so the
comparison cannot pass with the cache unused (in ld.so or libc the trace
may fill in a block left to the ptrace tracer: a system call, rdtsc).
loop_count (a hot loop of the `loop` instruction, which counts rcx down
before it branches) must stop at a `loop`: rcx there is the one before it.

Before, the translating tracer's log took its whole capacity whatever room
the trace had left: the thread ran up to a log past the point where the
trace filled, those branches were dropped, and it stopped where it stood
(past branches its history does not hold); and at the log-full exit whose
own branch did not fit, it stood at that branch's target.

Runs against btstub only.

    python3 test_translate_trace_full.py [-v]
"""

import os
import re

from harness import opt_levels, program, run_test
from rsp_client import RspClient
from translate_compare import TIMEOUT, _recorded, full_stop_facts, masked_slots, translated_share, varying_slots

# (program, arguments, trace size): loop_count's full trace stops it at a
# taken `loop`, which counts rcx down before it branches.
CASES = [("record_workload", ["1000"], size) for size in ("100k", "333k")] + \
        [("record_workload", ["5000"], size) for size in ("7m", "13m")] + \
        [("loop_count", ["1000000"], "1m")]
FULL = "stopped: buffer full"
LOG_FULL = re.compile(r"exits: \d+ direct, \d+ indirect, (\d+) log full")


def session(server):
    """Runs to the stop, reads what is there, continues to the end."""
    with RspClient.connect(server.port, timeout=TIMEOUT) as c:
        c.handshake(features="multiprocess+;swbreak+;hwbreak+;vContSupported+;exec-events+")
        return full_stop_facts(c, server, c.request("vCont;c", timeout=TIMEOUT))


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub records with --record (skipped for %s)" % args.server, True)
        return
    for i, (name, prog_args, size) in enumerate(CASES):
        for opt in opt_levels(i):
            prog = program(name, opt)
            options = ("--trace-size=" + size, "--trace-full=stop")
            ref = _recorded(prog, prog_args, "int3", options, session)
            # Stopped in ld.so or libc (the program's start): run again.
            own = ref["where"] == os.path.realpath(prog)
            again = ref if own else _recorded(prog, prog_args, "int3", options, session)
            got = _recorded(prog, prog_args, "translate", options, session)
            varying = varying_slots(ref["regs"], again["regs"])
            label = "%s_%s, --trace-size=%s" % (name, opt, size)
            ctx = "int3 status:\n%s\ntranslate status:\n%s\ntranslate stderr:\n%s" % (
                ref["status"], got["status"], got["stderr"][-2000:])
            c.contains("%s: the reference stops full" % label, ref["status"], FULL)
            c.contains("%s: the translate run stops full" % label, got["status"], FULL)
            c.equal("%s: the same stop" % label, ref["stop"], got["stop"], ctx)
            c.equal("%s: a second int3 run stops there too" % label, ref["stop"], again["stop"], ctx)
            c.true("%s: at most two register slots vary from run to run (%s)" % (label, sorted(varying)),
                   len(varying) <= 2, ctx)
            c.equal("%s: the same registers there" % label, masked_slots(ref["regs"], varying),
                    masked_slots(got["regs"], varying), ctx)
            c.true("%s: the reference holds many blocks (%d)" % (label, len(ref["blocks"])),
                   len(ref["blocks"]) > 4000, ctx)
            c.true("%s: the same branch trace" % label, ref["blocks"] == got["blocks"],
                   "%d against %d blocks\n%s" % (len(ref["blocks"]), len(got["blocks"]), ctx))
            c.equal("%s: continued, the same end" % label, ref["ends"], got["ends"], ctx)
            c.equal("%s: the same output" % label, ref["stdout"], got["stdout"], ctx)
            share = translated_share(got["status"])
            c.true("%s: translated code logged most branches" % label,
                   share is not None and share[1] > 0 and share[0] > share[1] / 2, ctx)
            # ld.so and libc hold the blocks left to the ptrace tracer (system
            # calls, rdtsc): a trace may fill in one of them, where 100k does
            # in some environments (ld.so's `read` of libc.so.6).
            if own:
                full = LOG_FULL.search(got["status"])
                c.true("%s: the translate run came to a log-full exit" % label,
                       full and int(full.group(1)) > 0, ctx)
            if name == "loop_count":
                c.true("%s: stopped at a `loop` (%s)" % (label, ref["code"]), ref["code"].startswith("e2"), ctx)
            c.not_contains("%s: no complaint from the translating tracer" % label, got["stderr"], "btstub: ", ctx)


if __name__ == "__main__":
    run_test("test_translate_trace_full", main)
