"""Shared helpers for the integration tests: start a debug server (btstub or
gdbserver) on a test program, drive the real gdb against it, compare output.

Every test runs against btstub by default. `--server gdbserver` (or the
environment variable BTSTUB_TEST_SERVER=gdbserver) runs the same checks
against the Debian gdbserver, which is how the tests themselves are proved
right: a check that fails against gdbserver is a bug in the test.

Environment:
  BTSTUB        path of the btstub executable (set by CTest)
  GDBSERVER     path of gdbserver (default /usr/bin/gdbserver); the tests
                start it through the launcher built from
                tests/reference/gdbserver.in, with the xstate shim
  XSTATE_SHIM   the shim preloaded into gdb and gdbserver, which makes them
                sound references on CPUs with AMX (set by CTest; reference.py)
  PROGRAMS_DIR  directory holding the built test programs (NAME_O0, NAME_O2)
  GDB           path of gdb (default: gdb on PATH)

Companions: checker.py (Checker: PASS/FAIL lines, diffs, the final
"N passed, M failed"; normalise() for comparing servers) and pty_gdb.py
(gdb on a pseudo-terminal, for Ctrl-C).

Python standard library only. Every child runs in its own session so that a
timeout or failure can kill it together with whatever it started (the
debugged program included); nothing is left behind.
"""

import argparse
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

import reference
from checker import Checker, normalise, unified_diff  # noqa: F401 (re-exported)
from reference import BrokenReference  # noqa: F401 (re-exported)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAM_SOURCES = os.path.join(SOURCE_ROOT, "tests", "programs")

GDB_TIMEOUT = 60.0
SERVER_START_TIMEOUT = 15.0


# --------------------------------------------------------------------------
# Configuration

def parse_args(description="", argv=None):
    """Parses the common test options; returns the namespace (server, verbose)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--server", choices=["btstub", "gdbserver"],
        default=os.environ.get("BTSTUB_TEST_SERVER", "btstub"),
        help="which debug server to test (default btstub)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print every gdb transcript")
    args = parser.parse_args(argv)
    global VERBOSE
    VERBOSE = args.verbose
    return args


VERBOSE = False


def server_path(kind):
    if kind == "gdbserver":
        # The launcher runs GDBSERVER with the xstate shim (reference.py).
        path = os.environ.get("GDBSERVER", "/usr/bin/gdbserver")
        launcher = reference.gdbserver_launcher(reference.find_shim())
        if launcher and os.access(path, os.X_OK):
            path = launcher
    else:
        path = os.environ.get("BTSTUB", "")
        if not path:
            default = os.path.join(SOURCE_ROOT, "build", "btstub")
            path = default if os.path.exists(default) else ""
    if not path or not os.access(path, os.X_OK):
        fatal("no executable %s (set %s)" %
              (kind, "GDBSERVER" if kind == "gdbserver" else "BTSTUB"))
    return path


def gdb_path():
    return os.environ.get("GDB", "gdb")


def programs_dir():
    path = os.environ.get("PROGRAMS_DIR") or os.path.join(
        SOURCE_ROOT, "build", "programs")
    return path


def program(name, opt="O0"):
    """Absolute path of a built test program, e.g. program('basic')."""
    path = os.path.join(programs_dir(), "%s_%s" % (name, opt))
    if not os.access(path, os.X_OK):
        fatal("test program %s not built (PROGRAMS_DIR=%s)" %
              (path, programs_dir()))
    return path


# gdb-side Python (for a probe script a test `source`s in gdb): the
# checkpoint copies of the program gdb debugs, found in /proc as the
# processes of the same executable whose parent is the program's (btstub).
GDB_FIND_COPIES = r'''
import os
def checkpoint_copies():
    pid = gdb.selected_inferior().pid
    parent = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
    exe = os.readlink("/proc/%d/exe" % pid)
    copies = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == pid:
            continue
        try:
            stat = open("/proc/%s/stat" % name).read().rsplit(")", 1)[1].split()
            if int(stat[1]) == parent and os.readlink("/proc/%s/exe" % name) == exe:
                copies.append(int(name))
        except OSError:
            pass
    return copies
'''


def marker_line(source, mark):
    """Line number of the unique `MARK: mark` comment in tests/programs/source."""
    path = os.path.join(PROGRAM_SOURCES, source)
    hits = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if re.search(r"MARK: %s\b" % re.escape(mark), line):
                hits.append(number)
    if len(hits) != 1:
        fatal("marker %s found %d times in %s" % (mark, len(hits), path))
    return hits[0]


def source_line(source, mark):
    """The line holding `MARK: mark` as gdb lists it: "N\t<source text>"."""
    number = marker_line(source, mark)
    with open(os.path.join(PROGRAM_SOURCES, source)) as f:
        text = f.read().splitlines()[number - 1]
    return "%d\t%s" % (number, text)


class Script:
    """A list of gdb commands; add() returns the command's index."""

    def __init__(self):
        self.commands = []

    def add(self, command):
        self.commands.append(command)
        return len(self.commands) - 1


