#!/usr/bin/env python3
"""Record an RSP session between gdb and a server, then serve gdb the same
replies again without any server or program: what is left is gdb's own
time (and this script's), the floor below which no server can go.

Used by stepi_bench.py (`--servers ...,gdb-floor`); by hand:

    python3 tests/bench/rsp_replay.py record LOG -- btstub - prog   # prints "Listening on port N"
    python3 tests/bench/rsp_replay.py serve LOG                      # prints "Listening on port N"

`record` listens on 127.0.0.1:0, starts the server command with its
standard input and output as the connection (stdio mode), and copies
packets both ways, writing each (direction, payload) to LOG as JSON lines.
`serve` listens on 127.0.0.1:0 and answers each packet gdb sends with the
packets the server sent after the same packet in the recording; a packet
that differs from the recorded one ends the replay with an error.
"""

import json
import socket
import subprocess
import sys


class PacketReader:
    """Splits an RSP byte stream into packets; acks are dropped."""

    def __init__(self):
        self.buffer = b""

    def feed(self, data):
        self.buffer += data
        packets = []
        while True:
            start = self.buffer.find(b"$")
            if start < 0:
                if b"\x03" in self.buffer:
                    packets.append(b"\x03")
                self.buffer = b""
                return packets
            if b"\x03" in self.buffer[:start]:
                packets.append(b"\x03")
            end = self.buffer.find(b"#", start)
            if end < 0 or len(self.buffer) < end + 3:
                self.buffer = self.buffer[start:]
                return packets
            packets.append(self.buffer[start + 1:end])
            self.buffer = self.buffer[end + 3:]


def frame(payload):
    return b"$%s#%02x" % (payload, sum(payload) & 0xFF)


def listen():
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    print("Listening on port %d" % server.getsockname()[1], file=sys.stderr, flush=True)
    conn, _ = server.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    server.close()
    return conn


def record(log_path, argv):
    import selectors
    conn = listen()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    sel = selectors.DefaultSelector()
    sel.register(conn, selectors.EVENT_READ, "in")
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    readers = {"in": PacketReader(), "out": PacketReader()}
    with open(log_path, "w") as log:
        done = False
        while not done:
            for key, _ in sel.select():
                direction = key.data
                if direction == "in":
                    data = conn.recv(65536)
                    if not data:
                        done = True
                        break
                    proc.stdin.write(data)
                    proc.stdin.flush()
                else:
                    data = proc.stdout.read1(65536)
                    if not data:
                        done = True
                        break
                    conn.sendall(data)
                for payload in readers[direction].feed(data):
                    log.write(json.dumps([direction, payload.decode("latin-1")]) + "\n")
    proc.stdin.close()
    proc.wait(timeout=30)


def serve(log_path):
    events = [json.loads(line) for line in open(log_path)]
    conn = listen()
    reader = PacketReader()
    acks = True
    i = 0
    while i < len(events):
        data = conn.recv(65536)
        if not data:
            return 0
        for payload in reader.feed(data):
            if payload == b"\x03":
                continue
            while i < len(events) and events[i][0] != "in":
                i += 1
            if i == len(events):
                return 0
            expected = events[i][1].encode("latin-1")
            if payload != expected:
                print("rsp_replay: gdb sent %r where the recording has %r" % (payload[:80], expected[:80]),
                      file=sys.stderr)
                return 1
            i += 1
            out = b"+" if acks else b""
            while i < len(events) and events[i][0] == "out":
                reply = events[i][1].encode("latin-1")
                out += frame(reply)
                if payload == b"QStartNoAckMode" and reply == b"OK":
                    acks = False
                i += 1
            conn.sendall(out)
    return 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        return serve(sys.argv[2])
    if len(sys.argv) >= 5 and sys.argv[1] == "record" and sys.argv[3] == "--":
        record(sys.argv[2], sys.argv[4:])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
