#!/usr/bin/env python3
"""gdb's machine interface as IDEs drive it (VS Code's C/C++ extension,
CLion and Eclipse CDT run `gdb --interpreter=mi3`), against btstub and
against gdbserver, on tests/programs/lldb_session.c; every answer compared.

Forward: -break-insert by function, -exec-continue to it, -stack-list-
frames, -stack-list-variables, -var-create / -exec-finish / -var-update,
-data-list-register-names, -data-list-register-values (rip, rsp),
-data-read-memory-bytes, -data-evaluate-expression, -exec-next.
Backward: at the store into `watched`, btstub (`--record`) against
gdbserver with gdb's `record full`: -exec-next, then -exec-next --reverse
back over the store; the frame and `watched` in the past (0) and the
present (42) compared. The program runs with GLIBC_TUNABLES on both
sides (record full cannot record glibc's AVX-512 string functions).

    python3 test_mi.py [-v]
"""

import os
import re
import subprocess

from harness import (Server, gdb_environment, gdb_path, kill_session, marker_line, program,
                     run_test)

SOURCE = "lldb_session.c"
TUNABLES = ("glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX2,-AVX,-EVEX,-BMI1,-BMI2,"
            "-LZCNT,-MOVBE,-RTM,-ERMS,-FSRM,-AVX_Fast_Unaligned_Load")


