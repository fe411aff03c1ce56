#!/usr/bin/env python3
"""gdb's `remote put`, `remote get` and `remote delete` (vFile:open, pwrite,
pread, close, unlink) on files of the target, with the same gdb script run
against gdbserver (the reference) and the server under test:

1. a round trip: `remote put` of a 100 KiB binary file (every byte value,
   runs of the bytes gdb escapes: several pwrite packets) over an existing,
   longer file, `remote get` of it back, `remote put` to a new file,
   `remote delete` of it (and again: No such file), `remote get` of the
   deleted file, `remote put` to a new file that stays (its mode);
2. destinations that cannot be written: a read-only file (`remote put`:
   Permission denied, the file intact and still readable with `remote get`),
   a file in a read-only directory (`remote delete`: Permission denied),
   a directory (`remote put`, `remote delete`: Is a directory), a missing
   directory (No such file or directory);
3. then the program runs to its end.

The transcripts (pids normalised) and the files left afterwards (contents
and modes) must equal gdbserver's; the files must be what the commands
asked for. A server that opens the destination with O_TRUNC and then does
not answer vFile:pwrite leaves the existing file empty ("Remote I/O error:
Function not implemented"): issue 27, item 2.

4. btstub only (gdbserver has no such option): with --no-vfile every one of
   those commands is refused and no file changes (the open is refused before
   anything is truncated).

As root the servers run with CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
dropped (setpriv), so a file's mode binds them as it binds any user.

    python3 test_host_files.py [--server gdbserver] [-v]
"""

import hashlib
import os
import shutil
import stat
import tempfile

from harness import (Server, normalise, program, run_gdb, run_test, server_path,
                     unified_diff)

SETPRIV = shutil.which("setpriv")


def contents():
    """100 KiB: every byte value, runs of '}', '#', '$', '*' and NUL, and
    pseudo-random bytes (a linear congruential sequence)."""
    out = bytearray(range(256)) * 4
    out += b"}}}}####$$$$****\x00\x00\x00\x00}#$*" * 64
    x = 12345
    while len(out) < 100 * 1024:
        x = (x * 1103515245 + 12345) & 0x7fffffff
        out.append(x >> 16 & 0xff)
    return bytes(out)


LOCAL = contents()
OLD = b"the old contents of existing.bin, longer than nothing\n" * 3000
PROTECTED = b"protected: must survive a remote put\n"
KEPT = b"kept: in a read-only directory\n"


class Files:
    """The files a run works on, recreated under one path for every run so
    the transcripts of both servers name the same paths."""

    def __init__(self, root):
        self.root = root
        self.local = os.path.join(root, "local.bin")      # gdb's side
        self.target = os.path.join(root, "target")       # the server's side
        self.existing = os.path.join(self.target, "existing.bin")
        self.readonly = os.path.join(self.target, "readonly.txt")
        self.fresh = os.path.join(self.target, "fresh.bin")
        self.created = os.path.join(self.target, "created.bin")
        self.locked_dir = os.path.join(self.target, "locked")
        self.locked = os.path.join(self.locked_dir, "kept.txt")
        self.subdir = os.path.join(self.target, "subdir")
        self.missing = os.path.join(self.target, "missing", "x.bin")
        self.fetched = os.path.join(root, "fetched")     # what `remote get` writes

    def create(self):
        for path in (self.target, self.fetched):
            if os.path.isdir(path):
                for dirpath, dirs, _ in os.walk(path):
                    for d in dirs:
                        os.chmod(os.path.join(dirpath, d), 0o755)
                shutil.rmtree(path)
        os.makedirs(self.subdir)
        os.makedirs(self.locked_dir)
        os.makedirs(self.fetched)
        self._write(self.local, LOCAL, 0o644)
        self._write(self.existing, OLD, 0o644)
        self._write(self.readonly, PROTECTED, 0o444)
        self._write(self.locked, KEPT, 0o644)
        os.chmod(self.locked_dir, 0o555)

    @staticmethod
    def _write(path, data, mode):
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)

    def state(self):
        """{relative path: (mode, sha1 of contents or 'dir')} of the target
        and fetched trees."""
        out = {}
        for top in (self.target, self.fetched):
            for dirpath, dirs, files in os.walk(top):
                for name in dirs + files:
                    path = os.path.join(dirpath, name)
                    st = os.lstat(path)
                    if stat.S_ISDIR(st.st_mode):
                        what = "dir"
                    else:
                        with open(path, "rb") as f:
                            what = hashlib.sha1(f.read()).hexdigest()
                    out[os.path.relpath(path, self.root)] = (oct(st.st_mode & 0o7777), what)
        return out

    def read(self, path):
        with open(path, "rb") as f:
            return f.read()


def commands(f):
    back = os.path.join(f.fetched, "existing.back")
    return [
        "remote put %s %s" % (f.local, f.existing),
        "remote get %s %s" % (f.existing, back),
        "remote put %s %s" % (f.local, f.readonly),
        "remote get %s %s" % (f.readonly, os.path.join(f.fetched, "readonly.back")),
        "remote put %s %s" % (f.local, f.fresh),
        "remote delete %s" % f.fresh,
        "remote delete %s" % f.fresh,
        "remote get %s %s" % (f.fresh, os.path.join(f.fetched, "fresh.back")),
        "remote delete %s" % f.locked,
        "remote put %s %s" % (f.local, f.subdir),
        "remote delete %s" % f.subdir,
        "remote put %s %s" % (f.local, f.missing),
        "remote put %s %s" % (f.local, f.created),
        "continue",
    ]