def fatal(message):
    print("FATAL: " + message, flush=True)
    print("0 passed, 1 failed", flush=True)
    sys.exit(2)


# --------------------------------------------------------------------------
# Process hygiene

def _session_members(sid):
    """Pids of live processes whose session id is sid (read from /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        # fields[0] is state; session id is field 6 of stat, index 3 here.
        if len(fields) > 3 and int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def kill_session(sid):
    """SIGKILLs every process in session sid (our child and its descendants)."""
    for _ in range(50):
        members = _session_members(sid)
        if not members:
            return
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)


def tracer_of(pid):
    """The pid tracing `pid` (0: none), or None if it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            m = re.search(r"^TracerPid:\s+(\d+)$", f.read(), re.M)
        return int(m.group(1)) if m else None
    except OSError:
        return None


def pid_alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def wait_until(predicate, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


class LineCollector:
    """Reads a pipe on a thread, keeping every line; lets callers wait for one."""

    def __init__(self, stream):
        self.lines = []
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, args=(stream,),
                                        daemon=True)
        self._thread.start()

    def _run(self, stream):
        for raw in iter(stream.readline, b""):
            with self._cond:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def wait_for(self, pattern, timeout):
        """Returns the first match of regex pattern in a line, or None."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines:
                    m = regex.search(line)
                    if m:
                        return m
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    return None
                self._cond.wait(left)

    def join(self, timeout=5.0):
        self._thread.join(timeout)

    def text(self):
        with self._cond:
            return "\n".join(self.lines) + ("\n" if self.lines else "")


# --------------------------------------------------------------------------
# Servers

class Server:
    """A debug server listening on TCP. Use as a context manager.

    Server(kind, [prog, args...], options=["--once"], comm="127.0.0.1:0")
    starts it and waits for "Listening on port N"; .port, .inferior_pid
    (from "Process P created; pid = N", or None), .stdout / .stderr text.
    argv=[...] runs that command line instead of a server of `kind`.
    """

    def __init__(self, kind, command, options=("--once",),
                 comm="127.0.0.1:0", wait_listening=True, argv=None):
        self.kind = kind
        self.argv = list(argv) if argv is not None else \
            [server_path(kind)] + list(options) + [comm] + list(command)
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True)
        self._out = LineCollector(self.proc.stdout)
        self._err = LineCollector(self.proc.stderr)
        self._counted = False
        self.port = None
        self.inferior_pid = None
        if wait_listening:
            self.wait_listening()

    def wait_listening(self):
        m = self._err.wait_for(r"^Listening on port (\d+)$",
                               SERVER_START_TIMEOUT)
        if m is None:
            self.stop()
            raise HarnessError(
                "server did not print 'Listening on port N'\ncommand: %s\n"
                "exit status: %s\nstderr:\n%s" %
                (shlex.join(self.argv), self.proc.returncode, self.stderr))
        self.port = int(m.group(1))
        created = self._err.wait_for(r"^Process .* created; pid = (\d+)$", 0)
        if created:
            self.inferior_pid = int(created.group(1))
        return self.port

    def wait_stderr(self, pattern, timeout=10.0):
        return self._err.wait_for(pattern, timeout)

    def wait_stdout(self, pattern, timeout=10.0):
        return self._out.wait_for(pattern, timeout)

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    @property
    def stdout(self):
        return self._out.text()

    @property
    def stderr(self):
        """Its stderr; a reference gdbserver's without its xstate warning
        lines (reference.py; counted once, when it stops)."""
        text = self._err.text()
        if self.kind == "gdbserver":
            text, _ = reference.without_gdbserver_warnings(text)
        return text

    def wait_exit(self, timeout=10.0):
        """Waits for the server to exit on its own; returns its status or None."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        """Kills the server and everything it started; idempotent."""
        kill_session(self.proc.pid)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self._out.join()
        self._err.join()
        if not self._counted:
            self._counted = True
            text = self._err.text()
            if self.kind == "gdbserver":
                TALLY.removed(reference.without_gdbserver_warnings(text)[1])
            else:
                TALLY.subject(text)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


class HarnessError(Exception):
    pass


def run_command(argv, timeout=30.0, env=None, cwd=None):
    """Runs argv in its own session; returns (status, stdout, stderr).

    status is None on timeout (the process tree is killed then)."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, env=env, cwd=cwd)
    try:
        out, err = proc.communicate(timeout=timeout)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        kill_session(proc.pid)
        out, err = proc.communicate()
        status = None
    kill_session(proc.pid)
    return status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


