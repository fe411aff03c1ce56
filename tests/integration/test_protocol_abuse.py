#!/usr/bin/env python3
"""Hostile and broken clients against a real server running a real program
(basic), through a raw RSP client (rsp_client.py) instead of gdb:

framing (a bad checksum is NAKed and its retransmission accepted; a packet
longer than PacketSize; a truncated packet followed by a good one; binary
junk between packets; an interrupt byte while stopped), unknown packets (the
empty reply), every packet family of docs/protocol.md with malformed
arguments (missing fields, bad hex, huge lengths, negative numbers, bad
thread ids: an `E` reply, an `F-1` for vFile, or the empty reply), memory
reads and writes at unmapped addresses, Z0 at unmapped addresses and in
data (accepted, hidden from reads, gone after z0), z0 of a breakpoint never inserted. After every case the session
still answers `?` and `g`; each group ends with a continue that must report
the exit (W). Last, a client that sends half a packet and vanishes: the
server (without --once) serves the next client the same, stopped program.

Against gdbserver (`--server gdbserver`) the same cases run; where gdbserver
answers differently and btstub deliberately does not, the case prints
`NOTE` with gdbserver's reply instead of failing (see DIFFERS_FROM_GDBSERVER).

    python3 test_protocol_abuse.py [--server gdbserver] [-v]
"""

import os
import re
import socket
import subprocess
import tempfile
import time

from harness import Server, debug_registers_trap, load_base, program, run_test
from rsp_client import RspClient, RspError, escape_binary, frame, hexs

# Cases where gdbserver 13.1 answers otherwise and btstub's answer is the
# rule of this test (the reason is given once per case).
_LAX = "gdbserver accepts it and answers as if it were well-formed; btstub refuses malformed input"
_DIES = "gdbserver 13.1 drops the connection (it dies) on this packet; btstub answers E"
_RESUMES = "gdbserver resumes at a garbage address (the program dies); btstub answers E"
DIFFERS_FROM_GDBSERVER = {
    "queries: Hgzz": _LAX,
    "queries: Hg-5": _LAX,
    "queries: QProgramSignals:ffffffffffffffffffff": _LAX,
    "qXfer and btrace: qXfer:auxv:read::ffffffffffffffffffff,10":
        "gdbserver truncates the overflowing offset to 64 bits; btstub refuses it",
    "qXfer and btrace: qXfer:exec-file:read:99999999:0,10":
        "gdbserver overflows the pid (/proc/-171798691); btstub refuses it",
    "qXfer and btrace: qXfer:osdata:read:no-such:0,10":
        "gdbserver answers an empty document; btstub an error",
    "LLDB: x10,4": "gdbserver has no x packet (the empty reply); btstub reads and fails",
    "LLDB: xffffffffffffffff,10": "gdbserver has no x packet (the empty reply); btstub reads and fails",
    "registers and memory: M%x,4:00": _LAX,
    "registers and memory: M%x,ffffffffffffffff:00": _DIES,
    "breakpoints: Z0,%x,1" % 0x10: _DIES,
    "breakpoints: Z0,zz,1": _DIES,
    "breakpoints: Z0": _DIES,
    "breakpoints: Z0,%x": _LAX + " (it inserts a breakpoint at main)",
    "breakpoints: Z0,%x,1;X3,220027": "gdbserver evaluates conditions (it advertises ConditionalBreakpoints+); btstub refuses them",
    "resume: czz": _RESUMES,
    "resume: C05;zz": _RESUMES,
    "resume: szz": _DIES,
    "resume: vCont;s:p99999999.99999999": _DIES,
}

UNMAPPED = 0x10  # page 0 is never mapped (vm.mmap_min_addr)
STOP_REPLY = re.compile(r"^[TS][0-9a-f]{2}")


def error_or_empty(reply):
    return reply == "" or (reply.startswith("E") and len(reply) >= 2)


def error_empty_or_f_error(reply):
    return error_or_empty(reply) or reply.startswith("F-1")


def is_error(reply):
    return reply.startswith("E") and len(reply) >= 2


def is_empty(reply):
    return reply == ""


def any_reply(reply):
    return reply is not None


