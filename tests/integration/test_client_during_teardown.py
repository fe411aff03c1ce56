#!/usr/bin/env python3
"""A client that comes while btstub ends the last session is served, never
handed that session's replies (issue 27, item 6).

`btstub --record` (no --once) on record_workload with far more rounds than
it can record in the test; a first gdb `continue`s to the loop's first
round and on, and is SIGKILLed 2 s later while the program runs under
recording (hundreds of checkpoints); a second gdb connects half a second
later. (A fixed 2 s after the first `continue` fell, under the sanitizers,
into a library load gdb was busy with: the program stood stopped, and was
rightly kept for the second client.) Before, btstub went on absorbing
the tracer's stops without looking at the client's socket until the
program's next reportable stop: it noticed the first client's end only
seconds later (11 s here), and the second gdb's first packets timed out,
after which every reply answered the packet before ("Remote replied
unexpectedly to 'vMustReplyEmpty': PacketSize=..."). The second session
must be a fresh copy of the program, stopped at its start, with an empty
recording, and end cleanly; no process of the first may be left.

Also Ctrl-C while recording: gdb's interrupt reaches btstub while the
tracer absorbs stops, and the program stops (the stop itself is checked,
not its latency). The Ctrl-C comes once the program is past its start-up
(a breakpoint in its loop was hit, deleted, and gdb continued): gdb itself
drops a SIGINT that comes while it reads a library's symbols from the
target (gdbserver's sessions lose it there too), as happened under the
sanitizers when a fixed 2 s after `continue` fell into it.

    python3 test_client_during_teardown.py [-v]
"""

import os
import signal
import subprocess
import time

from harness import LineCollector, Server, gdb_environment, gdb_path, pid_alive, program, run_gdb, run_test, wait_until


def first_client(prog, port):
    """gdb continuing into the program's loop: stopped at its first round,
    then running on, recorded."""
    argv = [gdb_path(), "-batch", "-nx", "-q", "-iex", "set debuginfod enabled off",
            "-ex", "target remote 127.0.0.1:%d" % port, "-ex", "break round_work", "-ex", "continue",
            "-ex", "delete", "-ex", "continue", prog]
    gdb = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           start_new_session=True, env=gdb_environment())
    return gdb, LineCollector(gdb.stdout)


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub has --record (skipped for %s)" % args.server, True)
        return
    prog = program("record_workload", "O2")
    with Server("btstub", [prog, "100000000"], options=("--record",)) as server:
        first_pid = server.inferior_pid
        gdb1, out1 = first_client(prog, server.port)
        # Killed while the program runs, not while it stands at a stop gdb
        # is busy with (a library's load, seconds under the sanitizers): a
        # program left stopped is kept for the next client, as by gdbserver.
        c.true("the first client's program reaches its loop", out1.wait_for(r"^Breakpoint 1, ", 60) is not None,
               out1.text())
        time.sleep(2.0)  # gdb deletes the breakpoint and continues at once
        os.killpg(gdb1.pid, signal.SIGKILL)
        gdb1.wait(5)
        out1.join()
        time.sleep(0.5)
        second = run_gdb(["info threads", "monitor record status", "kill"], prog, server.address, timeout=60)
        ctx = second.transcript() + "\n--- server stderr ---\n" + server.stderr
        c.not_contains("the second client gets its own replies", second.output, "Remote replied unexpectedly", ctx)
        c.not_contains("... none of them given up on", second.output, "Ignoring packet error", ctx)
        c.matches("the second client's program stands at its start", second.of_command("info threads"),
                  r"_start \(\) from ", ctx)
        c.contains("its recording is empty", second.of_command("monitor record status"), ": 0 of ", ctx)
        c.true("the first program is gone", wait_until(lambda: not pid_alive(first_pid), 10.0), ctx)
        # Ctrl-C while the tracer absorbs stops: a third client.
        argv = [gdb_path(), "-nx", "-q", "-iex", "set debuginfod enabled off", "-ex",
                "target remote " + server.address, "-ex", "break round_work", "-ex", "continue", "-ex",
                "delete", "-ex", "continue", "-ex", "monitor record status", "-ex", "kill", "-ex", "quit", prog]
        gdb3 = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, env=gdb_environment())
        out = LineCollector(gdb3.stdout)
        at_loop = out.wait_for(r"^Breakpoint 1, ", 60) is not None
        c.true("the program reaches its loop under recording", at_loop, out.text())
        time.sleep(1.0)  # gdb deletes the breakpoint and continues meanwhile
        os.kill(gdb3.pid, signal.SIGINT)
        try:
            gdb3.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(gdb3.pid, signal.SIGKILL)
            gdb3.wait()
        out.join()
        text = out.text()
        c.contains("Ctrl-C while recording stops the program", text, "received signal SIGINT", text)
        c.matches("... with branches recorded", text, r"thread \d+: [1-9][\d,]* of ", text)


if __name__ == "__main__":
    run_test("test_client_during_teardown", main)