def unprivileged():
    """The prefix that makes file modes bind a root server, or None where
    that is impossible (root without setpriv)."""
    if os.geteuid() != 0:
        return []
    if SETPRIV is None:
        return None
    return [SETPRIV, "--bounding-set=-dac_override,-dac_read_search"]


def run(kind, f, options=("--once",)):
    prefix = unprivileged() or []
    f.create()
    prog = program("basic")
    argv = prefix + [server_path(kind)] + list(options) + ["127.0.0.1:0", prog]
    server = Server(kind, [], argv=argv)
    try:
        result = run_gdb(commands(f), prog, server.address)
        server.wait_exit(10)
    finally:
        server.stop()
    return result, server, f.state()


def commands_transcript(result):
    return "\n".join("(gdb) %s\n%s" % (cmd, "<not reached>" if out is None else out)
                     for cmd, out in result.outputs)


def check_round_trip(kind, c, f):
    if unprivileged() is None:
        c.skip("remote put/get/delete", "running as root without setpriv: file modes would not bind")
        return
    ref, ref_server, ref_state = run("gdbserver", f)
    test, server, state = run(kind, f)
    ctx = test.transcript() + "\n--- server stderr ---\n" + server.stderr
    # gdb -batch prints nothing for a command that succeeds (its
    # "Successfully sent file" lines are for a terminal).
    c.equal("reference: remote put over an existing file succeeds", "", ref.of(0).strip(),
            ref.transcript())

    c.equal("remote put over an existing file succeeds", "", test.of(0).strip(), ctx)
    c.not_contains("no 'Function not implemented'", test.output, "Function not implemented", ctx)
    c.true("the existing file now holds exactly what was put (100 KiB, escaped bytes included)",
           os.path.exists(f.existing) and f.read(f.existing) == LOCAL, ctx)
    c.true("remote get fetches it back byte for byte",
           f.read(os.path.join(f.fetched, "existing.back")) == LOCAL, ctx)
    c.contains("a read-only destination: the error is reported", test.of(2),
               "Remote I/O error: Permission denied", ctx)
    c.equal("a read-only destination: the file is intact", PROTECTED, f.read(f.readonly))
    c.true("the read-only file can still be fetched",
           f.read(os.path.join(f.fetched, "readonly.back")) == PROTECTED, ctx)
    c.equal("remote get succeeds", "", test.of(1).strip(), ctx)
    c.equal("remote put creates a new file", "", test.of(4).strip(), ctx)
    c.equal("remote delete removes it", "", test.of(5).strip(), ctx)
    c.true("the deleted file is gone", not os.path.exists(f.fresh), ctx)
    c.contains("a second remote delete: No such file", test.of(6),
               "Remote I/O error: No such file or directory", ctx)
    c.contains("remote get of the deleted file: No such file", test.of(7),
               "Remote I/O error: No such file or directory", ctx)
    c.contains("remote delete in a read-only directory is refused", test.of(8),
               "Remote I/O error: Permission denied", ctx)
    c.equal("the file in the read-only directory is intact", KEPT, f.read(f.locked))
    c.contains("remote put onto a directory: Is a directory", test.of(9),
               "Remote I/O error: Is a directory", ctx)
    c.contains("remote delete of a directory: Is a directory", test.of(10),
               "Remote I/O error: Is a directory", ctx)
    c.contains("remote put into a missing directory: No such file", test.of(11),
               "Remote I/O error: No such file or directory", ctx)
    c.equal("remote put creates a file that stays", "", test.of(12).strip(), ctx)
    c.true("it holds what was put", os.path.exists(f.created) and f.read(f.created) == LOCAL, ctx)
    c.equal("with gdbserver's mode (gdb asks for 0700)", ref_state.get("target/created.bin", ("?",))[0],
            state.get("target/created.bin", ("none",))[0])
    c.contains("the program runs to its end", test.of(-1), "exited with code", ctx)

    ref_lines = normalise(commands_transcript(ref))
    test_lines = normalise(commands_transcript(test))
    c.true("same transcript as gdbserver", ref_lines == test_lines,
           unified_diff(ref_lines, test_lines, "gdbserver", kind))
    c.equal("the same files, contents and modes as under gdbserver",
            sorted(ref_state.items()), sorted(state.items()))


def check_no_vfile(kind, c, f):
    if kind != "btstub":
        c.skip("--no-vfile", "a btstub option")
        return
    if unprivileged() is None:
        c.skip("--no-vfile", "running as root without setpriv")
        return
    f.create()
    before = f.state()
    result, server, after = run(kind, f, options=("--once", "--no-vfile"))
    ctx = result.transcript() + "\n--- server stderr ---\n" + server.stderr
    for i, (cmd, out) in enumerate(result.outputs[:-1]):
        c.true("--no-vfile: `%s` is refused" % cmd, out is not None and "Successfully" not in out
               and "Remote I/O error" in out, ctx)
    c.equal("--no-vfile: no file changed, none was created or fetched",
            sorted(before.items()), sorted(after.items()))
    c.equal("--no-vfile: the existing file is intact", OLD, f.read(f.existing))
    c.contains("--no-vfile: the program still runs to its end", result.of(-1),
               "exited with code", ctx)


def main(args, c):
    root = tempfile.mkdtemp(prefix="btstub-host-files-")
    try:
        f = Files(root)
        check_round_trip(args.server, c, f)
        check_no_vfile(args.server, c, f)
    finally:
        for dirpath, dirs, _ in os.walk(root):
            for d in dirs:
                os.chmod(os.path.join(dirpath, d), 0o755)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    run_test("test_host_files", main)