class Target:
    """A server on basic_O0 and a client connected to it."""

    # Not --once: gdbserver --once quits on the first packet it cannot parse.
    def __init__(self, kind, options=()):
        self.prog = program("basic")
        self.server = Server(kind, [self.prog], options=options)
        self.pid = self.server.inferior_pid
        self.client = RspClient.connect(self.server.port)
        self.supported = self.client.handshake()
        self.base = load_base(self.pid, self.prog)
        self.symbols = symbols(self.prog)
        self.alive = True

    def address(self, symbol):
        return self.base + self.symbols[symbol]

    def close(self):
        self.client.close()
        self.server.stop()


def symbols(path):
    out = subprocess.run(["nm", path], capture_output=True, text=True,
                         check=True).stdout
    table = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            table[parts[2]] = int(parts[0], 16)
    return table


def still_answers(client):
    """(ok, detail): the session answers `?` with a stop and `g` with hex."""
    try:
        stop = client.request("?")
        regs = client.request("g")
    except (RspError, OSError) as e:
        return False, "session gone: %s" % e
    ok = bool(STOP_REPLY.match(stop)) and bool(re.fullmatch(r"[0-9a-fx]{200,}", regs))
    return ok, "? -> %r, g -> %r" % (stop[:60], regs[:60])


def check_case(c, kind, target, name, payload, accept=error_or_empty,
               raw=None):
    """Sends payload (or raw bytes), checks the reply and that the session lives."""
    client = target.client
    try:
        if raw is not None:
            client.send_raw(raw)
            if not client.no_ack:
                ack = client.read_ack()
                if ack != "+":
                    raise RspError("NAK")
            reply = client.read_packet()
        else:
            reply = client.request(payload)
    except (RspError, OSError) as e:
        reply = None
        error = str(e)
    else:
        error = ""
    alive, detail = still_answers(client)
    target.alive = alive
    ok = reply is not None and accept(reply) and alive
    shown = payload if raw is None else repr(raw[:80])
    text = "sent %r\nreply %r %s\n%s" % (shown[:120], reply if reply is None
                                          else reply[:200], error, detail)
    key = name.replace("%x" % target.address("main"), "%x")
    if not ok and kind == "gdbserver" and key in DIFFERS_FROM_GDBSERVER:
        print("NOTE %s: gdbserver differs (%s)\n  %s" %
              (name, DIFFERS_FROM_GDBSERVER[key], text.replace("\n", "\n  ")))
        return
    c.true(name, ok, text)


def continue_to_exit(c, target, label):
    """Removes nothing, continues; the program must exit (W) through our session."""
    client = target.client
    try:
        client.send_packet("vCont;c")
        if not client.no_ack:
            client.read_ack()
        reply = client.read_packet(timeout=30)
        for _ in range(10):  # stray stops (e.g. a planted int3)
            if not STOP_REPLY.match(reply):
                break
            pc = re.search(r"(?:^T..|;)10:([0-9a-f]{16})", reply)
            if pc:  # take out whatever breakpoint stopped it
                addr = int.from_bytes(bytes.fromhex(pc.group(1)), "little")
                client.request("z0,%x,1" % addr)
                client.request("z0,%x" % addr)
            client.send_packet("vCont;c")
            if not client.no_ack:
                client.read_ack()
            reply = client.read_packet(timeout=30)
    except RspError as e:
        reply = "error: %s" % e
    c.matches("%s: continue reaches the exit" % label, reply, r"^W[0-9a-f]+")


# --------------------------------------------------------------------------
# Framing

