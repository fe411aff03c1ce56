#!/usr/bin/env python3
"""Every register and byte in the recorded past, against gdb's record full.

past_values.c reads a file, a pipe, the clocks and the TSC, uses the heap,
an anonymous mmap and a signal handler, and loops. At -O0 and -O2:

  reference  native gdb runs it (no shell, the same environment), stops at
             MARK record_start, starts `record full` there and continues to
             MARK finish_line;
  subject    gdb -> `btstub --record - PROG` through a pipe (btstub records
             from the first instruction; gdb runs no `record`), the same
             breakpoints. With --server gdbserver: gdb -> gdbserver with
             `record full` on gdb's side (proves the comparison); --self:
             native record full again (both must pass).

Then both visit the same points: the live stop at finish_line, reverse-step,
-next, -finish, -stepi, reverse-continue to breakpoints at markers, and
forward next/step/finish/continue inside the history. At each point a probe
prints the frame, `info args`, `info locals`, every global, the general
registers (with eflags, fs_base, gs_base), xmm0/xmm1, `x/8xg $sp`, the
heap and mmap words behind g_heap/g_map and `bt`; the motion's own output
(`finish`'s "Value returned") is compared too. One check per point and kind.

record full itself is checked first: a live native run (no recording)
stops at each marker that a reverse-continue reaches, and record full's
point there must equal it. It does, except for r8-r15: gdb 13's record
full does not undo every write to them (NOTE lines say which). So at those
points btstub's registers are compared with the live stop, and at the
other past points r8-r15 are not compared.

The two runs are made comparable: no startup shell, exactly the same
environment on both sides (GLIBC_TUNABLES, which keeps glibc off the
AVX-512 string functions record full cannot record, LD_BIND_NOW, so no
lazy binding runs in the recorded range, and the sanitizer options),
address space randomization off on both. Live at record_start and at
finish_line, registers and stack equal. r11 (the flags a system call
saved) is compared without the trap flag, value history numbers not at all.

Values that differ between two runs (the vDSO's and the system calls'
clocks, rdtsc, getpid, glibc's stack canary) are read at the live end of
each run and replaced by <TIME>, <TSC>, <PID>, <CANARY> in that run's
transcript only: so a past point matches the reference only if it shows
exactly the value its own program got (a value read afresh by re-executing
would stay a number and differ). Should a varying value also be the text
of a fixed number in the other run (a coincidence), the runs are repeated.

After each run no process of the program may be left.

    python3 test_past_values.py [--server gdbserver] [--self] [--opt O0|O2]
                                [--point N] [-v]

--point N prints point N's reference and subject probes side by side;
--opt runs one build only; -v prints every gdb transcript.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys

import harness
from harness import (GDB_PRELUDE, MARK, GdbResult, _session_members, gdb_path, kill_session,
                     marker_line, program, run_test, server_path, unified_diff, wait_until)

SOURCE = "past_values.c"
TUNABLES = ("glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX2,-AVX,-EVEX,-BMI1,-BMI2,"
            "-LZCNT,-MOVBE,-RTM,-ERMS,-FSRM,-AVX_Fast_Unaligned_Load")
ENVIRONMENT = [("GLIBC_TUNABLES", TUNABLES), ("LD_BIND_NOW", "1")]

GLOBALS = ["g_step", "g_sum", "g_pid", "g_long_loop", "g_file_buf", "g_file_len", "g_pipe_buf",
           "g_pipe_len", "g_early_ts", "g_ts", "g_tv", "g_tsc", "g_heap", "g_map", "g_signals", "g_last_signal",
           "g_short_loop"]
# Named one by one: `info registers` would add k0-k7 natively (gdb's AVX-512
# description) and btstub describes no AVX-512 state; xmm as v2_int64 for
# the same reason (the AVX-512 description adds bfloat16/half views).
REGISTERS = ("rax rbx rcx rdx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15 rip eflags "
             "cs ss ds es fs gs fs_base gs_base")
PROBE_COMMANDS = (["frame", "info args", "info locals"] + ["print %s" % g for g in GLOBALS] +
                  ["info registers " + REGISTERS, "print/x $xmm0.v2_int64", "print/x $xmm1.v2_int64",
                   "x/8xg $sp", "x/4xw g_heap", "x/4xw g_map", "bt"])
# The kinds each point is checked by, and the commands each covers.
KINDS = [("frame", ["frame"]), ("args", ["info args"]), ("locals", ["info locals"]),
         ("globals", ["print %s" % g for g in GLOBALS]), ("registers", ["info registers " + REGISTERS]),
         ("xmm", ["print/x $xmm0.v2_int64", "print/x $xmm1.v2_int64"]), ("stack", ["x/8xg $sp"]),
         ("heap and mmap", ["x/4xw g_heap", "x/4xw g_map"]), ("bt", ["bt"])]

# One gdb command per probe: prints each command's output under a header,
# errors included (gdb's text, as the command would print it).
PROBE_CODE = """
def past_probe(tag):
  print('@@POINT %s' % tag)
  for cmd in COMMANDS:
    print('@@CMD %s' % cmd)
    try:
      out = gdb.execute(cmd, to_string=True)
    except gdb.error as e:
      out = 'error: %s\\n' % e
    print(out, end='')
  print('@@END')

