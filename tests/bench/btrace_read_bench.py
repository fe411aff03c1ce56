#!/usr/bin/env python3
"""Branch-trace read benchmark (not a test): what gdb's first read of a long
`record btrace` history costs btstub, for one or two btstub binaries side
by side.

An RSP client does what gdb does for `set record btrace FMT buffer-size
unlimited`, `record btrace FMT` at the program's entry, `continue` to
bench_end, `info record`, on tests/programs/bench_checkpoints.c -O2
(ROUNDS rounds of 1,000 loop iterations, one taken branch each, no system
call): the last step reads qXfer:btrace:read (bts: delta; pt: new) in
chunks of 0x3fff bytes at rising offsets. One program run per format.
Printed: the time of the first reply (gdb gives up after its remote
timeout, 2 s, three tries), of the whole document, its size, and btstub's
peak resident memory (VmHWM) before and after the read.

    BTSTUB=build/btstub PROGRAMS_DIR=build/programs \\
        python3 tests/bench/btrace_read_bench.py [--base OTHER_BTSTUB] [--rounds 12000]
"""

import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import harness  # noqa: E402
from rsp_client import RspClient  # noqa: E402


def peak_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None


def symbol(path, name):
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^([0-9a-f]+) T %s$" % name, out, re.M)
    return int(m.group(1), 16)


def read_document(client, annex):
    """Reads qXfer:btrace:read:ANNEX whole; (first reply s, whole s, bytes)."""
    start = time.monotonic()
    reply = client.request("qXfer:btrace:read:%s:0,3fff" % annex, timeout=120)
    first = time.monotonic() - start
    size = len(reply) - 1
    while reply[:1] == "m":
        reply = client.request("qXfer:btrace:read:%s:%x,3fff" % (annex, size), timeout=120)
        if reply[:1] not in ("m", "l"):
            raise RuntimeError("read failed at offset %d: %r" % (size, reply[:200]))
        size += len(reply) - 1
    return first, time.monotonic() - start, size


def run(btstub, program, rounds, fmt):
    """One program run: gdb's `set record btrace FMT buffer-size unlimited`,
    `record btrace FMT` at the entry, `continue` to bench_end and the trace
    read that `info record` makes then (bts: delta; pt: new, as gdb reads
    it after its delta read is refused)."""
    args = [program, str(rounds), "1000", "0"]
    server = harness.Server("btstub", args, argv=[btstub, "--once", "127.0.0.1:0"] + args)
    pid = server.proc.pid
    try:
        with RspClient.connect(server.port, timeout=30) as client:
            client.handshake()
            base = 0
            for line in open("/proc/%d/maps" % server.inferior_pid):
                if line.rstrip().endswith(os.path.basename(program)):
                    base = int(line.split("-")[0], 16)
                    break
            end = base + symbol(program, "bench_end")
            assert client.request("Qbtrace-conf:%s:size=0x80000000" % fmt) == "OK"
            assert client.request("Qbtrace:" + fmt) == "OK"
            read_document(client, "new")  # gdb reads the trace once when tracing starts
            assert client.request("Z0,%x,1" % end) == "OK"
            start = time.monotonic()
            stop = client.request("vCont;c", timeout=3600)
            recorded = time.monotonic() - start
            if not stop.startswith("T05"):
                raise RuntimeError("no stop at bench_end: %r" % stop)
            client.request("qRcmd," + "record status".encode().hex())
            m = re.search(r"(\d+) of \d+ branches", client.console)
            branches = int(m.group(1)) if m else None
            before = peak_kib(pid)
            if fmt == "pt":
                assert client.request("qXfer:btrace:read:delta:0,3fff").startswith("E")
            first, whole, size = read_document(client, "delta" if fmt == "bts" else "new")
            after = peak_kib(pid)
            return (fmt, branches, recorded, first, whole, size, before, after)
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="a second btstub binary, run first")
    parser.add_argument("--rounds", type=int, default=12000)
    args = parser.parse_args()
    btstub = os.environ.get("BTSTUB", "build/btstub")
    program = os.path.join(os.environ.get("PROGRAMS_DIR", "build/programs"), "bench_checkpoints_O2")
    binaries = ([args.base] if args.base else []) + [btstub]
    print("| btstub | format | branches held | recording (s) | first reply (ms) | whole document (s) "
          "| document (MB) | btstub peak RSS before / after the read (MB) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for binary in binaries:
        for fmt in ("bts", "pt"):
            _, branches, recorded, first, whole, size, before, after = run(binary, program, args.rounds, fmt)
            print("| %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %.0f / %.0f |" % (
                binary, fmt, "{:,}".format(branches) if branches else "?", recorded, first * 1e3, whole,
                size / 1e6, before / 1024, after / 1024), flush=True)


if __name__ == "__main__":
    main()
