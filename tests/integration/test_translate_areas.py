#!/usr/bin/env python3
"""The translating tracer lets go of its log areas when the program ends.

Each thread's log area is a memfd mapped in the program and in btstub
(1.5 MiB; docs/backends.md). An ended thread's area waits for the next
new thread; when the program's last thread ends, the areas serve nothing
more, and btstub's own mappings of them must go then, not at the next
run, since btstub keeps serving after the program's end.

past_join.c runs a second thread and joins it. Under `btstub --once
--record --trace-stops=translate`, to the stop btstub makes before the
exit: btstub maps the main thread's area and the ended worker's (seen in
/proc/BTSTUB/maps as memfd mappings, and `monitor record status` says the
logs were shared), and still at the end btstub holds (reported as
SIGKILL, the program's memory still there). Then on to the program's end
(SIGKILL passed, as gdb passes it): btstub maps no memfd any more, and
`monitor record status` still answers. Before this the two areas stayed
mapped until the next run.

Runs against btstub only (gdbserver has neither --record nor translation).

    python3 test_translate_areas.py [-v]
"""

import os
import re

from harness import Server, program, run_test
from rsp_client import RspClient
from translate_compare import SHARED, THREAD_LOG, TIMEOUT, monitor, stop_signal


def memfd_mappings(pid):
    """btstub's mappings of memfds (the log areas it shares)."""
    with open("/proc/%d/maps" % pid) as f:
        return [line.strip() for line in f if "/memfd:" in line]


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub records with --record (skipped for %s)" % args.server, True)
        return
    for opt in ("O0", "O2"):
        prog = program("past_join", opt)
        options = ("--once", "--record", "--trace-stops=translate")
        with Server("btstub", [prog], options=options) as server, \
                RspClient.connect(server.port, timeout=TIMEOUT) as client:
            client.handshake(features="multiprocess+;swbreak+;hwbreak+;vContSupported+")
            held = client.request("vCont;c", timeout=TIMEOUT)
            c.equal("%s: held before the exit" % opt, 0, stop_signal(held))
            status, _ = monitor(client, "record status")
            ctx = "status:\n%s\nstderr:\n%s" % (status, server.stderr[-2000:])
            c.equal("%s: the main thread's log is shared" % opt, [SHARED], [m for _, m in THREAD_LOG.findall(status)],
                    ctx)
            # With a CPU to spare (the packing worker's), a thread logs into
            # three areas in turn, switching at every exit.
            switched = [(int(n), int(k)) for n, k in re.findall(r"(\d+) logs, switched (\d+) times", status)]
            if len(os.sched_getaffinity(0)) >= 2:
                c.true("%s: the main thread has three logs and switched between them (%s)" % (opt, switched),
                       len(switched) == 1 and switched[0][0] == 3 and switched[0][1] > 0, ctx)
            else:
                c.equal("%s: one CPU: one log a thread" % opt, [], switched, ctx)
            before = memfd_mappings(server.proc.pid)
            c.true("%s: btstub maps both threads' areas before the exit (%d)" % (opt, len(before)),
                   len(before) >= 2, "\n".join(before) + "\n" + ctx)
            # On to the end btstub holds (reported as SIGKILL), then, the
            # SIGKILL passed as gdb passes it, to the exit.
            ended = client.request("vCont;c", timeout=TIMEOUT)
            c.equal("%s: the end is held" % opt, 9, stop_signal(ended))
            held_areas = memfd_mappings(server.proc.pid)
            c.true("%s: btstub still maps the areas while the end is held (%d)" % (opt, len(held_areas)),
                   len(held_areas) >= 2, "\n".join(held_areas))
            ended = client.request("vCont;C09", timeout=TIMEOUT)
            c.true("%s: the program ends (%s)" % (opt, ended), ended[:1] in ("W", "X"))
            after = memfd_mappings(server.proc.pid)
            c.equal("%s: btstub maps no area after the exit" % opt, [], after, ctx)
            status, reply = monitor(client, "record status")
            c.contains("%s: monitor record status still answers" % opt, status, "Branch recording", reply)
            client.send_packet("k")


if __name__ == "__main__":
    run_test("test_translate_areas", main)
