#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/)
from gdb transcripts taken with `set debug remote 1`, plus hand-made edge
cases. Re-run it after capturing new sessions:

    gdb -batch -nx -ex 'set debug remote 1' PROG -ex 'target remote :PORT' \
        -ex ... > session.log 2>&1
    python3 tests/fuzz/seed_corpus.py session.log [more.log ...]

Only packets whose checksum matches the decoded text are taken, so a
transcript line gdb shortened or escaped in a way we misread is dropped.
Files are named by the SHA-1 of their content, as libFuzzer names its own,
so re-running adds new seeds and never duplicates one.
"""
import hashlib
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


# The C escapes gdb's debug output writes for control bytes.
C_ESCAPES = {"a": 0x07, "b": 0x08, "t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D, "e": 0x1B}


def unprintable(text):
    """Undoes gdb's debug-output escaping: \\ooo octal, C escapes (\\n,
    \\t, \\e, ...) and \\\\."""
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            if text[i + 1] == "\\":
                out.append(0x5C)
                i += 2
                continue
            if text[i + 1] in C_ESCAPES:
                out.append(C_ESCAPES[text[i + 1]])
                i += 2
                continue
            m = re.match(r"[0-7]{3}", text[i + 1:i + 4])
            if m:
                out.append(int(m.group(0), 8))
                i += 4
                continue
        out += c.encode("latin-1")
        i += 1
    return bytes(out)


def packets(log):
    """Payloads gdb sent and received, as bytes, checksum-verified."""
    sent, received = [], []
    for line in open(log, encoding="latin-1"):
        m = re.search(r"Sending packet: \$(.*)#([0-9a-f]{2})$", line.rstrip("\n"))
        if m:
            payload = unprintable(m.group(1))
            if sum(payload) % 256 == int(m.group(2), 16):
                sent.append(payload)
            continue
        m = re.search(r"Packet received: (.*)$", line.rstrip("\n"))
        if m:
            received.append(unprintable(m.group(1)))
    return sent, received


def frame(payload):
    return b"$" + payload + b"#%02x" % (sum(payload) % 256)


def write(target, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def rsp_link_seeds(sent):
    for p in sent:
        write("fuzz_rsp_link", b"\x00+" + frame(p))
    # A session as the wire carries it: each packet, acked replies between.
    for seed, chunk in ((0, sent[:40]), (7, sent[40:80]), (200, sent[80:120])):
        write("fuzz_rsp_link", bytes([seed]) + b"".join(b"+" + frame(p) for p in chunk))
    edge = [
        b"$qC#b4\x03$?#3f",                 # interrupt between packets
        b"$g#67-+-",                        # NAKs: retransmit the last reply
        b"$m0,1#00$m0,1#fa",                # bad checksum, then the retransmission
        b"$m0,1#FA",                        # upper-case checksum digits
        b"$m10,4$m10,4#2c",                 # gdb gave up and started over
        b"noise\x01\x02$?#3f",              # line noise before a packet
        b"$X10,1:}]#ab",                    # an escaped '}' in binary data
        b"$QStartNoAckMode#b0$?#3f-$?#00",  # no-ack mode: no acks, no NAKs
        b"$?#3",                            # truncated checksum
        b"$" + b"a" * 16384 + b"#00",       # exactly PacketSize: bad checksum only
        b"$" + b"a" * 16385 + b"#00$?#3f",  # oversize, then a good packet
        b"$" + b"b" * 17000 + b"$?#3f",     # oversize and unterminated, then a packet
        frame(b"vFile:pwrite:3,0,}]}\x03}\x04}\x0a,:"),  # remote put's escaped data
        frame(b"qRcmd,66726f626e6963617465"),  # monitor frobnicate
    ]
    for i, e in enumerate(edge):
        write("fuzz_rsp_link", bytes([i * 37 % 256]) + e)


def main(logs):
    sent, received = [], []
    for log in logs:
        s, r = packets(log)
        sent += s
        received += r
    unique = list(dict.fromkeys(sent))
    for p in unique:
        write("fuzz_requests", p)
        if p.startswith(b"qXfer:"):
            write("fuzz_xfer", p[len(b"qXfer:"):])
    for extra in [b"btrace:read:all:0,fff", b"btrace:read:delta:0,fff", b"btrace:read:new:1000,fff",
                  b"btrace-conf:read::0,fff", b"osdata:read:processes:0,fff", b"osdata:read::0,fff",
                  b"features:read:target.xml:2000,1000", b"libraries-svr4:read:start=7f00;prev=0:0,fff",
                  b"features:write:target.xml:0,10", b"threads:read::ffffffffffffffff,ffffffffffffffff"]:
        write("fuzz_xfer", extra)
    for extra in [b"bc", b"bs", b"vCont;c:p1.-1;s:p1.2;t", b"vCont;C0b:p1f.20", b"Z2,1000,8",
                  b"vRun;;6172673120;", b"vAttach;4d2", b"Qbtrace:off", b"R00", b"!", b"QThreadEvents:1",
                  b"X1000,3:}]}\x03}\x04", b"M1000,2:abcd", b"P10=0010400000000000", b"D;1f", b"vKill;1f",
                  b"vFile:unlink:2f746d70", b"vFile:readlink:2f70726f632f73656c662f657865",
                  # remote put's data: escapes, ',' and ':' and NUL are data; empty; a lone '}'
                  b"vFile:pwrite:6,0,new contents\n", b"vFile:pwrite:a,4000,}\x03}\x04}]}\x0a,:\x00z",
                  b"vFile:pwrite:1,ff,", b"vFile:pwrite:1,0,abc}", b"vFile:pwrite:1,ffffffffffffffff,x",
                  b"vFile:unlink:2f00", b"vFile:unlink:",
                  # monitor: unknown, bare, gdbserver's set debug, btstub's own, not hex
                  b"qRcmd,66726f626e6963617465", b"qRcmd,", b"qRcmd,7365742064656275672031",
                  b"qRcmd,7365742072656d6f74652d64656275672030", b"qRcmd,7265636f72642073697a65206c6f7473",
                  b"qRcmd,7265706c617920737461747573", b"qRcmd,zz", b"qRcmd,6", b"qRcmd",
                  b"qRcmd," + b"41" * 8000 + b"0a" * 190]:
        write("fuzz_requests", extra)
    rsp_link_seeds(unique)

    hexes = set()
    for p in unique + received:
        for m in re.finditer(rb"[0-9a-fA-F]{2,}", p):
            hexes.add(m.group(0)[:512])
    for h in sorted(hexes)[:300]:
        write("fuzz_hex", h)
    for e in [b"", b"-1", b"-0", b"7fffffffffffffff", b"8000000000000000", b"-8000000000000000",
              b"ffffffffffffffff", b"10000000000000000", b"0000000000000000001", b"}]}\x03}", b"}",
              b"a#b$c*d}", b"1,2,,3", b"7fffffff", b"80000000", b"-80000000", b"-80000001", b"Ab"]:
        write("fuzz_hex", e)

    # BlockTrace inputs: flags, capacity, origin (2 or 8 bytes), then ops.
    def trace(flags, cap, origin, ops):
        o = struct.pack("<Q" if flags & 4 else "<H", origin)
        return bytes([flags, cap]) + o + ops
    small = b"".join(bytes([1]) + struct.pack("<HH", 0x1000 + 16 * i, 0x2000 + 16 * i) for i in range(20))
    big = b"".join(bytes([0x81]) + struct.pack("<QQ", 0x555555555000 + i, 0x7ffff7a00000 + i) for i in range(6))
    write("fuzz_btrace_xml", trace(0, 8, 0x1000, small + b"\xfd\x00\x34\x12\x00"))
    write("fuzz_btrace_xml", trace(1, 8, 0x1000, small + b"\xfd\x03\x01\x00\x10\x00\x00\x00\x00\x00\x00\x02"))
    write("fuzz_btrace_xml", trace(2, 4, 0, small + b"\xfe\x02" + small[:20] + b"\xfd\x01\x00\x00\x00\x01"))
    write("fuzz_btrace_xml", trace(6, 3, 0x555555555000, big + b"\xff\x00\x10" + big[:34] + b"\xfd\x00\x00\x10\x00\x02"))
    write("fuzz_btrace_xml", trace(3, 1, 0x4000, small[:15] + b"\xfe\x10" + small))


if __name__ == "__main__":
    main(sys.argv[1:])
