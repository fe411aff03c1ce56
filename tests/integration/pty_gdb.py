"""Commands on a pseudo-terminal of their own: gdb, for tests that must type
Ctrl-C like a user (test_interrupt.py), and a debug server whose terminal
the debugged program uses (test_terminal.py). Python standard library
only."""

import fcntl
import os
import re
import select
import subprocess
import termios
import time

from harness import GDB_PRELUDE, GDB_TIMEOUT, HarnessError, gdb_path, kill_session


class PtyChild:
    """A command run as the session leader of a new pseudo-terminal, which
    is its controlling terminal and its stdin, stdout and stderr; its group
    is the terminal's foreground group to begin with, as a login shell's is.

    expect(pattern) waits for a regex in the output read since the last
    expect; send(text) types. close() kills it and all it started."""

    def __init__(self, argv, timeout=GDB_TIMEOUT):
        self.argv = list(argv)
        master, slave = os.openpty()
        self._master = master
        env = dict(os.environ, TERM="dumb", COLUMNS="200", LINES="50")

        def become_terminal_owner():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(
            self.argv, stdin=slave, stdout=slave, stderr=slave, env=env,
            start_new_session=True, preexec_fn=become_terminal_owner,
            close_fds=True)
        os.close(slave)
        self.log = ""
        self._pending = ""
        self._deadline = time.monotonic() + timeout

    def _read(self, until):
        left = min(until, self._deadline) - time.monotonic()
        if left <= 0:
            return False
        ready, _, _ = select.select([self._master], [], [], left)
        if not ready:
            return False
        try:
            data = os.read(self._master, 65536)
        except OSError:
            return False
        if not data:
            return False
        text = data.decode("utf-8", "replace").replace("\r\n", "\n")
        self.log += text
        self._pending += text
        return True

    def expect(self, pattern, timeout=15.0):
        """Waits for regex pattern in the output not yet consumed; returns
        the match (its .string[:start()] is the text before it) or raises
        HarnessError with the transcript."""
        regex = re.compile(pattern, re.M)
        until = time.monotonic() + timeout
        while True:
            m = regex.search(self._pending)
            if m:
                self._pending = self._pending[m.end():]
                return m
            if not self._read(until):
                if time.monotonic() >= until or self.proc.poll() is not None:
                    raise HarnessError(
                        "gdb did not print %r within %.0f s; transcript:\n%s"
                        % (pattern, timeout, self.log))

    def send(self, text):
        os.write(self._master, text.encode())

    def close(self):
        kill_session(self.proc.pid)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.close(self._master)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class PtyGdb(PtyChild):
    """gdb run interactively on a pseudo-terminal it owns, so that writing
    Ctrl-C (0x03) to the terminal interrupts it exactly as a user's key does."""

    def __init__(self, program_path, init_commands=(), timeout=GDB_TIMEOUT):
        argv = [gdb_path(), "-nx", "-q", "-iex", "set debuginfod enabled off"]
        for line in GDB_PRELUDE + list(init_commands):
            argv += ["-ex", line]
        argv.append(program_path)
        super().__init__(argv, timeout)

    def command(self, line, timeout=15.0):
        """Types a command at a prompt; returns its output up to the next
        prompt (without the echoed command line)."""
        self._pending = ""
        self.send(line + "\n")
        m = self.expect(r"^\(gdb\) ", timeout)
        text = m.string[:m.start()]
        echo = text.find(line + "\n")
        return text[echo + len(line) + 1:] if echo >= 0 else text
