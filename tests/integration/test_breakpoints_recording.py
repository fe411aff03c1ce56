#!/usr/bin/env python3
"""Recording never changes which breakpoints a program hits.

The software tracer runs code between its own stops without the client
seeing it: with int3 trace stops it emulates the transfer under its int3
and may run whole trees of branches without a stop of its own
(stub/tracing/software_tracer_lookahead.cc). A breakpoint on any target of such a
transfer must still stop the program, whenever it was inserted.

tests/programs/block_boundaries.c has every kind of block boundary:
conditional branches taken and not, jmp, direct and indirect calls,
returns, a jump table and loops. The targets are read from its disassembly
(objdump): each direct jump or call target, each instruction after a
transfer (fall-throughs, return addresses, the cases of the jump table at
-O0) and each function's entry. For each program build (-O0, -O2) and each
`--trace-stops` mode (int3, debugreg, step), gdb puts a breakpoint on every
target

1. before the program starts, under `--record`;
2. before recording starts (`monitor record start` at main);
3. after recording starts (`monitor record start` before main is reached);
4. between stops: half of them at main, the rest one more before each
   `continue`;
5. before gdb's own `record btrace` (int3 only: the per-thread way in);

and then continues to the program's exit. Each run's sequence of stops
(breakpoint numbers, with the program's exit) must equal the sequence of
the same commands on btstub without recording, and that one gdbserver's.
Also the issue's own case (`break 7` after stopping at line 4, the target
of a `jne`) and `next` over calls, whose step-resume breakpoints sit on
return addresses, compared the same way.

Under the sanitizers each scenario runs under two of the modes (the
default and one other, turn about) and one seed.

The randomised version (--seeds N, default 2 in CI) puts random subsets of
the targets in at random stops, fixed seeds per run.

    python3 test_breakpoints_recording.py [--seeds N] [--first-seed S] [-v]
"""

import os
import random
import re
import shlex
import subprocess
import sys

import harness
from harness import program, run_gdb, run_test, server_path

def modes():
    """Every --trace-stops mode this machine runs: debugreg only where debug
    registers trap (btstub --probe; elsewhere btstub refuses it)."""
    if harness.debug_registers_trap():
        return ["translate", "int3", "debugreg", "step"]
    print("SKIP --trace-stops=debugreg: debug registers never trap here", flush=True)
    return ["translate", "int3", "step"]


MODES = modes()
FUNCTION = re.compile(r"^[0-9a-f]+ <((?:bb_|main)[^>]*)>:$")
INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
DIRECT = re.compile(r"^[0-9a-f]+ <((?:bb_|main)[^+>]*)(?:\+0x([0-9a-f]+))?>$")
STOP = re.compile(r"^(?:Breakpoint|Temporary breakpoint) (\d+), ")
EXIT = re.compile(r"^\[Inferior 1 \(process \d+\) exited (normally|with code \d+)\]")
TRANSFER = ("j", "call", "ret", "loop")


