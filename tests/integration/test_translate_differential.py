#!/usr/bin/env python3
"""The translating tracer records exactly what the ptrace tracer records.

Each program below runs twice under `btstub --record`, once with
`--trace-stops=int3` (the ptrace tracer, the reference) and once with
`--trace-stops=translate` (translated code in a cache in the program logs
the branches; docs/backends.md "The translating tracer"), at -O0 and -O2.
Both runs go from the first instruction to the stop btstub makes before
the program exits (signals the program gets are passed back to it); then
the whole branch trace is read as gdb reads it (Qbtrace:bts adopts the
recording, qXfer:btrace:read:all) and the two must hold the same blocks,
hence the same taken branches in the same order, and the runs the same
stops. Blocks in the vDSO are left out of the comparison: its clock reads
retry when the kernel updates the time meanwhile, which differs from run
to run whichever tracer records (both run the vDSO under int3s).

The programs cover loops, calls and returns, calls through function
pointers, a jump table, recursion, setjmp/longjmp, a C++ throw and catch
(the unwinder reads the return addresses the translations push), system
calls and vDSO calls (which fall back to the ptrace tracer), raised
signals with handlers and a SIGILL whose handler moves the pc.

So that the test cannot pass with the cache unused, each translate run must
say in `monitor record status` that most of its branches were logged by
translated code, and its documents must hold many blocks.

Runs against btstub only (gdbserver has neither --record nor translation).

    python3 test_translate_differential.py [-v]
"""

import re

from harness import Server, program, run_test
from rsp_client import RspClient, hexs

# (program, arguments): single-threaded, deterministic control flow.
PROGRAMS = [
    ("record_workload", ["20"]),
    ("record_walk", []),
    ("block_boundaries", []),
    ("trace_control", []),
    ("past_longjmp", []),
    ("trace_exception", []),
    ("trace_syscalls", []),
    ("trace_signals", []),
]
ACTIVITY = re.compile(r"Translated code: (\d+) blocks translated, (\d+) left to int3s; (\d+) branches logged")
HELD = re.compile(r"thread \d+: (\d+) of \d+ branches")
BLOCK = re.compile(r'<block begin="0x([0-9a-f]+)" end="0x([0-9a-f]+)"/>')


def vdso_range(pid):
    """[begin, end) of the program's vDSO, from its maps."""
    with open("/proc/%d/maps" % pid) as maps:
        for line in maps:
            if line.rstrip().endswith("[vdso]"):
                begin, end = line.split()[0].split("-")
                return int(begin, 16), int(end, 16)
    return 0, 0


def blocks_outside(doc, vdso):
    """The document's blocks (begin, end), those starting in the vDSO left out."""
    return [(int(b, 16), int(e, 16)) for b, e in BLOCK.findall(doc or "")
            if not vdso[0] <= int(b, 16) < vdso[1]]
TIMEOUT = 120.0


def stop_signal(reply):
    """The signal of a T/S stop reply, or None for anything else."""
    if reply[:1] in ("T", "S") and len(reply) >= 3:
        return int(reply[1:3], 16)
    return None


def strip_thread(reply):
    """A stop reply without its thread id (each run has its own pid)."""
    return re.sub(r"thread:[0-9a-fp.]+;", "", reply)


def read_document(client, request):
    """The whole qXfer document `request` names (offset, length appended)."""
    text, offset = "", 0
    while True:
        reply = client.request("%s:%x,%x" % (request, offset, 0x10000), timeout=TIMEOUT)
        if reply[:1] not in ("m", "l"):
            return None, reply
        text += reply[1:]
        offset += len(reply) - 1
        if reply[:1] == "l":
            return text, reply


def monitor(client, command):
    client.console = ""
    reply = client.request("qRcmd," + hexs(command), timeout=TIMEOUT)
    return client.console, reply


def record(prog, args, mode):
    """Runs `prog` to its held end under --trace-stops=`mode`: the btrace
    document, `monitor record status`, the stops seen and the server's
    stderr."""
    options = ("--once", "--record", "--trace-stops=" + mode)
    with Server("btstub", [prog] + args, options=options) as server:
        with RspClient.connect(server.port, timeout=TIMEOUT) as c:
            c.handshake()
            stops = []
            reply = c.request("vCont;c", timeout=TIMEOUT)
            # Signals go back to the program; signal 0 is the stop before
            # the exit (where a recorded program is held).
            while len(stops) < 20:
                stops.append(reply)
                sig = stop_signal(reply)
                if sig is None or sig == 0:
                    break
                reply = c.request("C%02x" % sig, timeout=TIMEOUT)
            thread = re.search(r"thread:([0-9a-fp.]+);", stops[-1])
            if thread:
                c.request("Hg" + thread.group(1))
            status, _ = monitor(c, "record status")
            vdso = vdso_range(server.inferior_pid)
            enabled = c.request("Qbtrace:bts")
            doc, last = read_document(c, "qXfer:btrace:read:all")
            c.send_packet("k")
        stderr = server.stderr
    return {"doc": doc, "last": last, "enabled": enabled, "status": status, "stops": stops,
            "stderr": stderr, "blocks": blocks_outside(doc, vdso), "vdso": vdso}


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub records with --record (skipped for %s)" % args.server, True)
        return
    for name, prog_args in PROGRAMS:
        for opt in ("O0", "O2"):
            prog = program(name, opt)
            label = "%s_%s" % (name, opt)
            ref = record(prog, prog_args, "int3")
            got = record(prog, prog_args, "translate")
            ctx = "int3 stops: %s\ntranslate stops: %s\nint3 status:\n%s\ntranslate status:\n%s\n" \
                  "translate stderr:\n%s" % (ref["stops"], got["stops"], ref["status"], got["status"],
                                              got["stderr"][-3000:])
            c.true("%s: the reference run ends held before the exit" % label,
                   stop_signal(ref["stops"][-1]) == 0, ctx)
            c.equal("%s: the same stops" % label, [strip_thread(r) for r in ref["stops"]],
                    [strip_thread(r) for r in got["stops"]], ctx)
            c.true("%s: the reference's trace reads (%s)" % (label, ref["last"][:60]), ref["doc"] is not None, ctx)
            a, b = ref["blocks"], got["blocks"]
            c.true("%s: the reference holds many blocks (%d)" % (label, len(a)), len(a) > 1000, ctx)
            c.true("%s: the vDSO is found" % label, ref["vdso"][1] > 0 and ref["vdso"] == got["vdso"], ctx)
            same = a == b
            detail = ctx
            if not same:
                first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
                detail = ("%d vs %d blocks; newest first, the first difference at block %d:\n"
                          "int3:      %s\ntranslate: %s\n%s" %
                          (len(a), len(b), first, [(hex(x), hex(y)) for x, y in a[first:first + 3]],
                           [(hex(x), hex(y)) for x, y in b[first:first + 3]], ctx))
            c.true("%s: the same branch trace under both tracers" % label, same, detail)
            m, held = ACTIVITY.search(got["status"]), HELD.search(got["status"])
            c.true("%s: the translate run reports its translated code" % label, m is not None and held, ctx)
            if m and held:
                logged, total = int(m.group(3)), int(held.group(1))
                c.true("%s: translated code logged most branches (%d of %d)" % (label, logged, total),
                       total > 0 and logged * 2 > total, ctx)
            c.not_contains("%s: no complaint from the translating tracer" % label, got["stderr"],
                           "btstub: ", ctx)


if __name__ == "__main__":
    run_test("test_translate_differential", main)
