#!/usr/bin/env python3
"""How `monitor` commands answer gdb, compared with gdbserver 13.1.

gdb reads a qRcmd's replies as O packets (console output) until OK or Enn;
any other reply it decodes as hex output, so an `E.text` error came out as
"Invalid hex digit 46" (issue 27, item 5). gdbserver answers an unknown
command with "Unknown monitor command.", a blank line and its list of
commands, then E01 (gdb: "Protocol error with Rcmd").

1. Against gdbserver and the server under test, one gdb script:
   `monitor frobnicate`, a bare `monitor`, `monitor set debug 1`,
   `monitor set debug 0`, `monitor set remote-debug 1`, `monitor set
   remote-debug 0`, then `continue` to the program's end. Unknown commands
   (frobnicate, bare): the same first lines and the same last line as
   gdbserver's, the server's own command list between, the bare one
   answered as frobnicate; the `set` commands: the same output as
   gdbserver's. Nowhere "Invalid hex digit".
2. btstub: `set debug 1` ... `set debug 0` (and remote-debug) switch its
   packet log on stderr (--remote-debug's) on and off.
3. btstub's own commands: `monitor help`, `monitor record status`,
   `monitor replay status` answer as before; refused ones (`record size
   lots`, `record frob`, `replay frob`, `set debug 2`) print their reason,
   then gdb's "Protocol error with Rcmd"; `monitor exit` ends the server.
4. A raw qRcmd that is not hex: E01 from both servers (btstub also prints
   why).

    python3 test_monitor_replies.py [--server gdbserver] [-v]
"""

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
    "continue",
]

# What each server lists after "Unknown monitor command." (its help).
LIST_HEADER = {
    "gdbserver": "The following monitor commands are supported:",
    "btstub": "btstub monitor commands:",
}


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

    for cmd in ("monitor frobnicate", "monitor"):
        ref_lines, test_lines = lines_of(ref, cmd), lines_of(test, cmd)
        c.equal("reference: `%s` starts as gdbserver's always did" % cmd, UNKNOWN_FIRST,
                ref_lines[:2], ref.transcript())
        c.equal("`%s`: gdbserver's first lines" % cmd, ref_lines[:2], test_lines[:2], ctx)
        c.equal("`%s`: then the server's list of commands" % cmd, LIST_HEADER.get(kind),
                test_lines[2] if len(test_lines) > 2 else None, ctx)
        c.equal("`%s`: gdbserver's last line (E01)" % cmd, ref_lines[-1], test_lines[-1], ctx)
        c.equal("reference: `%s` ends with E01's message" % cmd, RCMD_ERROR, ref_lines[-1],
                ref.transcript())
    c.equal("a bare `monitor` is answered as an unknown command",
            test.of_command("monitor frobnicate"), test.of_command("monitor"), ctx)
    for cmd in ("monitor set debug 1", "monitor set debug 0", "monitor set remote-debug 1",
                "monitor set remote-debug 0"):
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
    "monitor set debug 2",
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
    c.true("monitor help lists every command", all(
        "  %s -- " % name in r.of(0) for name in ("exit", "help", "record", "replay", "set")), ctx)
    c.contains("monitor record status answers", r.of(1), "Branch recording (", ctx)
    c.contains("monitor replay status answers", r.of(2), "Not replaying", ctx)
    for i in (0, 1, 2):
        c.not_contains("`%s` is no error" % OWN[i], r.of(i), RCMD_ERROR, ctx)
    for i, reason in ((3, "Bad size 'lots': expected a number of bytes"),
                      (4, "Usage: monitor record start [BYTES]|stop|status|size BYTES"),
                      (5, "Usage: monitor replay status"),
                      (6, "Usage: monitor set debug <0|1> | set remote-debug <0|1>")):
        c.equal("`%s`: its reason, then E01" % OWN[i], [reason, RCMD_ERROR],
                r.of(i).rstrip("\n").split("\n"), ctx)
    c.not_contains("no 'Invalid hex digit'", r.output, BAD_HEX, ctx)
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