def check_framing(kind, c):
    t = Target(kind)
    try:
        client = t.client
        # A bad checksum: NAK, then the same packet again is served.
        client.send_packet("qC", bad_checksum=True)
        c.equal("bad checksum is NAKed", "-", client.read_ack())
        check_case(c, kind, t, "retransmission after a NAK is accepted", "qC",
                   accept=lambda r: r.startswith("QC"))

        size = int(re.search(r"PacketSize=([0-9a-fA-F]+)", t.supported).group(1), 16)
        long_payload = "m" + "0" * (size + 64) + ",4"
        client.send_raw(frame(long_payload))
        try:
            ack = client.read_ack()
            reply = None if ack == "-" else client.read_packet()
        except RspError as e:
            ack, reply = "error: %s" % e, None
        c.true("packet longer than PacketSize: NAK, E or empty reply",
               ack == "-" or (ack == "+" and error_or_empty(reply)),
               "ack %r reply %r" % (ack, reply))
        ok, detail = still_answers(client)
        c.true("packet longer than PacketSize: session goes on", ok, detail)

        # Truncated: a server may restart at the next `$` (btstub NAKs the
        # broken packet and serves the good one) or swallow the good one
        # into the broken one (gdbserver: a bad checksum, NAK); then the
        # client retransmits, as gdb would.
        client.send_raw(b"$m1234,4")
        client.send_packet("qC")
        acks, replies = client.drain()
        if not replies and "-" in acks:
            client.send_packet("qC")
            more_acks, replies = client.drain()
            acks += more_acks
        c.true("truncated packet, then a good one (retransmitted on NAK)",
               len(replies) == 1 and replies[0].startswith("QC"),
               "acks %r replies %r" % (acks, replies))

        # Junk without the protocol's own bytes ($ starts a packet, 0x03
        # interrupts, +/- acknowledge: a stray '-' asks btstub to resend).
        junk = bytes(b for b in range(256) if b not in b"$\x03+-") + b"#zz}}**"
        client.send_raw(junk)
        check_case(c, kind, t, "binary junk between packets is skipped", "qC",
                   accept=lambda r: r.startswith("QC"))
        client.send_raw(b"\x03")
        time.sleep(0.2)
        check_case(c, kind, t, "interrupt byte while stopped is harmless", "qC",
                   accept=lambda r: r.startswith("QC"))

        for name in ("qBtstubNoSuch", "QBtstubNoSuch:1", "vBtstubNoSuch;1",
                     "jBtstubNoSuch", "y", "qXfer:btstub-nosuch:read::0,10"):
            check_case(c, kind, t, "unknown packet %s: empty reply" % name,
                       name, accept=is_empty)

        # After QStartNoAckMode a receiver need not check checksums:
        # btstub drops a bad packet silently, gdbserver serves it. Either
        # way nothing is NAKed and the next packet is served.
        c.equal("QStartNoAckMode", "OK", client.start_no_ack())
        client.send_packet("qfThreadInfo", bad_checksum=True)
        client.send_packet("qC")
        try:
            reply = client.read_packet()
            if reply.startswith("m"):
                reply = client.read_packet()
        except RspError as e:
            reply = "error: %s" % e
        c.true("no-ack mode: after a bad packet the next is served",
               reply.startswith("QC") and "-" not in client.acks,
               "reply %r acks %r" % (reply, client.acks))
        ok, detail = still_answers(client)
        c.true("no-ack mode: session goes on", ok, detail)
        continue_to_exit(c, t, "framing")
    finally:
        t.close()


# --------------------------------------------------------------------------
# Malformed arguments, family by family (docs/protocol.md)

def query_cases(t):
    return [
        ("qAttached:zz", error_or_empty), ("qAttached:-1", error_or_empty),
        ("qCxyz", error_or_empty), ("qfThreadInfoxyz", error_or_empty),
        ("qRcmd,zz", error_or_empty), ("qRcmd,6", error_or_empty),
        ("Hgzz", error_or_empty), ("Hg-5", error_or_empty),
        ("Hgp99999999.1", error_or_empty), ("Hg99999999", error_or_empty),
        ("Hq1", error_or_empty), ("Tzz", error_or_empty),
        ("T99999999", error_or_empty), ("Tp-3.-7", error_or_empty),
        ("QPassSignals:zz", error_or_empty),
        ("QProgramSignals:ffffffffffffffffffff", error_or_empty),
        ("QThreadEvents:zz", error_or_empty),
        ("QStartNoAckModexyz", error_or_empty),
        ("qSymbol:", error_or_empty), ("qSymbol:zz:zz", error_or_empty),
        ("qSymbol:12:6e7", error_or_empty),
        ("qGetTLSAddr:zz,10,20", error_or_empty), ("qGetTLSAddr:1,2", error_or_empty),
        ("qGetTLSAddr:p99999999.1,0,0", error_or_empty),
        ("qGetTLSAddr:1,ffffffffffffffffffff,0", error_or_empty),
    ]


