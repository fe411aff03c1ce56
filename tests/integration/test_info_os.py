#!/usr/bin/env python3
"""`info os` and `info os TYPE` (qXfer:osdata:read) answer as gdbserver's.

gdbserver 13.1 serves ten tables: cpus, files, modules, msg, processes,
procgroups, semaphores, shm, sockets, threads. Over TCP, with
tests/programs/threads.c stopped in all_started() (four threads), gdb asks
both servers for each table, in the CLI and through MI (`-info-os TYPE`,
whose reply names every column and value exactly). Before that, one System V
shared-memory segment, semaphore set and message queue are made with ipcmk
(and removed afterwards).

What must hold (contents differ between runs, so only what is stable):
- `info os` (the list of types) prints exactly gdbserver's text, and so
  does `info os types` (the annex "types", which gdbserver serves too);
- every table's column headers are gdbserver's (names, order);
- cpus and modules: the same rows as gdbserver's;
- processes, procgroups: a row for the program's pid; threads: its four
  threads, the main one included; files: its descriptors, the same as
  gdbserver lists (pipe and socket inodes aside), 0, 1 and 2 among them;
- sockets: gdb's connection to the server, ESTABLISHED on the server's port;
- shm, semaphores, msg: the row of the object made here, equal to
  gdbserver's row for it;
- an unknown type gives gdb "Can not fetch data now." (no crash: the
  session goes on).

    python3 test_info_os.py [--server gdbserver] [-v]
"""

import re
import subprocess

from harness import Server, marker_line, program, run_gdb, run_test

TYPES = ["cpus", "files", "modules", "msg", "processes", "procgroups",
         "semaphores", "shm", "sockets", "threads"]

MI_STRING = r'"((?:[^"\\]|\\.)*)"'


def mi_unquote(text):
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def mi_table(output):
    """(headers, rows) of an MI `-info-os` reply; rows are lists of values."""
    m = re.search(r"\^done,OSDataTable=\{.*\}", output)
    if not m:
        return None
    text = m.group(0)
    headers = [mi_unquote(h) for h in re.findall(r"colhdr=" + MI_STRING, text)]
    rows = []
    for item in re.finditer(r"item=\{((?:col\d+=" + MI_STRING + r",?)*)\}", text):
        rows.append([mi_unquote(v) for v in re.findall(r"col\d+=" + MI_STRING, item.group(1))])
    return headers, rows


def make_ipc():
    """Makes one shared-memory segment, semaphore set and message queue;
    returns their ids {"shm": id, "semaphores": id, "msg": id}."""
    ids = {}
    for kind, flags in (("shm", ["-M", "4096"]), ("semaphores", ["-S", "1"]), ("msg", ["-Q"])):
        out = subprocess.run(["ipcmk"] + flags, capture_output=True, text=True, check=True).stdout
        ids[kind] = re.search(r"id: (\d+)", out).group(1)
    return ids


def remove_ipc(ids):
    for kind, flag in (("shm", "-m"), ("semaphores", "-s"), ("msg", "-q")):
        if kind in ids:
            subprocess.run(["ipcrm", flag, ids[kind]], capture_output=True)


def session(kind):
    """Runs gdb against a `kind` server on threads.c stopped with its four
    threads; returns (result, port, pid, index of each command)."""
    prog = program("threads")
    commands = ["break threads.c:%d" % marker_line("threads.c", "all_started_body"), "continue", "info os"]
    index = {}
    for t in TYPES:
        index["cli " + t] = len(commands)
        commands.append("info os " + t)
        index["mi " + t] = len(commands)
        commands.append('interpreter-exec mi "-info-os %s"' % t)
    index["nosuch"] = len(commands)
    commands.append("info os nosuch")
    index["after"] = len(commands)
    commands.append("info os processes")
    index["types"] = len(commands)
    commands.append("info os types")
    commands.append("kill")
    server = Server(kind, [prog], options=("--once",))
    try:
        result = run_gdb(commands, prog, server.address, timeout=120)
        server.wait_exit(10.0)
    finally:
        server.stop()
    return result, server.port, server.inferior_pid, index


def column(headers, rows, name):
    at = headers.index(name) if name in headers else None
    return [row[at] if at is not None and at < len(row) else None for row in rows]


def rows_where(table, name, value):
    headers, rows = table
    return [row for row, v in zip(rows, column(headers, rows, name)) if v == value]


