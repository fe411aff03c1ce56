#!/usr/bin/env python3
"""gdb's run settings reach the programs `run` starts over extended-remote,
as under gdbserver: `set environment`, `unset environment`, `set cwd` and
`set disable-randomization` (QEnvironmentHexEncoded, QEnvironmentUnset,
QEnvironmentReset, QSetWorkingDir, QDisableRandomization). btstub used to
offer none of them, so gdb left them out and the program ran with the
server's environment and directory, silently.

One gdb session against `SERVER --once --multi`:

1. `set environment BTSTUB_RUN_SETTING=a b=c`, `unset environment HOME`,
   `set cwd DIR`, then `run` of /usr/bin/env: the variable is there with
   its value, HOME is not;
2. `run` of /bin/pwd: it prints DIR;
3. `unset environment BTSTUB_RUN_SETTING`, `set cwd` (none), `run` of
   /usr/bin/env and /bin/pwd: the variable is gone, the directory is the
   server's own again;
4. with `set disable-randomization off`, two runs of /bin/cat
   /proc/self/maps map the stack at different addresses; with it on, at
   the same;
5. `set cwd /nonexistent`, `run`: gdb says the run failed, btstub says
   why (gdbserver's words, "Couldn't chdir to DIR: REASON") and the
   session goes on: `set cwd`, `run` works (gdbserver 13.1 closes the
   connection there instead: not compared).

Points 1-4 hold for gdbserver's run of the same session too.

    python3 test_run_settings.py [-v]
"""

import os
import re
import tempfile

from harness import Server, run_gdb, run_test


def session(kind, workdir):
    server = Server(kind, [], options=("--once", "--multi"))
    env, pwd, cat = "/usr/bin/env", "/bin/pwd", "/bin/cat"
    commands = [
        "target extended-remote " + server.address,                       # 0
        "set environment BTSTUB_RUN_SETTING=a b=c",                       # 1
        "unset environment HOME",                                         # 2
        "set cwd " + workdir,                                             # 3
        "set remote exec-file " + env, "file " + env, "run",              # 4-6
        "set remote exec-file " + pwd, "file " + pwd, "run",              # 7-9
        "unset environment BTSTUB_RUN_SETTING", "set cwd",                # 10-11
        "set remote exec-file " + env, "file " + env, "run",              # 12-14
        "set remote exec-file " + pwd, "file " + pwd, "run",              # 15-17
        "set remote exec-file " + cat, "file " + cat,                     # 18-19
        "set args /proc/self/maps", "set disable-randomization off",      # 20-21
        "run", "run",                                                     # 22-23
        "set disable-randomization on", "run", "run",                     # 24-26
        "set cwd /nonexistent/btstub-dir", "run",                         # 27-28
        "set cwd", "run",                                                 # 29-30
        "monitor exit",                                                   # 31
    ]
    try:
        result = run_gdb(commands, None, None, timeout=90)
        server.wait_exit(10)
    finally:
        server.stop()
    return result, server


def stacks(output):
    return re.findall(r"^([0-9a-f]+)-[0-9a-f]+ \S+ \S+ \S+ \S+\s+\[stack\]$", output, re.M)


def parts(server):
    """The programs' output (env, pwd, env, pwd, cat...) and cat's stacks."""
    out = server.stdout
    return out, stacks(out)


def main(args, c):
    with tempfile.TemporaryDirectory(prefix="btstub-cwd-") as workdir:
        workdir = os.path.realpath(workdir)
        results = {kind: session(kind, workdir) for kind in ("gdbserver", args.server)}
    for kind, (result, server) in results.items():
        out, found = parts(server)
        ctx = result.transcript() + "\n--- server stdout ---\n" + out + "\n--- server stderr ---\n" + server.stderr
        env_lines = [l for l in out.splitlines() if "=" in l and not l.startswith("/")]
        c.true("%s: the program sees `set environment` (value with '=' and a space)" % kind,
               "BTSTUB_RUN_SETTING=a b=c" in out.splitlines(), ctx)
        c.true("%s: `unset environment HOME` leaves HOME out" % kind,
               not any(l.startswith("HOME=") for l in env_lines), ctx)
        pwds = [l for l in out.splitlines() if l.startswith("/")]
        c.true("%s: `set cwd` runs the program there, and `set cwd` alone back in the server's" % kind,
               len(pwds) >= 2 and pwds[0] == workdir and pwds[1] != workdir, "%s\n%s" % (pwds, ctx))
        c.equal("%s: after `unset environment` the variable is gone (one env run shows it)" % kind,
                1, out.count("BTSTUB_RUN_SETTING="), ctx)
        # The session's last run (after the missing cwd) is cat's too.
        c.true("%s: four runs of cat show their stacks" % kind, len(found) >= 4, ctx)
        found = found[:4]
        if len(found) == 4:
            c.true("%s: randomization off: the stack moves between runs; on: it stays" % kind,
                   found[0] != found[1] and found[2] == found[3], "%s\n%s" % (found, ctx))
        c.contains("%s: a run in a missing cwd fails" % kind, result.of(28), "on the remote target failed", ctx)
        if kind != "gdbserver":
            c.contains("%s: and says why, in gdbserver's words" % kind, server.stderr,
                       "Couldn't chdir to /nonexistent/btstub-dir: No such file or directory", ctx)
            c.true("%s: the session goes on: the next run works" % kind,
                   "exited normally" in result.of(30) and result.of(31).strip() == "", ctx)


if __name__ == "__main__":
    run_test("test_run_settings", main)