# --------------------------------------------------------------------------
# gdb

MARK = "@@@gdbcmd"

GDB_PRELUDE = [
    # CMake compiles with absolute source paths; tests expect "basic.c:30".
    "set filename-display basename",
    "set confirm off",
    "set pagination off",
    "set width 0",
    "set height 0",
    # gdb waits 2 s for a reply, then sends a NAK; on a loaded machine a
    # slow first reply (qSupported) then arrives twice, the retransmission
    # taken as the answer to the next packet ("Remote replied unexpectedly
    # to 'vMustReplyEmpty'"), and the session is lost (CI saw it with two
    # builds beside ctest -j2). The tests are about answers, not latency.
    "set remotetimeout 30",
    # The server runs on this machine: gdb reads the program's libraries
    # from their files, not through vFile (target:, gdb's default): a
    # short session (break main, continue, next) 1.5 s -> 0.6 s, the whole
    # ctest 866 -> 836 s on an AMD EPYC VM (its time is in the recordings).
    # test_attach (a session given no file) and test_host_files still go
    # through vFile.
    "set sysroot /",
]


class GdbResult:
    """Transcript of one gdb -batch run.

    .output   stdout and stderr, interleaved as gdb wrote them
    .status   gdb's exit status (None if it had to be killed on timeout)
    .preamble output before the first command (connection, shared libraries)
    .outputs  list of (command, output) pairs, one per command
    """

    def __init__(self, argv, commands, output, status):
        self.argv = argv
        self.commands = commands
        self.output = output
        self.status = status
        self.preamble, self.outputs = self._split(output)

    def _split(self, output):
        pieces = re.split(r"^%s (\d+)\n" % MARK, output, flags=re.M)
        preamble = pieces[0]
        found = {}
        for i in range(1, len(pieces) - 1, 2):
            found[int(pieces[i])] = pieces[i + 1]
        return preamble, [(c, found.get(i)) for i, c in enumerate(self.commands)]

    def of(self, index):
        """Output of command number index (negative counts from the end)."""
        return self.outputs[index][1] or ""

    def of_command(self, command, nth=0):
        """Output of the nth occurrence of command."""
        hits = [out for cmd, out in self.outputs if cmd == command]
        if len(hits) <= nth:
            raise HarnessError("command %r not run %d times" % (command, nth + 1))
        return hits[nth] or ""

    def transcript(self):
        lines = ["$ " + shlex.join(self.argv), "exit status: %s" % self.status,
                 "--- preamble ---", self.preamble.rstrip("\n")]
        for cmd, out in self.outputs:
            lines.append("(gdb) " + cmd)
            lines.append("<not reached>" if out is None else out.rstrip("\n"))
        return "\n".join(lines) + "\n"


def debug_registers_trap():
    """Whether debug registers trap on this machine (`btstub --probe`): some
    hypervisors accept their writes and never trap, and btstub then refuses
    hardware breakpoints and watchpoints and --trace-stops=debugreg."""
    status, out, _ = run_command([server_path("btstub"), "--probe"], 15)
    return status == 0 and "debug registers: trap" in out


def sanitized():
    """Whether these tests run the sanitizer build's btstub (CMake sets
    BTSTUB_SANITIZED=1 in their environment there; .ci/run's second
    stage)."""
    return os.environ.get("BTSTUB_SANITIZED") == "1"


def opt_levels(i, levels=("O0", "O2")):
    """The optimisation levels the i-th case of a heavy differential test
    runs at: all of them, but under the sanitizers, whose btstub runs two
    to three times slower, only one, alternating with i, so that CI's
    sanitizer stage stays within its time while both levels still run
    there (each case runs at every level in the normal build)."""
    if not sanitized() or len(levels) < 2:
        return tuple(levels)
    return (levels[i % len(levels)],)


