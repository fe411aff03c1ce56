#!/usr/bin/env python3
"""How `monitor` commands answer gdb, compared with gdbserver 13.1.

gdb reads a qRcmd's replies as O packets (console output) until OK or Enn;
any other reply it decodes as hex output, so an `E.text` error came out as
"Invalid hex digit 46" (issue 27, item 5). gdbserver answers an unknown
command with "Unknown monitor command.", a blank line and its list of
commands, then E01 (gdb: "Protocol error with Rcmd").

1. Against gdbserver and the server under test, one gdb script:
   `monitor frobnicate`, a bare `monitor`, `monitor set debug 1|0`,
   `monitor set remote-debug 1|0`, `monitor help`, `monitor set
   debug-format all|timestamp|none|bogus`, `monitor set debug-hw-points
   1|0`, `monitor set libthread-db-search-path PATH` and without PATH,
   `monitor set debug 2`, then `continue` to the program's end. `monitor
   help` is gdbserver's list, word for word (gdb's testsuite recognises
   gdbserver by it), then btstub's own commands; errors (unknown commands,
   a bare `monitor`, a bad debug-format, `set debug 2`): gdbserver's first
   lines, its list, its last line; every other `set`: gdbserver's output.
   Nowhere "Invalid hex digit".
2. btstub: `set debug 1` ... `set debug 0` (and remote-debug) switch its
   packet log on stderr (--remote-debug's) on and off.
3. btstub's own commands: `monitor help` lists them, `monitor record
   status`, `monitor replay status` answer as before; refused ones
   (`record size lots`, `record frob`, `replay frob`) print their reason,
   then gdb's "Protocol error with Rcmd"; after `set debug-format
   timestamp` the packet log's lines begin with the time; `monitor exit`
   prints nothing (as gdbserver) and ends the server.
4. A raw qRcmd that is not hex: E01 from both servers (btstub also prints
   why).

    python3 test_monitor_replies.py [--server gdbserver] [-v]
"""

import re

from harness import Server, program, run_gdb, run_gdb_tcp, run_test
from rsp_client import RspClient, hexs

UNKNOWN_FIRST = ["Unknown monitor command.", ""]
RCMD_ERROR = "Protocol error with Rcmd"
BAD_HEX = "Invalid hex digit"

COMPARED = [
    "monitor frobnicate",
    "monitor",
    "monitor set debug 1",
    "monitor set debug 0",
    "monitor set remote-debug 1",
    "monitor set remote-debug 0",
    "monitor help",
    "monitor set debug-format all",
    "monitor set debug-format timestamp",
    "monitor set debug-format none",
    "monitor set debug-format bogus",
    "monitor set debug-hw-points 1",
    "monitor set debug-hw-points 0",
    "monitor set libthread-db-search-path /tmp/one:/tmp/two",
    "monitor set libthread-db-search-path",
    "monitor set debug 2",
    "continue",
]

# Answered exactly as gdbserver answers them.
SAME = ["monitor set debug 1", "monitor set debug 0", "monitor set remote-debug 1", "monitor set remote-debug 0",
        "monitor set debug-format all", "monitor set debug-format timestamp", "monitor set debug-format none",
        "monitor set debug-hw-points 1", "monitor set debug-hw-points 0",
        "monitor set libthread-db-search-path /tmp/one:/tmp/two", "monitor set libthread-db-search-path"]
# Errors: gdbserver's first lines, its list, its last line (btstub's list
# is gdbserver's followed by btstub's own commands).
ERRORS = ["monitor frobnicate", "monitor", "monitor set debug-format bogus", "monitor set debug 2"]


def lines_of(result, command):
    return result.of_command(command).rstrip("\n").split("\n")


def check_compared(kind, c):
    prog = program("basic")
    runs = {}
    for k in ("gdbserver", kind):
        runs[k] = run_gdb_tcp(k, prog, [], COMPARED)
    ref, _ = runs["gdbserver"]
    test, server = runs[kind]
    ctx = test.transcript() + "\n--- server stderr ---\n" + server.stderr
    both = ref.transcript() + "\n" + test.transcript()

    ref_help = ref.of_command("monitor help")
    c.true("reference: gdbserver's list ends with `exit`", ref_help.endswith("    Quit GDBserver\n"), ref_help)
    c.true("`monitor help`: gdbserver's list, then the server's own commands",
           test.of_command("monitor help").startswith(ref_help), both)
    for cmd in ERRORS:
        ref_lines, test_lines = lines_of(ref, cmd), lines_of(test, cmd)
        c.equal("`%s`: gdbserver's first lines" % cmd, ref_lines[:2], test_lines[:2], both)
        c.true("`%s`: then gdbserver's list" % cmd, "\n".join(ref_lines[2:-1]) in "\n".join(test_lines[2:-1]),
               both)
        c.equal("`%s`: gdbserver's last line (E01)" % cmd, ref_lines[-1], test_lines[-1], both)
        c.equal("reference: `%s` ends with E01's message" % cmd, RCMD_ERROR, ref_lines[-1],
                ref.transcript())
    c.equal("reference: an unknown command starts so", UNKNOWN_FIRST, lines_of(ref, "monitor frobnicate")[:2],
            ref.transcript())
    c.equal("a bare `monitor` is answered as an unknown command",
            test.of_command("monitor frobnicate"), test.of_command("monitor"), ctx)
    for cmd in SAME:
        c.equal("`%s`: gdbserver's output" % cmd, ref.of_command(cmd), test.of_command(cmd), both)
    c.equal("reference: `monitor set debug 1` says", "Debug output enabled.\n",
            ref.of_command("monitor set debug 1"), ref.transcript())
    c.not_contains("no 'Invalid hex digit'", test.output, BAD_HEX, ctx)
    c.contains("the program runs to its end", test.of_command("continue"), "exited with code", ctx)
    if kind == "btstub":
        check_packet_log(c, server.stderr, ctx)