def past_varying():
  v = gdb.parse_and_eval
  values = [int(v(e)) for e in ('g_early_ts.tv_sec', 'g_early_ts.tv_nsec', 'g_ts.tv_sec', 'g_ts.tv_nsec', 'g_tv.tv_sec', 'g_tv.tv_usec', 'g_tsc', 'g_pid')]
  canary = int(v('*(unsigned long *)($fs_base + 0x28)'))
  print('@@VARY time=%d,%d,%d,%d,%d,%d tsc=%d pid=%d canary=%d' % tuple(values + [canary]))
""".replace("COMMANDS", repr(PROBE_COMMANDS))
PROBE_DEFINITION = "python exec(%r)" % PROBE_CODE

NO_HISTORY = "No more reverse-execution history."


def walk():
    """(motion commands, tag) for each point after the live one, in order."""
    def to(mark, motion="reverse-continue"):
        return ["break %s:%d" % (SOURCE, marker_line(SOURCE, mark)), motion, "delete"]
    return [
        (["reverse-step"], "reverse-step"),
        (["reverse-next"], "reverse-next"),
        (["reverse-step"], "reverse-step into short_loop"),
        (["reverse-finish"], "reverse-finish"),
        (to("short_body"), "reverse-continue to short_body"),
        (["reverse-stepi"], "reverse-stepi"),
        (["reverse-stepi"], "reverse-stepi"),
        (to("handler_body"), "reverse-continue to handler_body"),
        (["reverse-finish"], "reverse-finish from the handler"),
        (to("heap_done"), "reverse-continue to heap_done"),
        (["finish"], "finish from use_heap"),
        (to("tsc_taken"), "reverse-continue to tsc_taken"),
        (["finish"], "finish from read_tsc"),
        (to("time_taken"), "reverse-continue to time_taken"),
        (["reverse-finish"], "reverse-finish from take_time"),
        (to("pipe_read"), "reverse-continue to pipe_read"),
        (["next"], "next over read"),
        (["step"], "step"),
        (to("file_read"), "reverse-continue to file_read"),
        (["reverse-next"], "reverse-next over lseek"),
        (["next", "next"], "next, next"),
        (to("mix_body", "continue"), "continue to mix_body"),
        (["finish"], "finish from mix"),
        (["continue"], "continue to the end of the history"),
    ]


def script(start):
    """gdb commands after the connection; start: the commands that get to
    record_start and start recording there. Returns (commands, points),
    each point (tag, indexes of its motion commands, index of its probe)."""
    cmds = ["set sysroot /", "handle SIGUSR1 nostop noprint pass", PROBE_DEFINITION,
            "break %s:%d" % (SOURCE, marker_line(SOURCE, "record_start"))] + start
    cmds += ["python past_probe('start')", "delete",
             "break %s:%d" % (SOURCE, marker_line(SOURCE, "finish_line")), "continue", "delete",
             "python past_varying()"]
    points = [("live at finish_line", [], len(cmds))]
    cmds.append("python past_probe(0)")
    for motions, tag in walk():
        first = len(cmds)
        cmds += motions
        points.append((tag, list(range(first, len(cmds))), len(cmds)))
        cmds.append("python past_probe(%d)" % (len(points) - 1))
    return cmds, points


# The points reached by reverse-continue to a marker, with the marker's
# hits up to there: a live run stopping there gives the truth for them.
TRUTH = [("file_read", 1), ("pipe_read", 1), ("time_taken", 1), ("tsc_taken", 1), ("heap_done", 1),
         ("handler_body", 2), ("short_body", 2000)]


def truth_script():
    """Native, no recording: stops live at each TRUTH marker in turn."""
    cmds = ["set sysroot /", "handle SIGUSR1 nostop noprint pass", PROBE_DEFINITION,
            "break %s:%d" % (SOURCE, marker_line(SOURCE, "record_start"))] + native_start()[:-1]
    cmds += ["delete"]
    probes = {}
    for mark, hits in TRUTH:
        cmds += ["tbreak %s:%d" % (SOURCE, marker_line(SOURCE, mark))]
        if hits > 1:
            cmds += ["ignore $bpnum %d" % (hits - 1)]
        cmds += ["continue"]
        probes[mark] = len(cmds)
        cmds.append("python past_probe('truth %s')" % mark)
    cmds.append("python past_varying()")
    return cmds, probes


def environment_args():
    # The sanitizer options run_test sets reach btstub (built with
    # BTSTUB_SANITIZE its reports go to the test's log directory), so the
    # program on both sides gets them as well.
    extra = [(k, os.environ[k]) for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS") if k in os.environ]
    return ["%s=%s" % kv for kv in ENVIRONMENT + extra]


def native_start():
    return (["set startup-with-shell off", "unset environment"] +
            ["set environment " + kv for kv in environment_args()] + ["run", "record full"])


def run_side(mode, prog):
    """Runs one side; returns (GdbResult, leftover processes of the program)."""
    target = None
    if mode == "truth":
        commands, points = truth_script()
    elif mode == "native":
        start = native_start()
    elif mode == "gdbserver":
        target = "| " + shlex.join(["env", "-i"] + environment_args() +
                                   [server_path("gdbserver"), "--no-startup-with-shell", "-", prog])
        start = ["continue", "record full"]
    else:
        target = "| " + shlex.join(["env", "-i"] + environment_args() +
                                   [server_path("btstub"), "--no-startup-with-shell", "--record", "-", prog])
        start = ["continue"]
    if mode != "truth":
        commands, points = script(start)
    result, leftover_desc = run_commands(prog, target, commands)
    result.points = points
    return result, leftover_desc


def run_commands(prog, target, commands):
    """gdb in batch mode on `prog` (over `target` when given), each command
    marked; returns (GdbResult, leftover processes of the program)."""
    argv = [gdb_path(), "-batch", "-nx", "-q", "-iex", "set debuginfod enabled off"]
    for line in GDB_PRELUDE:
        argv += ["-ex", line]
    argv.append(prog)
    if target:
        argv += ["-ex", "target remote " + target]
    for i, cmd in enumerate(commands):
        argv += ["-ex", "echo %s %d\\n" % (MARK, i), "-ex", cmd]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            env=harness.gdb_environment())
    try:
        out, _ = proc.communicate(timeout=240)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        kill_session(proc.pid)
        out, _ = proc.communicate()
        status = None
    # gdb is gone: whatever it started (the server, the program, copies of
    # the program) must end on its own.
    wait_until(lambda: not _session_members(proc.pid) and not program_processes(prog), 10.0)
    leftover = sorted(set(_session_members(proc.pid)) | set(program_processes(prog)))
    leftover_desc = [describe(pid) for pid in leftover]
    kill_session(proc.pid)
    for pid in program_processes(prog):
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    # A reference run that shows gdb 13.1's XSAVE fault raises
    # BrokenReference here (reference.py).
    result = harness.checked_result(argv, commands, out.decode("utf-8", "replace"), status, target)
    return result, leftover_desc


def program_processes(prog):
    real = os.path.realpath(prog)
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink("/proc/%s/exe" % entry) == real:
                    pids.append(int(entry))
            except OSError:
                pass
    return pids


def describe(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return "%d %s" % (pid, f.read().replace(b"\0", b" ").decode(errors="replace"))
    except OSError:
        return "%d (gone)" % pid


# --------------------------------------------------------------------------
# Reading the transcripts

def varying(result):
    """{category: set of values} read at the live end, or None."""
    m = re.search(r"^@@VARY time=([\d,]+) tsc=(\d+) pid=(\d+) canary=(\d+)$", result.output, re.M)
    if not m:
        return None
    times = [int(x) for x in m.group(1).split(",")]
    tsc, pid, canary = int(m.group(2)), int(m.group(3)), int(m.group(4))
    if 0 in times or tsc == 0:
        return None  # the program did not get that far
    # rdtsc gives the TSC in two halves (edx:eax), which registers show;
    # read_tsc's locals lo and hi share one stack word (hi first).
    lo, hi = tsc & 0xffffffff, tsc >> 32
    # The stack protector's canary (glibc's own functions leave it on the
    # stack) is random in each run, like AT_RANDOM it comes from.
    return {"<TIME>": set(times), "<TSC>": {tsc, lo, hi, lo << 32 | hi}, "<PID>": {pid},
            "<CANARY>": {canary}}


def value_patterns(v):
    # Not after a backslash: gdb's octal escapes in strings ("\377"); not
    # after a dollar: value history numbers ("$412 = 7"), which the TSC's
    # high half (a few hundred) matched.
    return [r"(?<![\w.\\$])%d(?![\w.])" % v, r"(?i)0x0*%x(?![\w.])" % v]


def tokenise(text, vary):
    for token, values in vary.items():
        for v in sorted(values, reverse=True):
            for p in value_patterns(v):
                text = re.sub(p, token, text)
    return text


def coincidences(vary_a, vary_b, text_b):
    """Values varying in run a (not b) that appear as text in run b."""
    hits = []
    all_b = set().union(*vary_b.values()) if vary_b else set()
    for values in vary_a.values():
        for v in values - all_b:
            if any(re.search(p, text_b) for p in value_patterns(v)):
                hits.append(v)
    return hits


def r11_flags(m):
    # After a system call r11 holds the flags the program had there; the
    # trap flag in them says only how the tracer stepped over the call
    # (record full single-steps it), not what the program computed.
    v = int(m.group(2), 16)
    if v & ~0xfff or not v & 0x2:
        return m.group(0)
    v &= ~0x100
    return "%s%-18s %d" % (m.group(1), "0x%x" % v, v)


def normalise(text):
    text = re.sub(r"process \d+", "process PID", text)
    text = re.sub(r"LWP \d+", "LWP TID", text)
    text = re.sub(r"^(r11 +)0x([0-9a-f]+) +\d+$", r11_flags, text, flags=re.M)
    # Value history numbers: a print that fails at one point (no value)
    # would shift every later one; each point is checked on its own.
    text = re.sub(r"\$\d+ = ", "$N = ", text)
    # `info registers` pads its columns to the value's width: a token in
    # place of a value moves the next column.
    text = re.sub(r"^([a-z][a-z0-9_]*) +(\S+) +(.*)$", r"\1 \2 \3", text, flags=re.M)
    return text


# gdb 13's record full does not undo every write to r8-r15 (going back
# over them the register keeps a later value: seen for r8, r10, r12-r15,
# compare the live stops in check_reference). Where no live stop gives the
# truth, those registers are not compared.
UNRELIABLE = re.compile(r"^(r(?:8|9|1[0-5]) +).*$", re.M)


def mask_unreliable(text):
    return UNRELIABLE.sub(r"\1<not compared: record full cannot undo it>", text)


def probe_of(result, index):
    """{command: output} of the probe command at index."""
    text = result.of(index)
    cmds = {}
    for part in text.split("@@CMD ")[1:]:
        head, _, body = part.partition("\n")
        cmds[head] = body.split("@@END")[0]
    return cmds


def motion_text(result, indexes):
    return "".join("(gdb) %s\n%s" % (result.commands[i], result.of(i)) for i in indexes)


def point_view(result, vary, point):
    """{kind: normalised text} of one point, the motion's output as 'motion'."""
    tag, motions, probe = point
    cmds = probe_of(result, probe)
    view = {"motion": motion_text(result, motions)}
    for kind, kind_cmds in KINDS:
        view[kind] = "".join("(gdb) %s\n%s" % (c, cmds.get(c, "<not run>\n")) for c in kind_cmds)
    return {k: normalise(tokenise(v, vary)) for k, v in view.items()}


