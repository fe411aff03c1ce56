"""A small raw-socket GDB Remote Serial Protocol client for the abuse and
lifecycle tests: it speaks the framing itself (so a test can break it on
purpose) and works against btstub and gdbserver alike.

    with RspClient.connect(port) as c:
        c.request("?")                  # -> "T05thread:...;"
        c.send_raw(b"$g#00")            # a bad checksum; c.read_ack() -> "-"
        c.start_no_ack()                # QStartNoAckMode

Replies are returned decoded (run-length expansion and `}` escapes undone)
as latin-1 strings, so binary payloads survive. `O` console packets are
skipped (kept in .console). Every wait has a timeout; a closed connection
raises ConnectionClosed, a timeout RspTimeout.

Python standard library only.
"""

import re
import socket
import time


class RspError(Exception):
    pass


class ConnectionClosed(RspError):
    pass


class RspTimeout(RspError):
    pass


def checksum(data):
    return sum(data) & 0xFF


def frame(payload, bad_checksum=False):
    """The bytes of one packet; payload is str (latin-1) or bytes."""
    if isinstance(payload, str):
        payload = payload.encode("latin-1")
    cs = checksum(payload)
    if bad_checksum:
        cs = (cs + 1) & 0xFF
    return b"$" + payload + b"#%02x" % cs


def escape_binary(data):
    """Escapes bytes for X / vFile:pwrite payloads."""
    out = bytearray()
    for b in data:
        if b in b"#$}*":
            out += bytes([0x7D, b ^ 0x20])
        else:
            out.append(b)
    return bytes(out)


def decode_payload(raw):
    """Undoes `}` escapes and `*` run-length encoding of a received payload.
    Copies the runs between them whole: a trace document is megabytes."""
    out = bytearray()
    i, n = 0, len(raw)
    while i < n:
        m = _ENCODED.search(raw, i)
        if m is None:
            out += raw[i:]
            break
        j = m.start()
        out += raw[i:j]
        b = raw[j]
        if j + 1 >= n or (b == 0x2A and not out):
            out.append(b)
            i = j + 1
        elif b == 0x7D:
            out.append(raw[j + 1] ^ 0x20)
            i = j + 2
        else:
            out += bytes([out[-1]]) * (raw[j + 1] - 29)
            i = j + 2
    return bytes(out)


_ENCODED = re.compile(rb"[}*]")


class RspClient:
    def __init__(self, sock, timeout=10.0):
        self.sock = sock
        self.timeout = timeout
        self.no_ack = False
        self.buf = b""
        self.console = ""
        self.acks = []  # '+' / '-' bytes seen while waiting for packets

    @classmethod
    def connect(cls, port, host="127.0.0.1", timeout=10.0):
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock, timeout)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---- bytes --------------------------------------------------------

    def send_raw(self, data):
        self.sock.sendall(data)

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise RspTimeout("no reply in time; buffered %r" % self.buf[:200])
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise RspTimeout("no reply in time; buffered %r" % self.buf[:200])
        except ConnectionResetError as e:
            raise ConnectionClosed("connection reset: %s" % e)
        if not chunk:
            raise ConnectionClosed("server closed the connection; buffered %r" %
                                   self.buf[:200])
        self.buf += chunk

    def read_ack(self, timeout=None):
        """Next '+' or '-' from the server (bytes before a packet)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            while self.buf and self.buf[:1] not in (b"+", b"-", b"$"):
                self.buf = self.buf[1:]
            if self.buf[:1] in (b"+", b"-"):
                ack, self.buf = self.buf[:1].decode(), self.buf[1:]
                return ack
            if self.buf[:1] == b"$":
                raise RspError("packet instead of an ack: %r" % self.buf[:200])
            self._fill(deadline)

    def read_packet(self, timeout=None, ack=True, skip_console=True):
        """Next packet's decoded payload; acks it unless in no-ack mode.

        A packet with a bad checksum is NAKed and the retransmission read."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            start = self.buf.find(b"$")
            if start > 0:
                self.acks += [chr(b) for b in self.buf[:start] if b in b"+-"]
                self.buf = self.buf[start:]
            end = self.buf.find(b"#") if start >= 0 else -1
            if start < 0 or end < 0 or len(self.buf) < end + 3:
                if start < 0:
                    self.acks += [chr(b) for b in self.buf if b in b"+-"]
                    self.buf = b""
                self._fill(deadline)
                continue
            raw = self.buf[1:end]
            sent_cs = self.buf[end + 1:end + 3]
            self.buf = self.buf[end + 3:]
            good = sent_cs.lower() == b"%02x" % checksum(raw)
            if not self.no_ack and ack:
                self.send_raw(b"+" if good else b"-")
            if not good:
                if self.no_ack:
                    raise RspError("bad checksum from server: %r" % raw[:200])
                continue
            payload = decode_payload(raw).decode("latin-1")
            if skip_console and payload.startswith("O") and payload != "OK" \
                    and _is_hex(payload[1:]):
                self.console += bytes.fromhex(payload[1:]).decode("latin-1")
                continue
            return payload

    def drain(self, quiet=0.3):
        """Reads until nothing arrives for `quiet` seconds; returns
        (acks, payloads) seen, acking packets as usual."""
        acks, payloads = [], []
        while True:
            try:
                self._fill(time.monotonic() + quiet)
            except RspTimeout:
                pass
            if not self.buf:
                return acks, payloads
            while self.buf[:1] in (b"+", b"-"):
                acks.append(self.buf[:1].decode())
                self.buf = self.buf[1:]
            if self.buf:
                try:
                    payloads.append(self.read_packet(timeout=quiet))
                except RspTimeout:
                    return acks, payloads

    # ---- packets ------------------------------------------------------

    def send_packet(self, payload, bad_checksum=False):
        self.send_raw(frame(payload, bad_checksum))

    def request(self, payload, timeout=None):
        """Sends payload, waits for its ack (unless no-ack) and the reply."""
        self.send_packet(payload)
        if not self.no_ack:
            ack = self.read_ack(timeout)
            if ack != "+":
                raise RspError("server NAKed %r" % payload[:100])
        return self.read_packet(timeout)

    def start_no_ack(self):
        reply = self.request("QStartNoAckMode")
        if reply == "OK":
            self.no_ack = True
        return reply

    def handshake(self, features="multiprocess+;swbreak+;hwbreak+;vContSupported+"):
        """What gdb says first (qSupported, then `?`: gdbserver wants the
        stop reason asked before anything else); returns qSupported's reply."""
        reply = self.request("qSupported:" + features)
        self.initial_stop = self.request("?")
        return reply

    def alive(self, timeout=10.0):
        """True if the server still answers `?` with a stop reply."""
        try:
            reply = self.request("?", timeout)
        except RspError:
            return False
        return reply[:1] in ("T", "S", "W", "X")


def _is_hex(text):
    if not text or len(text) % 2:
        return False
    try:
        bytes.fromhex(text)
        return True
    except ValueError:
        return False


def hexs(text):
    """Hex encoding of a string (qRcmd, vRun arguments)."""
    if isinstance(text, str):
        text = text.encode()
    return text.hex()