def lldb_cases(t):
    """LLDB's own packets (gdbserver: the empty reply to all of them)."""
    main = t.address("main")
    return [
        ("qThreadStopInfo", error_or_empty), ("qThreadStopInfozz", error_or_empty),
        ("qThreadStopInfo99999999", error_or_empty), ("qThreadStopInfop-3.-7", error_or_empty),
        ("qThreadStopInfoffffffffffffffffffff", error_or_empty),
        ("jThreadsInfoxyz", error_or_empty), ("qHostInfo:1", error_or_empty),
        ("qProcessInfozz", error_or_empty), ("qShlibInfoAddrzz", error_or_empty),
        ("qMemoryRegionInfo", error_or_empty), ("qMemoryRegionInfo:zz", error_or_empty),
        ("qMemoryRegionInfo:ffffffffffffffffffff", error_or_empty),
        # The top of the address space is a gap: any well-formed reply.
        ("qMemoryRegionInfo:ffffffffffffffff", any_reply),
        ("qWatchpointSupportInfo:zz", error_or_empty), ("QEnableErrorStringsxyz", error_or_empty),
        ("x", error_or_empty), ("xzz,4", error_or_empty), ("x%x" % main, error_or_empty),
        ("x%x,4" % UNMAPPED, is_error), ("xffffffffffffffff,10", is_error),
        ("x%x,ffffffffffffffff" % main, any_reply),
        ("x%x,fffffffffffffffffffff" % main, error_or_empty),
        ("_M", error_or_empty), ("_Mzz,rw", error_or_empty), ("_M0,rw", error_or_empty),
        ("_M1000,rwq", error_or_empty), ("_M1000,rrw", error_or_empty),
        ("_Mffffffffffffffff,rwx", error_or_empty), ("_M10000000000000,rw", error_or_empty),
        ("_m", error_or_empty), ("_mzz", error_or_empty), ("_m%x" % main, error_or_empty),
        ("_mffffffffffffffffffff", error_or_empty), ("_x1", error_or_empty),
    ]


def xfer_cases(t):
    return [
        ("qXfer:features:read:target.xml:zz,10", error_or_empty),
        ("qXfer:features:read:target.xml:0", error_or_empty),
        ("qXfer:features:read:target.xml:", error_or_empty),
        ("qXfer:features:read:no-such.xml:0,10", error_or_empty),
        ("qXfer:features:write:target.xml:0:abcd", error_or_empty),
        ("qXfer:auxv:read::ffffffffffffffffffff,10", error_or_empty),
        ("qXfer:auxv:read::-10,10", error_or_empty),
        ("qXfer:exec-file:read:zz:0,10", error_or_empty),
        ("qXfer:exec-file:read:99999999:0,10", error_or_empty),
        ("qXfer:threads:read::0,zz", error_or_empty),
        # Objects that take no annex refuse one (gdbserver: E01), rather
        # than answer a document the client did not name.
        ("qXfer:auxv:read:junk:0,10", is_error),
        ("qXfer:threads:read:junk:0,10", is_error),
        ("qXfer:siginfo:read:junk:0,10", is_error),
        ("qXfer:siginfo:write:junk:0:00", is_error),
        ("qXfer:osdata:read:no-such:0,10", error_or_empty),
        # The annex (augmented-libraries-svr4-read options) is ignored, as
        # by gdbserver: any reply, as long as the session goes on.
        ("qXfer:libraries-svr4:read:zz:0,10", any_reply),
        ("qXfer:btrace:read:zz:0,10", error_or_empty),
        ("qXfer:btrace:read:all:0,10", error_or_empty),
        ("qXfer:btrace-conf:read::zz,10", error_or_empty),
        ("Qbtrace:zz", error_or_empty),
        ("Qbtrace-conf:bts:size=zz", error_or_empty),
        ("Qbtrace-conf:bts:size=-1", error_or_empty),
    ]