def side_by_side(ref, sub, vary_ref, vary_sub, n):
    point = ref.points[n]
    a, b = point_view(ref, vary_ref, point), point_view(sub, vary_sub, sub.points[n])
    lines = ["=== point %d: %s" % (n, point[0])]
    for kind in a:
        lines.append("--- %s: reference" % kind)
        lines.append(a[kind].rstrip("\n"))
        lines.append("--- %s: subject%s" % (kind, " (same)" if a[kind] == b[kind] else ""))
        if a[kind] != b[kind]:
            lines.append(b[kind].rstrip("\n"))
    return "\n".join(lines)


# --------------------------------------------------------------------------

OPTIONS = argparse.Namespace(self_check=False, opt=None, point=None)


def run_pair(mode, prog):
    for attempt in range(3):
        ref, ref_left = run_side("native", prog)
        sub, sub_left = run_side(mode, prog)
        vr, vs = varying(ref), varying(sub)
        if vr is None or vs is None:
            break
        if not coincidences(vr, vs, sub.output) and not coincidences(vs, vr, ref.output):
            break
        print("NOTE a varying value is also a fixed number in the other run: running both again",
              flush=True)
    return ref, ref_left, sub, sub_left


def check_reference(opt, prog, ref, vr, c):
    """record full's points at markers equal a live stop there: the
    reference is right (but r8-r15, see UNRELIABLE). Returns {point:
    registers at the live stop} for those points."""
    truths = {}
    for attempt in range(3):
        truth, left = run_side("truth", prog)
        vt = varying(truth)
        if vt is None or not (coincidences(vt, vr, ref.output) or coincidences(vr, vt, truth.output)):
            break
        print("NOTE a varying value is also a fixed number in the other run: live run again", flush=True)
    c.equal("%s: the live run leaves no process" % opt, [], left)
    if not c.true("%s: the live run reads the varying values" % opt, vt, truth.transcript()):
        return truths
    for mark, _ in TRUTH:
        n = [i for i, p in enumerate(ref.points) if p[0] == "reverse-continue to " + mark][0]
        a = point_view(truth, vt, ("truth", [], truth.points[mark]))
        b = point_view(ref, vr, ref.points[n])
        wrong = [line for line in unified_diff(a["registers"].splitlines(), b["registers"].splitlines())
                 .splitlines() if line.startswith("+r")]
        if wrong:
            print("NOTE %s: record full at %s gets %s wrong (the live stop is the reference)" %
                  (opt, mark, ", ".join(line[1:].split()[0] for line in wrong)), flush=True)
            harness.live_fallback()
        a["registers"], b["registers"] = mask_unreliable(a["registers"]), mask_unreliable(b["registers"])
        same = all(a[k] == b[k] for k, _ in KINDS)
        diff = "\n".join(unified_diff(a[k].splitlines(), b[k].splitlines(), "live", "record full")
                         for k, _ in KINDS if a[k] != b[k])
        c.true("%s: record full at %s equals a live stop there (but r8-r15)" % (opt, mark), same, diff)
        truths[n] = point_view(truth, vt, ("truth", [], truth.points[mark]))["registers"]
    return truths


