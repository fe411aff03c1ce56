#!/usr/bin/env python3
"""--attach PID of a multi-threaded program (tests/programs/attach_threads.c,
started by this test, main waiting in a loop and three named workers
ticking), one gdb script against gdbserver (the reference) and the server
under test, each on its own fresh copy of the program:

- `info threads` lists all four threads (main and worker-1..3);
- `thread apply all bt` shows every thread: main in main_wait() called
  from main(), each worker in worker();
- a conditional breakpoint in worker_tick() (id == 2; workers 1 and 3 pass
  it, each such hit being an all-stop and a resume) is hit by worker-2, in
  its own thread; `info threads` then marks that thread current;
- `detach`: the program is no longer traced and goes on; told to stop it
  exits with code 0 and every worker's tick count grew after the detach
  (a leftover int3 in worker_tick() would have killed it with SIGTRAP).
The facts drawn from both transcripts must be the same.

Then, btstub only (raw RSP, where debug registers trap): a client that
detaches (`D;PID`) with a Z1 on worker_tick() and a Z2 on ticks[1] still
in place leaves no debug register armed: the program goes on and exits
normally (gdbserver 13.1 leaves them, and SIGTRAP kills it; gdb removes
them before `D`).

    python3 test_attach_threads.py [--server gdbserver] [-v]
"""

import contextlib
import os
import re
import subprocess
import tempfile
import time

from harness import (Server, debug_registers_trap, kill_session, load_base, marker_line, pid_alive,
                     program, run_gdb, run_test, symbol_offset, tracer_of, wait_until)
from rsp_client import RspClient

COMMANDS = [
    "info threads",
    "thread apply all bt",
    "break worker_tick if id == 2",
    "continue",
    "print id",
    "print ticks",
    "info threads",
    "detach",
]

THREAD_ROW = re.compile(r'^(\*?)\s*(\d+)\s+Thread \d+\.\d+ "([^"]+)"')


def thread_rows(text):
    """(current?, gdb number, name) of each `info threads` row."""
    rows = []
    for line in text.splitlines():
        m = THREAD_ROW.match(line)
        if m:
            rows.append((m.group(1) == "*", int(m.group(2)), m.group(3)))
    return rows


def backtrace_roots(text):
    """Per `thread apply all bt` section: thread name, and the program's own
    functions (in this file) from innermost to outermost."""
    sections = re.split(r"^Thread \d+ \(Thread \d+\.\d+ ", text, flags=re.M)[1:]
    out = []
    for section in sections:
        name = re.match(r'"([^"]+)"', section)
        funcs = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\w+) \(.*\) at "
                           r"\S*attach_threads\.c:\d+$", section, flags=re.M)
        out.append((name.group(1) if name else "?", funcs))
    return sorted(out)


def facts(result):
    """What must be the same under either server."""
    hit = re.search(r'^Thread (\d+) "([^"]+)" hit Breakpoint 1, '
                    r"worker_tick \(id=(\d)\) at attach_threads\.c:(\d+)$",
                    result.of(3), flags=re.M)
    return {
        "threads before": sorted(name for _, _, name in thread_rows(result.of(0))),
        "backtraces": backtrace_roots(result.of(1)),
        "hit": hit.groups() if hit else None,
        "print id": result.of(4).strip(),
        "current after hit": [(cur, name) for cur, _, name
                              in thread_rows(result.of(6))],
    }