def register_memory_cases(t):
    main = t.address("main")
    return [
        # A short G writes the leading registers only (gdbserver: E).
        ("G" + "00" * 3, lambda r: r == "OK" or error_or_empty(r)), ("Gzz", error_or_empty),
        ("pzz", error_or_empty), ("p", error_or_empty),
        ("p-1", error_or_empty), ("p1000", error_or_empty),
        ("pffffffffffffffffffff", error_or_empty),
        ("P0=zz", error_or_empty), ("P0", error_or_empty),
        ("P1000=0000000000000000", error_or_empty), ("P0=00", error_or_empty),
        ("m", error_or_empty), ("mzz,4", error_or_empty),
        ("m%x" % main, error_or_empty), ("m-1,4", error_or_empty),
        ("m%x,4" % UNMAPPED, is_error),
        ("mffffffffffffffff,10", is_error),
        ("m%x,ffffffffffffffff" % main, any_reply),
        ("m%x,fffffffffffffffffffff" % main, error_or_empty),
        ("M%x,4:00000000" % UNMAPPED, is_error),
        ("M%x,4:00" % main, error_or_empty),
        ("Mzz,1:00", error_or_empty), ("M%x,2:zzzz" % main, error_or_empty),
        ("M%x,ffffffffffffffff:00" % main, error_or_empty),
    ]


def breakpoint_cases(t):
    main = t.address("main")
    return [
        ("Z0,%x,1" % UNMAPPED, is_error),
        ("Z0,zz,1", error_or_empty), ("Z0", error_or_empty),
        ("Z0,%x" % main, error_or_empty), ("Z9,%x,1" % main, error_or_empty),
        ("z0,%x,1" % main, is_error),
        # A condition (here "0": never stop) btstub did not advertise is
        # refused: ignored, the breakpoint would stop at every pass.
        ("Z0,%x,1;X3,220027" % main, is_error),
        ("z0,%x,1" % UNMAPPED, is_error),
        ("zzz", error_or_empty),
    ]


def resume_cases(t):
    return [
        ("czz", error_or_empty), ("Czz", error_or_empty),
        ("C05;zz", error_or_empty), ("szz", error_or_empty),
        ("Sxx", error_or_empty), ("vCont;x", error_or_empty),
        ("vCont;c:zz", error_or_empty), ("vCont;Czz", error_or_empty),
        # Signals this host does not have (gdb's SIGEMT, its "unknown"):
        # refused, as gdbserver's handle_v_cont does, not resumed without.
        ("vCont;C07", is_error), ("vCont;S8f", is_error),
        ("vCont;s:p99999999.99999999", error_or_empty),
        ("vCont", error_or_empty), ("vCont;", error_or_empty),
        ("bsxyz", error_or_empty), ("bc1234", error_or_empty),
    ]


def kill_detach_cases(t):
    return [
        ("vKill;zz", error_or_empty), ("vKill;-1", error_or_empty),
        ("vKill;99999999", error_or_empty),
        ("D;zz", error_or_empty), ("D;99999999", error_or_empty),
        ("D;-1", error_or_empty),
    ]


def extended_cases(t):
    return [
        ("vRun;zz", error_or_empty),
        ("vRun;" + hexs("/no/such/program"), error_or_empty),
        ("vAttach;zz", error_or_empty), ("vAttach;-5", error_or_empty),
        ("vAttach;0", error_or_empty), ("vAttach", error_or_empty),
        # Outside extended mode R is unknown: an empty reply, never silence.
        ("R00", is_empty),
    ]