def check(mode, opt, c):
    # Absolute, as native gdb runs it: the path is on the program's stack.
    prog = os.path.abspath(program("past_values", opt))
    ref, ref_left, sub, sub_left = run_pair(mode, prog)
    vr, vs = varying(ref), varying(sub)
    c.equal("%s: record full leaves no process" % opt, [], ref_left)
    c.equal("%s: %s leaves no process" % (opt, mode), [], sub_left)
    if not c.true("%s: record full reads the varying values at the live end" % opt, vr, ref.transcript()):
        return
    if not c.true("%s: %s reads the varying values at the live end" % (opt, mode), vs, sub.transcript()):
        return
    # The reference itself must be sane: every value known in the past.
    all_ref = "".join(ref.of(p[2]) for p in ref.points)
    c.not_contains("%s: record full shows every value" % opt, all_ref, "<unavailable>")
    errors = [line for line in all_ref.splitlines() if line.startswith("error: ") and
              line != "error: Cannot access memory at address 0x0"]  # g_heap, g_map not yet set
    c.equal("%s: record full reads every register and byte" % opt, [], errors)
    c.true("%s: record full probed every point" % opt,
           all("@@END" in ref.of(p[2]) for p in ref.points), ref.transcript())
    tsc_point = [i for i, p in enumerate(ref.points) if p[0] == "finish from read_tsc"][0]
    c.matches("%s: record full's past shows the recorded TSC" % opt,
              point_view(ref, vr, ref.points[tsc_point])["motion"], r"Value returned is \$N = <TSC>")
    truths = check_reference(opt, prog, ref, vr, c)
    start = ref.commands.index("python past_probe('start')")
    sub_start = sub.commands.index("python past_probe('start')")
    c.equal("%s: %s runs the same script from record_start" % (opt, mode), ref.commands[start:],
            sub.commands[sub_start:])
    for kind in ("registers", "stack"):
        a = point_view(ref, vr, ("start", [], start))[kind]
        b = point_view(sub, vs, ("start", [], sub_start))[kind]
        c.equal("%s: live at record_start: %s" % (opt, kind), a, b)
    if OPTIONS.point is not None:
        print(side_by_side(ref, sub, vr, vs, OPTIONS.point))
    for n, point in enumerate(ref.points):
        a, b = point_view(ref, vr, point), point_view(sub, vs, sub.points[n])
        if n in truths and mode == "btstub":
            a["registers"] = truths[n]
        elif n != 0:  # point 0 is live
            a["registers"], b["registers"] = mask_unreliable(a["registers"]), mask_unreliable(b["registers"])
        for kind in a:
            label = "%s: point %d (%s): %s" % (opt, n, point[0], kind)
            if a[kind] == b[kind]:
                c.true(label, True)
            else:
                c.true(label, False, unified_diff(a[kind].splitlines(), b[kind].splitlines(),
                                                  "record full", mode))
    c.equal("%s: history runs out as often" % opt, ref.output.count(NO_HISTORY),
            sub.output.count(NO_HISTORY), sub.transcript())


def main(args, c):
    mode = "native" if OPTIONS.self_check else args.server
    for opt in ([OPTIONS.opt] if OPTIONS.opt else ["O0", "O2"]):
        check(mode, opt, c)


if __name__ == "__main__":
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--self", dest="self_check", action="store_true",
                     help="compare record full with a second record full run")
    own.add_argument("--opt", choices=["O0", "O2"], help="one build only")
    own.add_argument("--point", type=int, help="print point N of both sides")
    OPTIONS, rest = own.parse_known_args()
    sys.argv = sys.argv[:1] + rest
    run_test("test_past_values", main)