@contextlib.contextmanager
def running_program(prog, marker):
    """The program started with its four threads (named), killed at the end."""
    proc = subprocess.Popen([prog, marker], stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        # Every worker must exist (and have its name) before the attach.
        wait_until(lambda: len(os.listdir("/proc/%d/task" % proc.pid)) == 4, 5)
        time.sleep(0.2)
        yield proc
    finally:
        kill_session(proc.pid)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            pass


def told_to_stop(proc, marker):
    """Its exit status once told to stop (None: it did not exit)."""
    open(marker + ".stop", "w").close()
    try:
        return proc.wait(15)
    except subprocess.TimeoutExpired:
        return None


def attach_run(kind, c, prog, tmp):
    marker = os.path.join(tmp, kind + ".done")
    with running_program(prog, marker) as proc:
        pid = proc.pid
        server = Server(kind, [str(pid)], options=("--once", "--attach"))
        try:
            result = run_gdb(COMMANDS, prog, server.address, timeout=90)
            server.wait_exit(10)
        finally:
            server.stop()
        ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
        c.lines("%s: detach" % kind, result.of(7),
                ["[Inferior 1 (process %d) detached]" % pid], ctx)
        c.true("%s: program alive and untraced after detach" % kind,
               pid_alive(pid) and proc.poll() is None and
               wait_until(lambda: tracer_of(pid) == 0, 5),
               "TracerPid %r" % tracer_of(pid))
        at_hit = re.match(r"^\$\d+ = \{0, (\d+), (\d+), (\d+)\}$", result.of(5))
        c.true("%s: tick counts readable at the hit" % kind, at_hit, ctx)
        # The workers go on ticking after the detach (a stray int3 in
        # worker_tick() would kill them).
        time.sleep(0.3)
        c.equal("%s: program exits normally when told (no stray int3)" % kind,
                0, told_to_stop(proc, marker))
        text = open(marker).read() if os.path.exists(marker) else ""
        m = c.matches("%s: program wrote its tick counts" % kind, text,
                      r"^done ticks=(\d+) (\d+) (\d+)$")
        if m and at_hit:
            c.true("%s: every worker ticked after the detach" % kind,
                   all(int(end) > int(hit) + 50
                       for end, hit in zip(m.groups(), at_hit.groups())),
                   "at the hit %s, at the end %s" % (at_hit.groups(), text))
        return result, ctx


def detach_with_hw_points(c, prog, tmp):
    marker = os.path.join(tmp, "hw.done")
    with running_program(prog, marker) as proc:
        pid = proc.pid
        server = Server("btstub", [str(pid)], options=("--once", "--attach"))
        try:
            client = RspClient.connect(server.port)
            client.handshake()
            base = load_base(pid, prog)
            tick, ticks = base + symbol_offset(prog, "worker_tick"), base + symbol_offset(prog, "ticks")
            c.equal("raw: Z1 on worker_tick", "OK", client.request("Z1,%x,1" % tick))
            c.equal("raw: Z2 on ticks[1]", "OK", client.request("Z2,%x,8" % (ticks + 8)))
            c.equal("raw: D;PID with both still set", "OK", client.request("D;%x" % pid))
            client.close()
            server.wait_exit(10)
        finally:
            server.stop()
        time.sleep(0.3)
        c.true("raw: the program lives on after the detach", proc.poll() is None, "status %r" % proc.poll())
        c.equal("raw: it exits normally when told (no debug register left armed)", 0, told_to_stop(proc, marker))


def main(args, c):
    prog = program("attach_threads")
    body = marker_line("attach_threads.c", "worker_tick_body")
    with tempfile.TemporaryDirectory(prefix="btstub-test-") as tmp:
        ref, _ = attach_run("gdbserver", c, prog, tmp)
        if args.server == "gdbserver":
            test, ctx = ref, ref.transcript()
        else:
            test, ctx = attach_run(args.server, c, prog, tmp)
    got = facts(test)
    c.equal("info threads lists main and every worker",
            ["attach_threads_", "worker-1", "worker-2", "worker-3"],
            got["threads before"])
    c.equal("thread apply all bt shows each thread's own frames", [
        ("attach_threads_", ["main_wait", "main"]),
        ("worker-1", ["worker"]), ("worker-2", ["worker"]),
        ("worker-3", ["worker"])], got["backtraces"])
    c.true("breakpoint hit by worker-2 in its own thread",
           got["hit"] is not None and got["hit"][1:] == ("worker-2", "2", str(body)),
           ctx)
    c.value("print id at the hit", test.of(4), "2")
    c.equal("info threads marks worker-2 current",
            [("worker-2")], [name for cur, name in got["current after hit"] if cur])
    ref_facts = facts(ref)
    for key in ref_facts:
        c.equal("same %s as gdbserver" % key, ref_facts[key], got[key])
    if args.server == "btstub" and debug_registers_trap():
        with tempfile.TemporaryDirectory(prefix="btstub-test-") as tmp:
            detach_with_hw_points(c, prog, tmp)


if __name__ == "__main__":
    run_test("test_attach_threads", main)
