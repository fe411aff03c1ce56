"""Checks with readable failures (Checker), and normalisation of gdb
transcripts for comparing two servers (normalise, unified_diff)."""

import difflib
import re
import sys

# --------------------------------------------------------------------------
# Normalisation for comparing two servers' transcripts

_NORMALISERS = [
    (re.compile(r"process \d+"), "process PID"),
    (re.compile(r"Thread \d+\.\d+"), "Thread PID.TID"),
    # `info threads` pads its Target Id column to the longest id, so the
    # padding follows how many digits the pids have (they wrap at pid_max):
    # the widest id has one space after it, the others more.
    (re.compile(r"(Thread PID\.TID(?: \"[^\"]*\")?) +"), r"\1  "),
    (re.compile(r"Target Id {2,}Frame"), "Target Id  Frame"),
    # `info inferiors` pads its Description column the same way.
    (re.compile(r"(process PID) +"), r"\1  "),
    (re.compile(r"Description {2,}Connection"), "Description  Connection"),
    (re.compile(r"LWP \d+"), "LWP TID"),
    (re.compile(r"pid = \d+"), "pid = PID"),
    # Stack addresses depend on the environment the program was started
    # with (gdbserver starts it through a shell, which adds variables).
    (re.compile(r"0x0*7ffffff[0-9a-f]{5}\b"), "0xSTACK"),
]

_DROP = [
    re.compile(r"^Remote debugging using "),
]


def normalise(text):
    """Replaces inherently server-specific details; drops such lines."""
    lines = []
    for line in text.splitlines():
        if any(p.search(line) for p in _DROP):
            continue
        for pattern, repl in _NORMALISERS:
            line = pattern.sub(repl, line)
        lines.append(line)
    return lines


def unified_diff(expected_lines, actual_lines, expected_name="expected",
                 actual_name="actual"):
    return "\n".join(difflib.unified_diff(expected_lines, actual_lines,
                                          expected_name, actual_name,
                                          lineterm=""))


# --------------------------------------------------------------------------
# Checks

# The exit status of a test whose every check was skipped (CTest reports it
# as skipped: tests/integration/CMakeLists.txt).
SKIPPED_STATUS = 77


class Checker:
    """Counts checks; prints PASS/FAIL per check and a diff for failures.

    finish() prints "N passed, M failed" and exits non-zero on any failure."""

    def __init__(self, name, server_kind):
        self.name = name
        self.server = server_kind
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        print("== %s against %s" % (name, server_kind), flush=True)

    def _report(self, ok, label, detail, context):
        if ok:
            self.passed += 1
            print("PASS " + label, flush=True)
            return True
        self.failed += 1
        print("FAIL " + label, flush=True)
        if detail:
            print(_indent(detail), flush=True)
        if context:
            print("  --- context ---", flush=True)
            print(_indent(context), flush=True)
        return False

    def skip(self, label, reason):
        """A check that cannot be made here (its reference is not sound):
        counted apart, never as a pass."""
        self.skipped += 1
        print("SKIP %s: %s" % (label, reason), flush=True)

    def true(self, label, condition, detail="", context=""):
        return self._report(bool(condition), label, detail, context)

    def equal(self, label, expected, actual, context=""):
        if expected == actual:
            return self._report(True, label, "", "")
        if isinstance(expected, str) and isinstance(actual, str) and (
                "\n" in expected or "\n" in actual):
            detail = unified_diff(expected.splitlines(), actual.splitlines())
        else:
            detail = "expected: %r\nactual:   %r" % (expected, actual)
        return self._report(False, label, detail, context)

    def contains(self, label, text, needle, context=None):
        """needle must appear in text as a substring."""
        text = text or ""
        ok = needle in text
        return self._report(ok, label, "expected to find: %r\nin actual:\n%s" %
                            (needle, _indent(text)) if not ok else "",
                            context if context else "")

    def not_contains(self, label, text, needle, context=None):
        text = text or ""
        ok = needle not in text
        return self._report(ok, label, "expected NOT to find: %r\nin actual:\n%s"
                            % (needle, _indent(text)) if not ok else "",
                            context if context else "")

    def matches(self, label, text, pattern, context=None):
        """Regex pattern must match somewhere in text (multiline); returns match."""
        text = text or ""
        m = re.search(pattern, text, re.M)
        self._report(bool(m), label,
                     "expected a match for: %r\nin actual:\n%s" %
                     (pattern, _indent(text)) if not m else "",
                     context if context else "")
        return m

    def value(self, label, text, expected):
        """text (a print's output) is exactly one line "$N = expected"."""
        actual = (text or "").rstrip("\n")
        m = re.fullmatch(r"\$\d+ = (.*)", actual, re.S)
        if m and m.group(1) == expected:
            return self._report(True, label, "", "")
        return self._report(False, label, "expected: $N = %s\nactual:   %s" %
                            (expected, actual), "")

    def lines(self, label, text, expected_lines, context=None):
        """Every expected line appears, exactly, in order, among text's lines."""
        actual = (text or "").splitlines()
        pos = 0
        missing = None
        for want in expected_lines:
            while pos < len(actual) and actual[pos] != want:
                pos += 1
            if pos == len(actual):
                missing = want
                break
            pos += 1
        if missing is None:
            return self._report(True, label, "", "")
        detail = ("line not found (in order): %r\n" % missing +
                  unified_diff(list(expected_lines), actual))
        return self._report(False, label, detail, context or "")

    def finish(self):
        """Prints the counts and exits: 1 on any failure; SKIPPED_STATUS
        (CTest's SKIP_RETURN_CODE) when every check was skipped."""
        skipped = ", %d skipped" % self.skipped if self.skipped else ""
        print("%d passed, %d failed%s" % (self.passed, self.failed, skipped), flush=True)
        if self.failed:
            sys.exit(1)
        sys.exit(SKIPPED_STATUS if self.skipped and not self.passed else 0)


def _indent(text, prefix="  "):
    return "\n".join(prefix + line for line in str(text).splitlines())
