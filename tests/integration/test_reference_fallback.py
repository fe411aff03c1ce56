#!/usr/bin/env python3
"""The harness's handling of references that gdb 13.1's XSAVE fault broke
(reference.py), on transcripts saved on an Intel Xeon with AMX, so it is
checked on every CPU (no process is started):

- transcripts/gdbserver_amx.txt: gdb through gdbserver 13.1 over stdio,
  with gdbserver's "ptrace(regsets_store_inferior_registers): Bad address"
  warnings; gdbserver_amx_shim.txt: the same session with the xstate shim.
- transcripts/record_full_amx.txt: record full going back through exit(),
  "Couldn't write extended state status: Bad address" and what follows;
  record_full_amx_shim.txt: the same with the shim.

Checked: exactly the warning lines are removed from a gdbserver transcript
and nothing else (what remains equals the shim's run but for the pid); a
warning that shares a line with other output is not removed, and the
reference is then broken; record full's message makes a reference broken
(run_gdb's check raises BrokenReference with the run, counted), the shim's
runs are sound; which targets are references; a subject run (btstub) with
either message is kept for run_test to fail on; a skip is counted apart
and a test of skips only exits with CTest's skip status.

    python3 test_reference_fallback.py
"""

import os

import harness
import reference
from checker import Checker, SKIPPED_STATUS, normalise
from harness import BrokenReference, run_test

HERE = os.path.dirname(os.path.abspath(__file__))


def saved(name):
    with open(os.path.join(HERE, "transcripts", name)) as f:
        return f.read()


def without_pids(text):
    return normalise(text)


def check_gdbserver_warnings(c):
    warned, shim = saved("gdbserver_amx.txt"), saved("gdbserver_amx_shim.txt")
    c.true("the saved gdbserver transcript holds the warning",
           reference.GDBSERVER_XSTATE_WARNING in warned, warned)
    stripped, removed = reference.without_gdbserver_warnings(warned)
    c.equal("every warning line is removed", warned.count(reference.GDBSERVER_XSTATE_WARNING), removed)
    c.equal("nothing else is removed: the rest equals the shim's run (pids aside)",
            "\n".join(without_pids(shim)), "\n".join(without_pids(stripped)))
    c.equal("a stripped gdbserver transcript is a sound reference", None, reference.reference_problem(stripped))
    c.equal("the shim's gdbserver transcript is a sound reference as it is", None,
            reference.reference_problem(shim))
    shared = "Breakpoint 1 at 0x1160" + reference.GDBSERVER_XSTATE_WARNING + "\n30\t  int sum = 0;\n"
    kept, removed = reference.without_gdbserver_warnings(shared)
    c.equal("a warning sharing a line with gdb's output is not cut out of it", (shared, 0), (kept, removed))
    c.true("... and makes the reference broken", reference.reference_problem(kept) is not None, kept)


def check_record_full(c):
    broken, shim = saved("record_full_amx.txt"), saved("record_full_amx_shim.txt")
    problem = reference.reference_problem(broken)
    c.true("record full's 'Couldn't write extended state status' breaks the reference",
           problem is not None and "extended state status" in problem, str(problem))
    c.equal("record full with the shim is a sound reference", None, reference.reference_problem(shim))
    c.contains("... and went back where the broken one could not", shim, "Breakpoint 2, __run_exit_handlers")


def check_targets(c):
    cases = [
        (None, True),
        ("| /usr/bin/gdbserver - /p/basic_O0", True),
        ("| /b/tests/reference/gdbserver --no-startup-with-shell - /p/prog", True),
        ("| env -i A=1 /b/tests/reference/gdbserver - /p/prog", True),
        ("| /b/btstub --record - /p/prog", False),
        ("| env -i A=1 /b/btstub - /p/gdbserver_like", False),
        ("127.0.0.1:1234", False),
    ]
    for target, want in cases:
        c.equal("is %r a reference run" % (target,), want, reference.is_reference_target(target))


def check_run_gdb_handling(c):
    """checked_result is what run_gdb (and test_past_values' runner) does
    with every transcript."""
    tally = harness.TALLY
    before = (tally.warnings_removed, tally.warning_runs, len(tally.subject_messages))
    result = harness.checked_result(["gdb"], [], saved("gdbserver_amx.txt"), 0,
                                    "| /b/tests/reference/gdbserver - /p/basic_O0")
    c.not_contains("a gdbserver reference reaches the test without the warnings", result.output,
                   reference.GDBSERVER_XSTATE_WARNING)
    c.equal("... and the removal is counted", (before[0] + 9, before[1] + 1),
            (tally.warnings_removed, tally.warning_runs))
    try:
        harness.checked_result(["gdb"], [], saved("record_full_amx.txt"), 0, None)
        c.true("a broken record full run raises BrokenReference", False)
    except BrokenReference as e:
        c.true("a broken record full run raises BrokenReference, with its transcript",
               e.result is not None and "Couldn't write" in e.result.output, e.problem)
    harness.checked_result(["gdb"], [], saved("record_full_amx_shim.txt"), 0, None)
    c.equal("a sound one does not (and subject runs are not touched)", before[2], len(tally.subject_messages))
    harness.checked_result(["gdb"], [], saved("record_full_amx.txt"), 0, "| /b/btstub --record - /p/prog")
    c.equal("the message in btstub's transcript is kept for run_test to fail on",
            before[2] + 1, len(tally.subject_messages))
    tally.subject_messages = tally.subject_messages[:before[2]]


def check_skips(c):
    quiet = Checker("inner", "btstub")
    quiet.skip("a comparison", "reference broken: test")
    c.equal("a skip is counted apart from passes and failures", (0, 0, 1),
            (quiet.passed, quiet.failed, quiet.skipped))
    try:
        quiet.finish()
    except SystemExit as e:
        c.equal("a test whose every check was skipped exits with CTest's skip status", SKIPPED_STATUS, e.code)
    quiet.true("a pass", True)
    try:
        quiet.finish()
    except SystemExit as e:
        c.equal("skips beside passes exit 0", 0, e.code)
    tally = reference.Tally()
    tally.broken.append("x")
    tally.live_fallbacks = 2
    line = tally.summary("/shim.so")
    c.true("the summary counts live-stop fallbacks and broken references",
           "live-stop fallbacks: 2" in line and "broken references skipped: 1" in line, line)


def main(args, c):
    check_gdbserver_warnings(c)
    check_record_full(c)
    check_targets(c)
    check_run_gdb_handling(c)
    check_skips(c)


if __name__ == "__main__":
    run_test("test_reference_fallback", main)