def run_mi(address, path, commands, timeout=120):
    """Sends every command with a token (1, 2, ...) and returns, per
    token, its result record ("^done,..."), and the *stopped record that
    followed it if the command ran the program."""
    script = "".join("%d%s\n" % (i + 1, command) for i, command in enumerate(
        ["-gdb-set confirm off", "-file-exec-and-symbols " + path, "-target-select remote " + address] +
        list(commands) + ["-gdb-exit"]))
    proc = subprocess.Popen([gdb_path(), "--interpreter=mi3", "-nx", "-q", "-iex", "set debuginfod enabled off"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, env=gdb_environment())
    try:
        out, _ = proc.communicate(script.encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_session(proc.pid)
        out, _ = proc.communicate()
    kill_session(proc.pid)
    text = out.decode("utf-8", "replace")
    results = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"^(\d+)\^(.*)$", line)
        if m:
            current = int(m.group(1)) - 4  # the index into `commands` (after 3 set-up commands)
            results[current] = {"result": m.group(2), "stopped": None}
        elif line.startswith("*stopped") and current is not None and current in results:
            results[current]["stopped"] = line
    return results, text


def field(record, name):
    """A field's value from an MI record: name="value" (the first)."""
    m = re.search(r'\b%s="((?:[^"\\]|\\.)*)"' % re.escape(name), record or "")
    return m.group(1) if m else None


def frames(record):
    return re.findall(r'func="([^"]*)"(?:,file="[^"]*",fullname="[^"]*",line="(\d+)")?', record or "")


def forward_session(kind):
    path = program("lldb_session")
    # At compare_body, not at compare's first line: there x and y are not
    # set yet, and the stack garbage they show differed between runs on a
    # loaded machine (gdbserver's run and btstub's alike).
    commands = [
        "-break-insert %s:%d" % (SOURCE, marker_line(SOURCE, "compare_body")),  # 0
        "-exec-continue",                                          # 1
        "-stack-list-frames",                                      # 2
        "-stack-list-variables --simple-values",                   # 3
        "-var-create w * watched",                                 # 4
        "-break-delete 1",                                         # 5
        "-break-insert %s:%d" % (SOURCE, marker_line(SOURCE, "report")),  # 6
        "-exec-continue",                                          # 7
        "-var-update --all-values *",                              # 8
        "-data-list-register-names",                               # 9
        "-data-list-register-values x 16 7",                       # 10
        "-data-read-memory-bytes &watched 4",                      # 11
        "-data-evaluate-expression total",                         # 12
        "-exec-next",                                              # 13
        "-stack-info-frame",                                       # 14
    ]
    with Server(kind, [path]) as server:
        results, text = run_mi(server.address, path, commands)
    return results, text


def check_forward(c):
    ours, ours_text = forward_session("btstub")
    theirs, theirs_text = forward_session("gdbserver")
    context = ours_text

    def get(results, i, part="result"):
        return (results.get(i) or {}).get(part)

    c.equal("break-insert: the same breakpoint", field(get(theirs, 0), "func"), field(get(ours, 0), "func"), context)
    c.equal("exec-continue: stopped at the same breakpoint",
            [field(get(theirs, 1, "stopped"), k) for k in ("reason", "func", "line")],
            [field(get(ours, 1, "stopped"), k) for k in ("reason", "func", "line")], context)
    c.equal("stack-list-frames: the same frames", frames(get(theirs, 2)), frames(get(ours, 2)), context)
    c.true("stack-list-frames: compare() under libc's qsort under main",
           [f for f, _ in frames(get(ours, 2))][:1] == ["compare"] and
           "main" in [f for f, _ in frames(get(ours, 2))], get(ours, 2) or "")
    c.equal("stack-list-variables: the same locals", get(theirs, 3), get(ours, 3), context)
    c.equal("var-create: the same variable object", get(theirs, 4), get(ours, 4), context)
    c.equal("exec-continue to the report line", field(get(theirs, 7, "stopped"), "line"),
            field(get(ours, 7, "stopped"), "line"), context)
    c.equal("var-update: the watched value changed to 42", get(theirs, 8), get(ours, 8), context)
    c.contains("var-update says 42", get(ours, 8) or "", 'value="42"', context)
    names = [re.findall(r'"([^"]*)"', get(r, 9) or "") for r in (theirs, ours)]
    c.equal("data-list-register-names: the same number of named registers",
            len([n for n in names[0] if n]), len([n for n in names[1] if n]), context)
    c.equal("data-list-register-names: the same names", names[0], names[1], context)
    c.equal("data-list-register-values: rip and rsp", get(theirs, 10), get(ours, 10), context)
    c.equal("data-read-memory-bytes: watched's bytes", get(theirs, 11), get(ours, 11), context)
    c.contains("data-read-memory-bytes: 42 in memory", get(ours, 11) or "", 'contents="2a000000"', context)
    c.equal("data-evaluate-expression", get(theirs, 12), get(ours, 12), context)
    c.equal("exec-next: the same next line", field(get(theirs, 13, "stopped"), "line"),
            field(get(ours, 13, "stopped"), "line"), context)
    c.equal("stack-info-frame", get(theirs, 14), get(ours, 14), context)


def backward_session(kind):
    path = program("lldb_session")
    line = marker_line(SOURCE, "watch_store")
    commands = [
        "-break-insert %s:%d" % (SOURCE, line),                    # 0
        "-exec-continue",                                          # 1
    ]
    if kind == "gdbserver":
        commands.append('-interpreter-exec console "record full"')  # 2
    else:
        commands.append("-data-evaluate-expression 1")              # 2 (btstub records from the start)
    commands += [
        "-exec-next",                                              # 3
        "-data-evaluate-expression watched",                       # 4
        "-exec-next --reverse",                                    # 5
        "-data-evaluate-expression watched",                       # 6
        "-stack-list-frames",                                      # 7
        "-exec-next",                                              # 8
        "-data-evaluate-expression watched",                       # 9
    ]
    options = ("--once",) if kind == "gdbserver" else ("--once", "--record")
    old = os.environ.get("GLIBC_TUNABLES")
    os.environ["GLIBC_TUNABLES"] = TUNABLES
    try:
        with Server(kind, [path], options=options) as server:
            results, text = run_mi(server.address, path, commands)
    finally:
        if old is None:
            del os.environ["GLIBC_TUNABLES"]
        else:
            os.environ["GLIBC_TUNABLES"] = old
    return results, text


def check_backward(c):
    ours, ours_text = backward_session("btstub")
    theirs, theirs_text = backward_session("gdbserver")

    def get(results, i, part="result"):
        return (results.get(i) or {}).get(part)

    for i, what in ((3, "exec-next"), (5, "exec-next --reverse"), (8, "exec-next again")):
        c.equal("%s: the same line as gdbserver + record full" % what,
                field(get(theirs, i, "stopped"), "line"), field(get(ours, i, "stopped"), "line"),
                ours_text + "\n--- gdbserver:\n" + theirs_text)
    c.equal("reverse: stopped where the store is", str(marker_line(SOURCE, "watch_store")),
            field(get(ours, 5, "stopped"), "line"), ours_text)
    for i, when, value in ((4, "after the store", "42"), (6, "in the past", "0"), (9, "again after it", "42")):
        c.equal("watched %s, as with record full" % when, get(theirs, i), get(ours, i), ours_text)
        c.equal("watched %s is %s" % (when, value), "done,value=\"%s\"" % value, get(ours, i), ours_text)
    c.equal("stack-list-frames in the past", frames(get(theirs, 7)), frames(get(ours, 7)), ours_text)


def main(args, c):
    check_forward(c)
    check_backward(c)


if __name__ == "__main__":
    run_test("test_mi", main)