def vfile_cases(t):
    return [
        ("vFile:open:zz,0,0", error_empty_or_f_error),
        ("vFile:open:%s,0,0" % hexs("/no/such/file"), error_empty_or_f_error),
        ("vFile:open:%s" % hexs("/etc/hostname"), error_empty_or_f_error),
        ("vFile:pread:zz,1,0", error_empty_or_f_error),
        ("vFile:pread:999,10,0", error_empty_or_f_error),
        ("vFile:pread:-1,10,0", error_empty_or_f_error),
        ("vFile:close:-1", error_empty_or_f_error),
        ("vFile:close:999", error_empty_or_f_error),
        ("vFile:fstat:999", error_empty_or_f_error),
        ("vFile:setfs:zz", error_empty_or_f_error),
        ("vFile:readlink:zz", error_empty_or_f_error),
        ("vFile:unlink:%s" % hexs("/no/such/file"), error_empty_or_f_error),
        ("vFile:unlink:zz", error_empty_or_f_error),
        ("vFile:unlink:", error_empty_or_f_error),
        ("vFile:pwrite:999,0,abc", error_empty_or_f_error),
        ("vFile:pwrite:-1,0,abc", error_empty_or_f_error),
        ("vFile:pwrite:zz,0,abc", error_empty_or_f_error),
        ("vFile:pwrite:1", error_empty_or_f_error),
        ("vFile:pwrite:1,ffffffffffffffffff,abc", error_empty_or_f_error),
        ("vFile:nosuch:1", error_empty_or_f_error),
    ]


def check_families(kind, c):
    groups = [("queries", query_cases), ("qXfer and btrace", xfer_cases),
              ("registers and memory", register_memory_cases),
              ("breakpoints", breakpoint_cases), ("resume", resume_cases),
              ("kill and detach", kill_detach_cases),
              ("extended", extended_cases), ("vFile", vfile_cases),
              ("LLDB", lldb_cases)]
    for group, make_cases in groups:
        t = Target(kind)
        try:
            for payload, accept in make_cases(t):
                check_case(c, kind, t, "%s: %s" % (group, payload), payload, accept)
                if not t.alive:  # a fresh program, so later cases still count
                    t.close()
                    t = Target(kind)
            if group == "registers and memory":
                check_binary_writes(kind, c, t)
            if group == "breakpoints":
                check_breakpoint_addresses(kind, c, t)
            if group == "vFile":
                check_vfile_huge_read(kind, c, t)
            if kind == "gdbserver" and group == "breakpoints":
                # The kind-less Z0 gdbserver accepted keeps stopping it at main.
                print("NOTE breakpoints: gdbserver not run to its exit")
            else:
                continue_to_exit(c, t, group)
        finally:
            t.close()


def check_binary_writes(kind, c, t):
    main = t.address("main")
    check_case(c, kind, t, "X to an unmapped address", None, is_error,
               raw=frame(b"X%x,4:" % UNMAPPED + escape_binary(b"\x01\x02$#")))
    check_case(c, kind, t, "X with a length past its data", None,
               error_or_empty, raw=frame(b"X%x,ffff:" % main + b"ab"))
    check_case(c, kind, t, "X ending in a lone escape", None, error_or_empty,
               raw=frame(b"X%x,1:}" % main))


def check_breakpoint_addresses(kind, c, t):
    # .rodata (greeting) and .data (counter) are mapped but not executable:
    # btstub refuses an int3 there (the program itself would read it);
    # gdbserver accepts it. Just below a thread's stack pointer both accept:
    # gdb puts the breakpoint ending an inferior call there.
    counter = t.address("counter")
    before = read_mem(t.pid, counter, 1)
    expect = (lambda r: r == "OK") if kind == "gdbserver" else is_error
    for what, addr in (("read-only data", t.address("greeting")), ("writable data", counter)):
        check_case(c, kind, t, "Z0 in non-executable memory (%s)" % what,
                   "Z0,%x,1" % addr, expect)
    reply = t.client.request("m%x,4" % counter)
    c.equal("counter reads 5 (no int3 seen)", "05000000", reply)
    for addr in (t.address("greeting"), counter):
        t.client.request("z0,%x,1" % addr)
    c.equal("no int3 in data", before, read_mem(t.pid, counter, 1))
    # rsp is the 8th register of the 'g' reply (amd64: 8 bytes each).
    sp = int.from_bytes(bytes.fromhex(t.client.request("g")[7 * 16:8 * 16]), "little")
    slot = read_mem(t.pid, sp - 64, 1)
    check_case(c, kind, t, "Z0 just below the stack pointer (inferior call)",
               "Z0,%x,1" % (sp - 64), lambda r: r == "OK")
    c.equal("stack slot reads unchanged with the Z0 on it", slot,
            t.client.request("m%x,1" % (sp - 64)))
    check_case(c, kind, t, "z0 just below the stack pointer",
               "z0,%x,1" % (sp - 64), lambda r: r == "OK")
    c.equal("no int3 left on the stack after z0", slot, read_mem(t.pid, sp - 64, 1))
    main = t.address("main")
    before = t.client.request("m%x,1" % main)
    check_case(c, kind, t, "Z0 at main", "Z0,%x,1" % main, lambda r: r == "OK")
    check_case(c, kind, t, "z0 at main", "z0,%x,1" % main, lambda r: r == "OK")
    check_case(c, kind, t, "z0 at main a second time", "z0,%x,1" % main,
               is_error)
    byte = read_mem(t.pid, main, 1)
    if kind == "gdbserver" and byte != before:
        # gdbserver took the kind-less "Z0,<main>" above as a second
        # breakpoint at main, so one z0 leaves it inserted.
        print("NOTE gdbserver left %s at main after z0 (before %s)" % (byte, before))
        t.client.request("z0,%x" % main)  # the kind-less one, as it was inserted
        return
    c.equal("no int3 left at main after z0", before, byte)


