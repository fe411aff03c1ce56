"""LLDB's own server (`lldb-server gdbserver`), the reference of the LLDB
tests, and btstub started alike."""

import os
import subprocess

from harness import HarnessError, Server, kill_session

LLDB = os.environ.get("LLDB", "lldb")
LLDB_SERVER = os.environ.get("LLDB_SERVER", "lldb-server")
LLDB_VSCODE = os.environ.get("LLDB_VSCODE", "lldb-vscode-14")


class LldbServer:
    """`lldb-server gdbserver` on a port it picks and tells through a pipe."""

    def __init__(self, command):
        read_end, write_end = os.pipe()
        self.proc = subprocess.Popen(
            [LLDB_SERVER, "gdbserver", "--pipe", str(write_end), "127.0.0.1:0"] + command,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            pass_fds=(write_end,), start_new_session=True)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            port = pipe.read(16).split(b"\0")[0]
        if not port.isdigit():
            self.stop()
            raise HarnessError("lldb-server told no port")
        self.address = "127.0.0.1:%d" % int(port)

    def stop(self):
        kill_session(self.proc.pid)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def start(kind, path):
    if kind == "lldb-server":
        return LldbServer([path])
    return Server("btstub", [path])


def start(kind, path):
    """A server of `kind` ("btstub" or "lldb-server") running `path`; it
    has .address, and .stdout for btstub (the program's output)."""
    if kind == "lldb-server":
        return LldbServer([path])
    return Server("btstub", [path])
