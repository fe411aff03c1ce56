#!/usr/bin/env python3
"""A reverse or forward continue over a long history tells the client how
far it has come, and stops at the client's interrupt (issue 27, item 7).

gdb waits for a continue's stop reply without a timeout, but a scan to the
start of a long history takes seconds (about 0.5 µs a branch here: 163
million instructions of zlib, 9.9 s) and said nothing, and Ctrl-C did not
stop it. RSP client against `btstub --record` on record_workload -O2, 1,500
rounds (about 200,000 branches), stopped at bench_end, with a breakpoint
at an address no instruction starts at (every block in range is searched):

- `--replay-progress=0` (a line every 65,536 branches): `bc` prints
  "btstub: searching the history: N of at most M branches (P%); Ctrl-C
  stops here" lines as O packets, N rising, M the branches behind the
  thread, then stops with replaylog:begin; `c` back to the end prints them
  too and stops with replaylog:end.
- the default (from 2 s on): the same `bc` prints nothing.
- `bc` and an interrupt byte sent together: the stop is SIGINT (T02, as
  an interrupted run), somewhere between; the thread's pc there is one
  the history holds (bs then bc go on from it to replaylog:begin).

Against gdbserver: skipped (no recording).

    python3 test_replay_turns.py [-v]
"""

import re

from harness import Server, program, run_test, load_base, symbol_offset
from rsp_client import RspClient

ROUNDS = "1500"
PROGRESS = re.compile(r"btstub: searching the history: (\d+) of at most (\d+) branches \((\d+)%\); "
                      r"Ctrl-C stops here\n")


def stopped_at_end(c, client, prog, base, ctx):
    assert client.request("Z0,%x,1" % (base + symbol_offset(prog, "bench_end"))) == "OK"
    stop = client.request("vCont;c", timeout=120)
    c.true("the program stops at bench_end", stop.startswith("T05"), ctx + stop)
    assert client.request("z0,%x,1" % (base + symbol_offset(prog, "bench_end"))) == "OK"
    # Inside bench_begin's first instruction: never an instruction's address.
    assert client.request("Z0,%x,1" % (base + symbol_offset(prog, "bench_begin") + 1)) == "OK"


def session(prog, options):
    server = Server("btstub", [prog, ROUNDS], options=("--once", "--record") + options)
    client = RspClient.connect(server.port, timeout=60)
    client.handshake()
    return server, client, load_base(server.inferior_pid, prog)


def check_progress(c, prog):
    server, client, base = session(prog, ("--replay-progress=0",))
    with server, client:
        ctx = "--- server stderr ---\n" + server.stderr
        stopped_at_end(c, client, prog, base, ctx)
        client.console = ""
        stop = client.request("bc", timeout=120)
        c.contains("bc goes back to the start of the history", stop, "replaylog:begin", stop)
        lines = PROGRESS.findall(client.console)
        c.true("bc printed its progress (a line every 65,536 branches)", len(lines) >= 2, client.console)
        scanned = [int(n) for n, _, _ in lines]
        most = {int(m) for _, m, _ in lines}
        c.true("the branches scanned rise", scanned == sorted(scanned) and len(set(scanned)) == len(scanned),
               client.console)
        c.true("against one total, the branches behind the thread (> 100,000)",
               len(most) == 1 and min(most) > 100000 and max(scanned) <= min(most), client.console)
        c.equal("nothing else on the console", PROGRESS.sub("", client.console), "", client.console)
        client.console = ""
        stop = client.request("c", timeout=120)
        c.contains("c goes forward to the end of the history", stop, "replaylog:end", stop)
        c.true("... printing its progress too", len(PROGRESS.findall(client.console)) >= 2, client.console)


def check_quiet_by_default(c, prog):
    server, client, base = session(prog, ())
    with server, client:
        stopped_at_end(c, client, prog, base, "")
        client.console = ""
        stop = client.request("bc", timeout=120)
        c.contains("bc goes back to the start of the history", stop, "replaylog:begin", stop)
        c.equal("a scan shorter than 2 s prints nothing", client.console, "", client.console)


def check_interrupt(c, prog):
    server, client, base = session(prog, ())
    with server, client:
        stopped_at_end(c, client, prog, base, "")
        client.start_no_ack()
        client.send_raw(b"$bc#c5\x03")
        stop = client.read_packet(timeout=120)
        c.true("an interrupt stops bc with SIGINT", stop.startswith("T02"), stop)
        c.not_contains("... before the start of the history", stop, "replaylog", stop)
        pc = client.request("p10")
        c.true("the pc there is known", re.fullmatch(r"[0-9a-f]{16}", pc or "") is not None, pc)
        stop = client.request("bs", timeout=60)
        c.true("bs goes on from there", stop.startswith("T05") and "replaylog" not in stop, stop)
        stop = client.request("bc", timeout=120)
        c.contains("and bc to the start of the history", stop, "replaylog:begin", stop)


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub records (skipped for %s)" % args.server, True)
        return
    prog = program("record_workload", "O2")
    check_progress(c, prog)
    check_quiet_by_default(c, prog)
    check_interrupt(c, prog)


if __name__ == "__main__":
    run_test("test_replay_turns", main)