def check_packet_log(c, stderr, ctx):
    """The packet log runs from `set debug 1` to `set debug 0`, and from
    `set remote-debug 1` to `set remote-debug 0`: the switching command's
    own replies are logged from the first, the switching packet itself up
    to the last."""
    logged = [l for l in stderr.splitlines() if l.startswith(("getpkt (", "putpkt ("))]
    rcmd = lambda text: 'getpkt ("qRcmd,%s")' % hexs(text)
    c.true("the packet log is on after `monitor set debug 1`", bool(logged) and logged[0] ==
           'putpkt ("O%s")' % hexs("Debug output enabled.\n"), ctx)
    c.true("nothing before it is logged", rcmd("frobnicate") not in logged
           and not any("qSupported" in l for l in logged), ctx)
    c.true("`monitor set debug 0` is the last packet logged of the first window",
           rcmd("set debug 0") in logged and logged[logged.index(rcmd("set debug 0")) + 1]
           == 'putpkt ("O%s")' % hexs("Protocol debug output enabled.\n"), ctx)
    c.true("`monitor set remote-debug 0` is the last packet logged", bool(logged)
           and logged[-1] == rcmd("set remote-debug 0"), ctx)
    c.true("the resume after it is not logged", not any("vCont" in l for l in logged), ctx)


OWN = [
    "monitor help",
    "monitor record status",
    "monitor replay status",
    "monitor record size lots",
    "monitor record frob",
    "monitor replay frob",
    "monitor set debug-format timestamp",
    "monitor set debug 1",
    "monitor set debug 0",
    "monitor exit",
]


def check_own_commands(kind, c):
    if kind != "btstub":
        c.skip("btstub's own monitor commands", "btstub's")
        return
    prog = program("basic")
    server = Server(kind, [prog])
    try:
        r = run_gdb(OWN, prog, server.address)
        status = server.wait_exit(10)
    finally:
        server.stop()
    ctx = r.transcript() + "\n--- server stderr ---\n" + server.stderr
    c.true("monitor help lists btstub's own commands too", all(
        "\n  %s" % name in r.of(0) for name in ("record start", "replay status")), ctx)
    c.contains("monitor record status answers", r.of(1), "Branch recording (", ctx)
    c.contains("monitor replay status answers", r.of(2), "Not replaying", ctx)
    for i in (0, 1, 2):
        c.not_contains("`%s` is no error" % OWN[i], r.of(i), RCMD_ERROR, ctx)
    for i, reason in ((3, "Bad size 'lots': expected a number of bytes"),
                      (4, "Usage: monitor record start [BYTES]|stop|status|size BYTES"),
                      (5, "Usage: monitor replay status")):
        c.equal("`%s`: its reason, then E01" % OWN[i], [reason, RCMD_ERROR],
                r.of(i).rstrip("\n").split("\n"), ctx)
    c.not_contains("no 'Invalid hex digit'", r.output, BAD_HEX, ctx)
    stamped = [l for l in server.stderr.splitlines() if "getpkt (" in l or "putpkt (" in l]
    c.true("`set debug-format timestamp`: the packet log's lines begin with the time",
           bool(stamped) and all(re.match(r"\d+\.\d{6} [gp][eu]tpkt \(", l) for l in stamped), ctx)
    # gdb itself may say the connection went (as with gdbserver): not the server's words.
    c.equal("monitor exit prints nothing, as gdbserver", "",
            re.sub(r"Remote communication error\..*|Remote connection closed", "", r.of(len(OWN) - 1)).strip(), ctx)
    c.true("monitor exit ends the server", status is not None, ctx)


def check_raw(kind, c):
    replies = {}
    for k in ("gdbserver", kind):
        with Server(k, [program("basic")]) as server:
            with RspClient.connect(server.port) as client:
                client.handshake()
                replies[k] = (client.request("qRcmd,zz"), client.console)
    c.equal("a qRcmd that is not hex: E01, as gdbserver's", replies["gdbserver"][0], replies[kind][0])
    if kind == "btstub":
        c.equal("btstub says why first", "qRcmd: command is not valid hex\n", replies[kind][1])


def main(args, c):
    check_compared(args.server, c)
    check_own_commands(args.server, c)
    check_raw(args.server, c)


if __name__ == "__main__":
    run_test("test_monitor_replies", main)