def case_modes(modes, i):
    """The tracer modes the i-th case of a heavy test runs under: all of
    them, but under the sanitizers only the first (the default tracer) and
    one other, turn about with i, so that CI's sanitizer stage stays within
    its time while every mode still runs there (each case runs under every
    mode in the normal build)."""
    modes = tuple(modes)
    if not sanitized() or len(modes) < 3:
        return modes
    return (modes[0], modes[1 + i % (len(modes) - 1)])


def run_gdb(commands, program_path=None, target=None, timeout=GDB_TIMEOUT,
            extra_init=(), markers=True, raw=False):
    """Runs gdb -batch: prelude, `target ...`, then commands.

    target is the argument of `target remote` (e.g. "127.0.0.1:1234" or
    "| /path/btstub - prog args"). Each command is preceded by an echo of a
    marker so the output can be cut per command (GdbResult.outputs), unless
    markers is False (then only .output is meaningful).
    raw: the transcript exactly as gdb printed it, without checked_result's
    handling of references (for tests of that handling itself).
    """
    argv = [gdb_path(), "-batch", "-nx", "-q",
            "-iex", "set debuginfod enabled off"]
    for line in GDB_PRELUDE + list(extra_init):
        argv += ["-ex", line]
    if program_path:
        argv.append(program_path)
    if target is not None:
        argv += ["-ex", "target remote " + target]
    for i, cmd in enumerate(commands):
        if markers:
            argv += ["-ex", "echo %s %d\\n" % (MARK, i)]
        argv += ["-ex", cmd]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True,
                            env=gdb_environment())
    try:
        out, _ = proc.communicate(timeout=timeout)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        kill_session(proc.pid)
        out, _ = proc.communicate()
        status = None
    kill_session(proc.pid)
    if raw:
        return GdbResult(argv, list(commands), out.decode("utf-8", "replace"), status)
    return checked_result(argv, commands, out.decode("utf-8", "replace"), status, target)


def gdb_environment():
    """The environment every gdb a test runs gets (reference.py)."""
    return reference.gdb_environment(SHIM)


def checked_result(argv, commands, output, status, target):
    """The GdbResult of a run, its references made sound (reference.py): a
    reference's gdbserver warning lines are removed, a broken reference
    raises BrokenReference; a subject run's XSAVE messages are kept for
    run_test to fail on."""
    if reference.is_reference_target(target):
        output, removed = reference.without_gdbserver_warnings(output)
        TALLY.removed(removed)
        result = GdbResult(argv, list(commands), output, status)
        if VERBOSE:
            print(result.transcript())
        problem = reference.reference_problem(output)
        if problem:
            raise BrokenReference(problem, result)
        return result
    result = GdbResult(argv, list(commands), output, status)
    if VERBOSE:
        print(result.transcript())
    TALLY.subject(output)
    return result


def run_gdb_tcp(kind, program_path, args, commands, options=("--once",),
                timeout=GDB_TIMEOUT, markers=True):
    """Starts a server on program_path args, runs gdb against it over TCP.

    Returns (GdbResult, server) with the server stopped (all its output kept)."""
    server = Server(kind, [program_path] + list(args), options=options)
    try:
        result = run_gdb(commands, program_path, server.address,
                         timeout=timeout, markers=markers)
        server.wait_exit(10.0)
    finally:
        server.stop()
    return result, server


def stdio_target(kind, program_path, args, options=()):
    """`target remote | SERVER OPTIONS - PROGRAM ARGS`."""
    return "| " + shlex.join([server_path(kind)] + list(options) + ["-", program_path] +
                             list(args))


def recording_setups(kind):
    """(name, server options) a test runs under: btstub's recording with
    translated code and with int3 trace stops, or a reference server plain."""
    if kind != "btstub":
        return [("plain", [])]
    return [("record", ["--record"]), ("int3", ["--record", "--trace-stops=int3"])]


def load_base(pid, path):
    """Where the program file `path` is mapped in process `pid` (its offset-0
    mapping): add a symbol's file offset to get its address."""
    real = os.path.realpath(path)
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == real and int(fields[2], 16) == 0:
                return int(fields[0].split("-")[0], 16)
    raise HarnessError("no mapping of %s in pid %d" % (path, pid))