def main(args, c):
    ids = make_ipc()
    try:
        ref, _, ref_pid, index = session("gdbserver")
        sub, port, pid, _ = session(args.server)
    finally:
        remove_ipc(ids)
    ctx = sub.transcript()
    c.true("the server reports the program's pid", pid is not None, ctx)
    c.true("gdb stopped in all_started", "all_started" in sub.of(1), ctx)

    ref_types = ref.of(2)
    c.true("gdbserver lists ten types", all(("\n%s " % t) in ref_types for t in TYPES), ref.transcript())
    c.equal("info os: the types list is gdbserver's", ref_types, sub.of(2), ctx)
    c.equal("info os types (annex 'types'): gdbserver's text", ref.of(index["types"]), sub.of(index["types"]), ctx)

    tables = {}
    for t in TYPES:
        want = mi_table(ref.of(index["mi " + t]))
        got = mi_table(sub.of(index["mi " + t]))
        c.true("%s: gdbserver answers" % t, want is not None, ref.of(index["mi " + t]))
        c.true("%s: answered (not 'Can not fetch data now.')" % t, got is not None and
               "Can not fetch" not in sub.of(index["cli " + t]), sub.of(index["mi " + t]))
        if want is None or got is None:
            continue
        tables[t] = got
        # modules is empty where /proc/modules is missing (containers): no
        # headers to compare there, the unit test checks them.
        if t != "modules":
            c.true("%s: gdbserver's table has headers" % t, len(want[0]) > 0, ref.of(index["mi " + t]))
        c.equal("%s: column headers are gdbserver's" % t, want[0], got[0], sub.of(index["mi " + t]))
        if t in ("cpus", "modules"):
            c.equal("%s: rows are gdbserver's" % t, want[1], got[1], ctx)
            c.equal("%s: info os %s prints gdbserver's text" % (t, t), ref.of(index["cli " + t]),
                    sub.of(index["cli " + t]), ctx)
        if t in ("shm", "semaphores", "msg"):
            id_column = {"shm": "shmid", "semaphores": "semid", "msg": "msqid"}[t]
            mine = rows_where(got, id_column, ids[t])
            c.equal("%s: the one made here is listed once" % t, 1, len(mine), sub.of(index["mi " + t]))
            c.equal("%s: its row is gdbserver's" % t, rows_where(want, id_column, ids[t]), mine, ctx)
            if mine:
                c.equal("%s: made by us, 0644 by default" % t, "644",
                        mine[0][got[0].index("permissions")], sub.of(index["mi " + t]))
    c.true("cpus: one row per processor at least", len(tables.get("cpus", ([], []))[1]) >= 1)
    c.true("files: gdbserver lists the program's descriptors", ref_pid is not None and
           len(rows_where(mi_table(ref.of(index["mi files"])) or ([], []), "pid", str(ref_pid))) >= 3,
           ref.of(index["mi files"]))

    # A table gdb could not fetch counts as empty: each check below fails.
    for t in TYPES:
        tables.setdefault(t, ([], []))
    if pid is not None:
        spid = str(pid)
        process = rows_where(tables["processes"], "pid", spid)
        c.equal("processes: the program's pid, once", 1, len(process), sub.of(index["mi processes"]))
        if process:
            c.true("processes: its command line", "threads_O0" in column(tables["processes"][0], process, "command")[0],
                   str(process[0]))
        group = rows_where(tables["procgroups"], "pid", spid)
        c.equal("procgroups: the program's pid, once", 1, len(group), sub.of(index["mi procgroups"]))
        if group:
            c.true("procgroups: its command line",
                   "threads_O0" in column(tables["procgroups"][0], group, "command line")[0], str(group[0]))
        threads = rows_where(tables["threads"], "pid", spid)
        tids = column(tables["threads"][0], threads, "tid")
        c.equal("threads: the program's four threads", 4, len(set(tids)), sub.of(index["mi threads"]))
        c.true("threads: the main thread among them", spid in tids, str(tids))

        def fds(table, owner):
            rows = rows_where(table, "pid", owner)
            return sorted((fd, re.sub(r"\[\d+\]", "[N]", name)) for fd, name in
                          zip(column(table[0], rows, "file descriptor"), column(table[0], rows, "name")))
        mine = fds(tables["files"], spid)
        c.true("files: descriptors 0, 1 and 2 of the program", {"0", "1", "2"} <= {fd for fd, _ in mine},
               str(mine))
        ref_files = mi_table(ref.of(index["mi files"]))
        if ref_files and ref_pid is not None:
            c.equal("files: the program's descriptors are those gdbserver lists", fds(ref_files, str(ref_pid)),
                    mine, ctx)

        sockets = tables["sockets"]
        on_port = rows_where(sockets, "local port", str(port))
        ours = [state for state in column(sockets[0], on_port, "state") if state == "ESTABLISHED"]
        c.equal("sockets: gdb's connection on the server's port", 1, len(ours), sub.of(index["mi sockets"]))

    c.contains("an unknown type: gdb cannot fetch it", sub.of(index["nosuch"]), "Can not fetch data now.", ctx)
    c.matches("the session goes on after it", sub.of(index["after"]), r"^pid\s+user\s+command\s+cores\s*$", ctx)


if __name__ == "__main__":
    run_test("test_info_os", main)