def boundary_targets(path):
    """`'function'+offset` expressions for every block boundary target of
    the bb_ functions and main, in address order."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path],
                         capture_output=True, text=True, check=True).stdout
    starts = {}     # function -> start address
    targets = set()  # (function, offset)
    current = None
    after_transfer = False
    for line in out.splitlines():
        m = FUNCTION.match(line)
        if m:
            current = m.group(1)
            after_transfer = False
            continue
        if not line.strip():
            current = None
            continue
        m = INSN.match(line)
        if current is None or not m:
            continue
        addr = int(m.group(1), 16)
        starts.setdefault(current, addr)
        mnemonic, operand = m.group(2), m.group(3).strip()
        if mnemonic in ("notrack", "bnd", "rep", "repz"):
            mnemonic, _, operand = operand.partition(" ")
            operand = operand.strip()
        offset = addr - starts[current]
        if after_transfer or offset == 0:
            targets.add((current, offset))
        after_transfer = mnemonic.startswith(TRANSFER)
        d = DIRECT.match(operand) if after_transfer else None
        if d:
            targets.add((d.group(1), int(d.group(2) or "0", 16)))
    # A target in a function we did not see the start of cannot be named.
    named = [(f, o) for (f, o) in targets if f in starts]
    named.sort(key=lambda t: starts[t[0]] + t[1])
    return ["*'%s'+%d" % (f, o) for (f, o) in named]


def stops_of(result):
    """The stops gdb reported, in order: breakpoint numbers, and the exit."""
    seq = []
    for line in result.output.splitlines():
        m = STOP.match(line)
        if m:
            seq.append("bp%s" % m.group(1))
        m = EXIT.match(line)
        if m:
            seq.append("exit")
    return seq


def run(kind, prog, options, commands, always_inserted=True):
    argv = [server_path(kind)] + (list(options) if kind == "btstub" else []) + ["-", prog]
    # Breakpoints stay inserted while the program is stopped: without it
    # gdb removes and reinserts every one at each stop, which costs the
    # test most of its time and changes nothing the tracer sees at a resume.
    r = run_gdb(commands, prog, "| " + shlex.join(argv), timeout=240,
                extra_init=["set breakpoint always-inserted on"] if always_inserted else [])
    return r


def continues(n):
    return ["continue"] * n


def scenarios(targets, n_continue):
    """name -> (record option, commands with RECORD where recording starts)."""
    brk = ["break " + t for t in targets]
    half, rest = brk[0::2], brk[1::2]
    between = []
    for i in range(n_continue):
        if i < len(rest):
            between.append(rest[i])
        between.append("continue")
    return {
        "from the start (--record)": (True, brk + continues(n_continue)),
        "before recording starts": (False, ["break main", "continue"] + brk + ["RECORD"] + continues(n_continue)),
        "after recording starts": (False, ["RECORD", "break main", "continue"] + brk + continues(n_continue)),
        "between stops": (False, ["RECORD", "break main", "continue"] + half + between),
    }


def with_recording(commands, how):
    out = []
    for cmd in commands:
        if cmd == "RECORD":
            if how is not None:
                out.append(how)
        else:
            out.append(cmd)
    return out


def check_program(c, prog, modes, scenario_names=None):
    targets = boundary_targets(prog)
    name = os.path.basename(prog)
    c.true("%s: block boundary targets found (%d)" % (name, len(targets)), len(targets) >= 30)
    # How many continues the program needs, from a plain run (which is
    # also the first scenario's run without recording).
    probe = run("btstub", prog, [], ["break " + t for t in targets] + continues(1000))
    n_continue = len(stops_of(probe)) + 2
    c.true("%s: the program stops at many targets and exits" % name,
           n_continue > 40 and "exit" in stops_of(probe), probe.transcript()[-3000:])
    for i, (scenario, (from_start, commands)) in enumerate(scenarios(targets, n_continue).items()):
        if scenario_names is not None and scenario not in scenario_names:
            continue
        plain = probe if from_start else run("btstub", prog, [], with_recording(commands, None))
        expected = stops_of(plain)
        if scenario == "between stops":
            reference = run("gdbserver", prog, [], with_recording(commands, None))
            c.equal("%s, %s: btstub without recording stops as gdbserver" % (name, scenario),
                    stops_of(reference), expected, plain.transcript()[-3000:])
        for mode in harness.case_modes(modes, i):
            options = ["--trace-stops=" + mode] + (["--record"] if from_start else [])
            r = run("btstub", prog, options, with_recording(commands, "monitor record start"))
            c.equal("%s, %s, --trace-stops=%s: same stops as without recording"
                    % (name, scenario, mode), expected, stops_of(r), r.transcript()[-4000:])
    return targets, n_continue


def check_record_btrace(c, prog, targets, n_continue):
    """gdb's own record btrace (per-thread tracing), int3 trace stops."""
    commands = ["break main", "continue"] + ["break " + t for t in targets] + continues(n_continue)
    plain = run("btstub", prog, [], commands)
    traced = run("btstub", prog, ["--trace-stops=int3"], commands[:2] + ["record btrace"] + commands[2:])
    c.equal("%s, record btrace: same stops as without recording" % os.path.basename(prog),
            stops_of(plain), stops_of(traced), traced.transcript()[-4000:])