def read_mem(pid, addr, size):
    with open("/proc/%d/mem" % pid, "rb") as mem:
        mem.seek(addr)
        return mem.read(size).hex()


def check_vfile_huge_read(kind, c, t):
    client = t.client
    client.request("vFile:setfs:0")
    reply = client.request("vFile:open:%s,0,0" % hexs("/etc/passwd"))
    m = re.match(r"^F([0-9a-f]+)", reply)
    c.true("vFile: open a real file", m is not None, reply)
    if not m:
        return
    fd = m.group(1)
    check_case(c, kind, t, "vFile: pread with a huge count",
               "vFile:pread:%s,ffffffffffffffff,0" % fd,
               lambda r: r.startswith("F") or error_or_empty(r))
    check_case(c, kind, t, "vFile: pread at a huge offset",
               "vFile:pread:%s,10,7fffffffffffffff" % fd,
               lambda r: r.startswith("F0;") or r.startswith("F-1"))
    check_case(c, kind, t, "vFile: close", "vFile:close:%s" % fd,
               lambda r: r == "F0")
    check_vfile_escaped_read(kind, c, t)
    if kind == "btstub":  # gdbserver 13.1 waits in open(2) for a writer, for good
        check_vfile_fifo(kind, c, t)


def check_vfile_escaped_read(kind, c, t):
    """A pread whose bytes all need escaping: the reply fits PacketSize
    (fewer bytes, as a short read) and holds exactly the bytes it counts."""
    client = t.client
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "escapes")
        content = b"}#$*" * 10000
        with open(path, "wb") as f:
            f.write(content)
        reply = client.request("vFile:open:%s,0,0" % hexs(path))
        m = re.match(r"^F([0-9a-f]+)$", reply)
        c.true("vFile: open a file of escaped bytes", m is not None, reply)
        if not m:
            return
        fd = m.group(1)
        reply = client.request("vFile:pread:%s,4000,0" % fd).encode("latin-1")
        client.request("vFile:close:%s" % fd)
    # The client undid the escapes; as sent, each of these bytes took two.
    head, _, data = reply.partition(b";")
    sent = len(head) + 1 + len(escape_binary(data))
    count = int(head[1:], 16) if re.fullmatch(rb"F[0-9a-f]+", head) else -1
    packet_size = int(re.search(r"PacketSize=([0-9a-f]+)", t.supported).group(1), 16)
    fits = sent <= packet_size
    detail = "reply of %d bytes, head %r" % (sent, head[:20])
    if kind == "gdbserver" and not fits:
        # 13.1 fills its buffer to PacketSize and one byte past it.
        print("NOTE vFile: gdbserver's escaped pread is longer than its PacketSize (%s)" % detail)
    else:
        c.true("vFile: an escaped pread fits PacketSize (%d bytes)" % packet_size, fits, detail)
    c.true("vFile: an escaped pread holds the bytes it counts",
           0 < count == len(data) and data == content[:count],
           "count %d, %d bytes" % (count, len(data)))