def symbol_offset(path, name):
    """The file offset (as linked) of symbol `name` in the program file
    `path` (`nm`): add load_base's result to get its address."""
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[2] == name:
            return int(fields[0], 16)
    raise HarnessError("%s: no symbol %s" % (path, name))


def free_port():
    """A TCP port that was free a moment ago (for tests that need a fixed one)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sanitizer_logs_begin():
    """Sends AddressSanitizer/UBSan reports of every process this test starts
    (btstub built with BTSTUB_SANITIZE, wherever it was started from) to
    files in a fresh directory; returns it."""
    import tempfile
    log_dir = tempfile.mkdtemp(prefix="btstub-sanitizer-")
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        old = os.environ.get(var)
        os.environ[var] = (old + ":" if old else "") + \
            "log_path=%s/report:print_stacktrace=1" % log_dir
    return log_dir


# LeakSanitizer's own trouble stopping a thread of btstub that is ending
# at exit (its leak check goes on, taking that stack as reachable): not a
# finding. CI saw a report holding only this line.
_LSAN_THREAD_NOTE = re.compile(r"^==\d+==Unable to get registers from thread \d+\.$")


def _sanitizer_reports(log_dir):
    import shutil
    reports = []
    for name in sorted(os.listdir(log_dir)):
        with open(os.path.join(log_dir, name), errors="replace") as f:
            text = f.read()
        if all(_LSAN_THREAD_NOTE.match(line) for line in text.splitlines() if line.strip()):
            continue
        reports.append("%s:\n%s" % (name, text))
    shutil.rmtree(log_dir, ignore_errors=True)
    return reports


def transcript_lines(result):
    """A gdb run's transcript after its first line (the command line),
    normalised for comparing servers (checker.normalise)."""
    return normalise(result.transcript().split("\n", 1)[1])


def check_same_transcript(c, label, ref, test, server_kind, lines=transcript_lines):
    """`label` passes when the reference run (gdbserver) and the run under
    `server_kind` read the same, as `lines` gives them; else their diff."""
    ref_lines, test_lines = lines(ref), lines(test)
    c.true(label, ref_lines == test_lines,
           unified_diff(ref_lines, test_lines, "gdbserver", server_kind))


# What this test's references needed (reference.py), and the shim's path.
TALLY = reference.Tally()
SHIM = None


def run_test(name, main):
    """Parses options, calls main(args, checker), prints the summary, exits.

    A HarnessError (server did not start, ...) counts as one failed check,
    and so does any sanitizer report written meanwhile. A BrokenReference
    that main lets through is one skip (the checks after it are not run);
    an XSAVE fault message in a transcript of the server under test is a
    failure. The last lines say what the references needed."""
    global SHIM
    # The working directory as a shell tells it: ctest starts a test in its
    # build directory with the PWD of whoever started ctest, a shell
    # between a server and its program (btstub's and gdbserver's default)
    # puts the real one in its place, and lldb-server, which starts the
    # program itself, passes it on as it is: the two programs' stacks then
    # lay out apart (LLDB's transcripts differed by 16 bytes in every
    # stack address under `env -i ... bash .ci/run` in /check/work/main).
    os.environ["PWD"] = os.getcwd()
    args = parse_args(name)
    checker = Checker(name, args.server)
    log_dir = _sanitizer_logs_begin()
    SHIM = reference.begin(TALLY)
    try:
        main(args, checker)
    except HarnessError as e:
        checker.true("harness", False, str(e))
    except BrokenReference as e:
        skip_broken_reference(checker, "the rest of %s" % name, e)
    reports = _sanitizer_reports(log_dir)
    if reports:
        checker.true("no sanitizer reports", False, "\n".join(reports))
    if TALLY.subject_messages:
        checker.true("%s's transcripts hold no XSAVE fault message" % args.server, False,
                     "\n".join(TALLY.subject_messages))
    print(TALLY.summary(SHIM), flush=True)
    reference.end(TALLY)
    checker.finish()


def skip_broken_reference(checker, what, error):
    """Counts `what` as skipped because its reference broke (reason printed)."""
    TALLY.broken.append(error.problem)
    checker.skip(what, "reference broken: %s" % error.problem)


def live_fallback():
    """Counts one comparison that used a live stop for a broken reference."""
    TALLY.live_fallbacks += 1