def check_random(c, prog, targets, n_continue, seeds):
    for seed in seeds:
        rng = random.Random(seed)
        chosen = rng.sample(targets, rng.randint(1, len(targets)))
        before = [t for t in chosen if rng.random() < 0.3]
        later = [t for t in chosen if t not in before]
        at_stop = {}
        for t in later:
            at_stop.setdefault(rng.randrange(0, 6), []).append("break " + t)
        mode = MODES[(seed - 1) % len(MODES)]
        commands = ["RECORD"] if rng.random() < 0.5 else []
        commands += ["break " + t for t in before] + ["break main", "continue"]
        if "RECORD" not in commands:
            commands.append("RECORD")
        for i in range(n_continue):
            commands += at_stop.get(i, []) + ["continue"]
        plain = run("btstub", prog, [], with_recording(commands, None))
        r = run("btstub", prog, ["--trace-stops=" + mode], with_recording(commands, "monitor record start"))
        c.equal("%s, seed %d (%d breakpoints, --trace-stops=%s): same stops as without recording"
                % (os.path.basename(prog), seed, len(chosen), mode),
                stops_of(plain), stops_of(r), r.transcript()[-4000:])


def from_first_command(result):
    lines = harness.normalise(result.output)
    return lines[lines.index(harness.MARK + " 0"):] if harness.MARK + " 0" in lines else lines


def check_issue_case(c):
    """The issue's report: stopped at line 4, `break` on the jne's target
    (line 7), continue; and `next` over calls (step-resume breakpoints)."""
    prog = program("block_boundaries")
    src = "block_boundaries.c"
    target_line = harness.marker_line(src, "jne_target")
    commands = ["break main", "continue", "break %d" % target_line, "continue",
                "next", "next", "next", "step", "next", "next", "finish", "next", "next"]
    plain = run("btstub", prog, [], commands)
    reference = run("gdbserver", prog, [], commands)
    c.equal("issue case: btstub without recording answers as gdbserver",
            from_first_command(reference), from_first_command(plain),
            plain.transcript())
    for mode in MODES:
        r = run("btstub", prog, ["--record", "--trace-stops=" + mode], commands)
        c.equal("issue case, --record --trace-stops=%s: break on a jne's target and `next` as without recording"
                % mode, from_first_command(plain), from_first_command(r),
                r.transcript())


def main(args, c):
    if args.server != "btstub":
        c.true("compares btstub with and without recording (skipped for %s)" % args.server, True)
        return
    check_issue_case(c)
    # Every scenario under every mode at -O0; the int3 tracer (the one that
    # runs code without stops of its own) at -O2 too.
    prog = program("block_boundaries", "O0")
    targets, n_continue = check_program(c, prog, MODES)
    check_record_btrace(c, prog, targets, n_continue)
    seeds = 1 if harness.sanitized() else SEEDS
    check_random(c, prog, targets, n_continue, range(FIRST_SEED, FIRST_SEED + seeds))
    check_program(c, program("block_boundaries", "O2"), ["int3"], ["from the start (--record)", "between stops"])


SEEDS = 2
FIRST_SEED = 1

if __name__ == "__main__":
    argv = sys.argv[1:]
    for flag in ("--seeds", "--first-seed"):
        if flag in argv:
            i = argv.index(flag)
            value = int(argv[i + 1])
            del argv[i:i + 2]
            if flag == "--seeds":
                SEEDS = value
            else:
                FIRST_SEED = value
    sys.argv[1:] = argv
    run_test("test_breakpoints_recording", main)
