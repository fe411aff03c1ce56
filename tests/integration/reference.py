"""The references the integration tests compare btstub with (gdbserver 13.1,
gdb 13.1's native runs and its `record full`), and what is done where they
are not sound.

On CPUs with AMX the kernel's XSAVE area (NT_X86_XSTATE) is larger than
the one gdb 13.1 and gdbserver 13.1 know, and the kernel refuses their
writes of it:

- gdbserver warns "ptrace(regsets_store_inferior_registers): Bad address"
  at almost every resume (over stdio the warning lands in gdb's transcript);
- record full cannot restore registers going back ("Couldn't write extended
  state status: Bad address") and then stops or reports wrong frames.

btstub writes no XSAVE area and has neither fault. What the tests do:

1. gdb and gdbserver run with tests/reference/xstate_shim.c preloaded
   (gdb through run_gdb's environment, gdbserver through the launcher
   built beside the shim from tests/reference/gdbserver.in, which
   server_path("gdbserver") returns): it
   completes their writes to the kernel's size, so both references hold on
   every CPU. Each completed write is logged; the test prints the count.
2. A gdbserver transcript that still holds the warning is used with those
   lines removed, and nothing else removed (counted).
3. A reference run that still shows record full's message (or the warning
   where it is not a gdbserver transcript) is broken: run_gdb raises
   BrokenReference, and the test reports a SKIP with the reason (counted as
   a skip), or falls back to a live stop where it has one. It never passes
   or fails on that reference.
4. btstub's own transcripts must hold neither message: the harness fails
   the test if one does.

Pure functions here (no processes), so tests/integration/test_reference_
fallback.py checks them on saved transcripts.
"""

import os
import re
import shlex
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))

# The exact line gdbserver 13.1 writes to its stderr.
GDBSERVER_XSTATE_WARNING = "Warning: ptrace(regsets_store_inferior_registers): Bad address"
# What gdb 13.1 prints when it cannot write (or read) the XSAVE area.
GDB_XSTATE_ERROR = re.compile(r"Couldn't (?:write|read|get) extended state status")


class BrokenReference(Exception):
    """A reference run that shows gdb 13.1's XSAVE fault: not an oracle.
    .problem says why; .result is the run's GdbResult (or None)."""

    def __init__(self, problem, result=None):
        super().__init__(problem)
        self.problem = problem
        self.result = result


def xstate_messages(text):
    """The lines of text holding either XSAVE message."""
    return [line for line in (text or "").splitlines()
            if GDBSERVER_XSTATE_WARNING in line or GDB_XSTATE_ERROR.search(line)]


def without_gdbserver_warnings(text):
    """(text without gdbserver's exact xstate warning lines, how many went).

    Only whole lines equal to the warning are removed: where gdbserver's
    stderr and gdb's output share a line (no newline between them), the
    line stays and the reference is then found broken."""
    lines = (text or "").split("\n")
    kept = [line for line in lines if line != GDBSERVER_XSTATE_WARNING]
    return "\n".join(kept), len(lines) - len(kept)


def reference_problem(text):
    """Why a reference transcript (already without gdbserver's warning
    lines) is not an oracle, or None if it is one."""
    bad = xstate_messages(text)
    if bad:
        return "gdb 13.1 could not write this CPU's XSAVE area: %r" % bad[0]
    return None


def is_reference_target(target):
    """Whether a run_gdb target is a reference run: native gdb (no target)
    or gdbserver over stdio ("| .../gdbserver - prog"). A reference
    gdbserver over TCP is a Server of kind gdbserver: its warnings go to its
    own stderr (Server.stderr removes them)."""
    if target is None:
        return True
    if not target.startswith("|"):
        return False
    return any(os.path.basename(word) == "gdbserver" for word in shlex.split(target[1:]))


class Tally:
    """What one test's references needed, printed at its end."""

    def __init__(self):
        self.shim_log = None
        self.warnings_removed = 0
        self.warning_runs = 0
        self.broken = []
        self.live_fallbacks = 0
        self.subject_runs = 0
        self.subject_messages = []

    def removed(self, count):
        """Counts one reference run from which `count` warning lines went."""
        self.warnings_removed += count
        self.warning_runs += 1 if count else 0

    def subject(self, text):
        """Counts one run of the server under test, keeping any XSAVE
        message in its transcript (run_test fails on them)."""
        self.subject_runs += 1
        self.subject_messages += xstate_messages(text)

    def shim_writes(self):
        """How many XSAVE writes the shim completed (its log's lines)."""
        if not self.shim_log:
            return 0
        try:
            with open(self.shim_log) as f:
                return sum(1 for _ in f)
        except OSError:
            return 0

    def summary(self, shim):
        """One line saying which references were not used as they came."""
        writes = self.shim_writes()
        parts = []
        if shim is None:
            parts.append("no xstate shim (set XSTATE_SHIM): gdb and gdbserver ran as they are")
        elif writes:
            parts.append("xstate shim completed %d XSAVE writes of gdb/gdbserver "
                         "(this CPU's area is larger than gdb 13.1's)" % writes)
        else:
            parts.append("xstate shim loaded, never needed")
        parts.append("gdbserver warning lines removed: %d in %d runs" %
                     (self.warnings_removed, self.warning_runs))
        parts.append("live-stop fallbacks: %d" % self.live_fallbacks)
        parts.append("broken references skipped: %d" % len(self.broken))
        return "REFERENCES " + "; ".join(parts)


def find_shim():
    """The xstate shim's path: XSTATE_SHIM (CTest sets it), else the
    default build tree's, else None."""
    path = os.environ.get("XSTATE_SHIM")
    if path:
        return path if os.path.exists(path) else None
    default = os.path.join(SOURCE_ROOT, "build", "tests", "reference", "libxstate_shim.so")
    return default if os.path.exists(default) else None


def gdbserver_launcher(shim):
    """The launcher that runs gdbserver with the shim (built beside it)."""
    if shim is None:
        return None
    path = os.path.join(os.path.dirname(shim), "gdbserver")
    return path if os.access(path, os.X_OK) else None


def begin(tally):
    """Sets up this process's environment for the references: every child
    inherits the shim's log (XSTATE_SHIM_LOG; the same on both sides of a
    comparison). Returns the shim's path or None."""
    shim = find_shim()
    if shim:
        fd, log = tempfile.mkstemp(prefix="btstub-xstate-shim-")
        os.close(fd)
        os.environ["XSTATE_SHIM_LOG"] = log
        tally.shim_log = log
    return shim


def end(tally):
    if tally.shim_log:
        try:
            os.unlink(tally.shim_log)
        except OSError:
            pass


def gdb_environment(shim):
    """The environment run_gdb gives gdb: the shim preloaded (it takes
    itself out again, so what gdb starts never has it)."""
    env = dict(os.environ)
    if shim:
        env["LD_PRELOAD"] = shim + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    return env
