#!/usr/bin/env python3
"""Runs random csmith programs through the translate-vs-int3 comparison.

For each of N seeds (from --first-seed on, default a random one) this makes
csmith's program (tests/integration/csmith_programs.py: the options of
test_translate_csmith.py), builds it at -O0 and -O2, runs it natively, then
records it under `btstub --record --trace-stops=translate` and
`--trace-stops=int3` from its first instruction to its held exit, as
test_translate_csmith.py does, and prints one line per seed and level:

    seed 17 O2: same (41,230 blocks, 97% by translated code)
    seed 18 O0: skipped: runs over 1.0 s natively
    seed 19 O0: DIFFERS: ...

A difference prints the first branch (oldest first) where the traces part,
with a few blocks before it, each as address, function+offset (addr2line)
and mapping; the program is kept (--keep DIR, default a directory printed
at the end) so that the seed can be studied. A seed whose program runs
longer than --native-timeout natively, or whose translate run logs more
than --max-branches (the int3 run takes about 8 µs a branch), is skipped.

    BTSTUB=build/btstub python3 tests/tools/csmith_differential.py 20 [--first-seed S]
        [--options="csmith options"] [--keep DIR]

Exit status 1 when any seed differs. Not a test (random seeds); CI runs
the fixed seeds of test_translate_csmith.py.
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import csmith_programs  # noqa: E402
from harness import HarnessError  # noqa: E402
from translate_compare import (first_difference, held_whole, record, stop_signal,  # noqa: E402
                               strip_thread, translated_share)


def symbol(addr, maps):
    """`addr` as "0x...: function+0xoff (file)" where its mapping names a file."""
    for begin, end, offset, name in maps:
        if begin <= addr < end:
            where = name or "anonymous"
            if name.startswith("/"):
                # addr2line takes file offsets for PIE programs and libraries.
                out = subprocess.run(["addr2line", "-f", "-e", name, hex(addr - begin + offset)],
                                     capture_output=True, text=True).stdout.split("\n")
                if out and out[0] not in ("", "??"):
                    return "%#x %s (%s)" % (addr, out[0], os.path.basename(name))
            return "%#x (%s)" % (addr, where)
    return "%#x (unmapped)" % addr


def describe_difference(ref, got, context=3):
    """The first branch, oldest first, where the two traces part."""
    a, b = ref["blocks"][::-1], got["blocks"][::-1]
    first = first_difference(a, b)
    lines = ["%d vs %d blocks; they part at block %d (oldest first):" % (len(a), len(b), first)]
    for name, blocks, run in (("int3", a, ref), ("translate", b, got)):
        lines.append("  %s:" % name)
        for i in range(max(0, first - context), min(len(blocks), first + context)):
            begin, end = blocks[i]
            mark = ">" if i == first else " "
            lines.append("   %s %d: [%s .. %s]" % (mark, i, symbol(begin, run["maps"]), symbol(end, run["maps"])))
    return "\n".join(lines)


def compare(exe, args):
    """One level of one seed: (verdict, detail lines)."""
    start = time.monotonic()
    status, out = csmith_programs.native_run(exe, args.native_timeout)
    elapsed = time.monotonic() - start
    if status is None or elapsed > args.native_timeout:
        return "skipped: runs over %.1f s natively" % args.native_timeout, ""
    native = csmith_programs.checksum(out)
    if status != 0 or native is None:
        return "skipped: native run ends with status %s, no checksum" % status, ""
    got = record(exe, [], "translate")
    share = translated_share(got["status"])
    if share and share[1] > args.max_branches:
        return "skipped: %d branches (over --max-branches)" % share[1], ""
    ref = record(exe, [], "int3")
    problems = []
    if [strip_thread(r) for r in ref["stops"]] != [strip_thread(r) for r in got["stops"]]:
        problems.append("stops differ: int3 %s, translate %s" % (ref["stops"], got["stops"]))
    if stop_signal(ref["stops"][-1]) != 0:
        problems.append("the int3 run does not end held before the exit: %s" % ref["stops"])
    if not held_whole(ref["status"]):
        problems.append("the int3 trace dropped branches (raise --trace-size)")
    for name, run in (("int3", ref), ("translate", got)):
        if csmith_programs.checksum(run["stdout"]) != native:
            problems.append("%s run prints %r, natively %r" % (name, csmith_programs.checksum(run["stdout"]),
                                                               native))
    if "btstub: " in got["stderr"]:
        problems.append("translate stderr: %s" % got["stderr"][-2000:])
    if first_difference(ref["blocks"], got["blocks"]) is not None:
        problems.append(describe_difference(ref, got))
    if problems:
        return "DIFFERS", "\n".join(problems) + "\ntranslate status:\n" + got["status"]
    logged, total = share if share else (0, 0)
    return ("same (%d blocks, %d%% by translated code)" %
            (len(ref["blocks"]), 100 * logged // max(total, 1))), ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("seeds", type=int, help="how many seeds")
    parser.add_argument("--first-seed", type=int, default=None, help="first seed (default random)")
    parser.add_argument("--opt", default="O0,O2",
                        help="optimisation levels (default O0,O2), each with more gcc flags if wanted: "
                        "--opt='O3 -march=native,Os'")
    parser.add_argument("--native-timeout", type=float, default=1.0, help="seconds (default 1)")
    parser.add_argument("--max-branches", type=int, default=2000000, help="default 2,000,000")
    parser.add_argument("--options", default=None,
                        help="csmith's options instead of the test's, one string: --options=\"--float ...\"")
    parser.add_argument("--keep", default=None, help="directory for the programs (default a new one)")
    args = parser.parse_args()
    why = csmith_programs.missing()
    if why:
        sys.exit("csmith_differential: " + why)
    first = args.first_seed if args.first_seed is not None else random.randrange(1, 1 << 30)
    directory = args.keep or tempfile.mkdtemp(prefix="btstub-csmith-")
    os.makedirs(directory, exist_ok=True)
    options = args.options.split() if args.options is not None else csmith_programs.OPTIONS
    print("csmith %s, options %s; programs in %s" % (csmith_programs.version(), " ".join(options), directory),
          flush=True)
    differing = []
    for seed in range(first, first + args.seeds):
        source, _ = csmith_programs.generate(seed, directory, options)
        for opt in args.opt.split(","):
            exe = csmith_programs.build(source, opt)
            try:
                verdict, detail = compare(exe, args)
            except HarnessError as e:
                verdict, detail = "DIFFERS", "harness: %s" % e
            print("seed %d %s: %s" % (seed, opt, verdict), flush=True)
            if detail:
                print(detail, flush=True)
            if verdict == "DIFFERS":
                differing.append("%d %s" % (seed, opt))
    print("%d seeds from %d: %s" % (args.seeds, first, "differing: " + ", ".join(differing) if differing
                                    else "no difference"))
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