def check_vfile_fifo(kind, c, t):
    """Opening a FIFO no one writes to answers at once; reading it too."""
    client = t.client
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fifo")
        os.mkfifo(path)
        check_case(c, kind, t, "vFile: open a FIFO without a writer",
                   "vFile:open:%s,0,0" % hexs(path),
                   lambda r: re.fullmatch(r"F[0-9a-f]+|F-1,[0-9a-f]+", r) is not None)
        reply = client.request("vFile:open:%s,0,0" % hexs(path))
        m = re.match(r"^F([0-9a-f]+)$", reply)
        if m:
            check_case(c, kind, t, "vFile: read a FIFO without a writer",
                       "vFile:pread:%s,100,0" % m.group(1),
                       lambda r: r.startswith("F"))
        check_case(c, kind, t, "vFile: open a FIFO for writing without a reader",
                   "vFile:open:%s,1,0" % hexs(path),
                   lambda r: re.fullmatch(r"F[0-9a-f]+|F-1,[0-9a-f]+", r) is not None)


# --------------------------------------------------------------------------
# A client that vanishes mid-packet

def check_half_packet_then_vanish(kind, c):
    prog = program("basic")
    with Server(kind, [prog], options=()) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
            s.sendall(b"$qSupported:multipro")
        time.sleep(0.3)
        c.true("half a packet, then gone: server still running",
               server.proc.poll() is None, server.stderr)
        try:
            with RspClient.connect(server.port) as client:
                reply = client.request("?")
        except (RspError, OSError) as e:
            reply = "error: %s" % e
        c.matches("half a packet, then gone: the next client is served",
                  reply, r"^[TSWX][0-9a-f]{2}")
        # The program was stopped: kept for the next client, as by gdbserver.
        first = server.inferior_pid
        if first:
            c.true("half a packet, then gone: the next client gets the same program",
                   _alive(first) and not re.search(
                       r"created; pid = (?!%d\b)" % first, server.stderr),
                   server.stderr)


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def check_idempotent_inserts(kind, c):
    """Z1 and Z2 sent twice, then z1 and z2 once (a retransmitted packet, a
    script): the protocol asks inserts to be idempotent, so nothing is left
    and the program runs to its exit, as under gdbserver. btstub counted
    them before and stopped at main."""
    if not debug_registers_trap():
        print("SKIP Z1/Z2 twice: debug registers never trap here")
        return
    t = Target(kind)
    try:
        main, counter = t.address("main"), t.address("counter")
        for packet in ("Z1,%x,1" % main, "Z1,%x,1" % main, "z1,%x,1" % main,
                       "Z2,%x,4" % counter, "Z2,%x,4" % counter, "z2,%x,4" % counter):
            c.equal("twice, then once: %s" % packet.replace("%x" % main, "main").replace("%x" % counter, "counter"),
                    "OK", t.client.request(packet))
        c.matches("Z1/Z2 twice, z1/z2 once: the program runs to its exit",
                  t.client.request("vCont;c", timeout=30), r"^W[0-9a-f]+")
    finally:
        t.close()


def check_any_thread_resume(kind, c):
    """vCont with thread 0 ("any thread": pPID.0, or 0 alone) resumes the
    process, as gdbserver reads it (a pid-only ptid); btstub answered
    "E.No thread to resume" before."""
    t = Target(kind)
    try:
        main = t.address("main")
        c.equal("Z0 at main (thread-0 resume)", "OK", t.client.request("Z0,%x,1" % main))
        c.matches("vCont;c:pPID.0 resumes the process (to main)",
                  t.client.request("vCont;c:p%x.0" % t.pid, timeout=30), r"^T05.*swbreak")
        c.equal("z0 at main (thread-0 resume)", "OK", t.client.request("z0,%x,1" % main))
        c.matches("vCont;c:0 resumes it to its exit", t.client.request("vCont;c:0", timeout=30), r"^W[0-9a-f]+")
    finally:
        t.close()


def main(args, c):
    check_framing(args.server, c)
    check_families(args.server, c)
    check_half_packet_then_vanish(args.server, c)
    check_idempotent_inserts(args.server, c)
    check_any_thread_resume(args.server, c)


if __name__ == "__main__":
    run_test("test_protocol_abuse", main)
