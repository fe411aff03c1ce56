#!/usr/bin/env python3
"""The translating tracer records csmith's random programs as the ptrace
tracer does, and they behave as they do natively.

For each seed below, csmith 2.3.0 writes its program (csmith_programs.py:
csmith's default options) into a temporary directory, gcc builds it at
-O0 and -O2 (one seed at -O2 only; each at its last level alone under
the sanitizers), and it runs natively, then under
`btstub --record` with `--trace-stops=int3` (the reference) and
`--trace-stops=translate`, from the first instruction to the stop before
the exit, as in
test_translate_differential.py (translate_compare.py): the same stops, the
same branch trace as gdb reads it (vDSO blocks aside), the whole run held,
over 90% of the branches logged by translated code (so the test cannot
pass with the cache unused, nor with a hot block left to int3s); and both
runs print the checksum the native run prints.

Each seed's program must hash to the value below: another csmith version
(or other options) writes other programs from the same seeds, which may
run for minutes, and would no longer test what these seeds were picked
for. The seeds were picked with tests/tools/csmith_differential.py among
the quick ones whose programs run the most branches of their own (the
int3 run takes about 8 µs a branch); it runs more seeds by hand.

Runs against btstub only (gdbserver has neither --record nor translation).

    python3 test_translate_csmith.py [-v]
"""

import tempfile

import csmith_programs
from harness import run_test, sanitized
from translate_compare import check_same, record

# (seed, sha256 of csmith_SEED.c as csmith 2.3.0 writes it with OPTIONS,
# levels): blocks recorded at each level (the C library's start-up and the
# checksum make about 17,000 at -O0 and 12,700 at -O2).
SEEDS = [
    (115, "10b2d40cd30d8add54514d73ed0777b7ef7e5283f6da45d302962a27a1bebaa5", ("O0", "O2")),  # 182,004 / 29,558
    (129, "192dbf2c357b6260faa68108e4e968c0110a5ff58f95d221ac2dad9fad737e5e", ("O0", "O2")),  # 153,972 / 26,810
    (5026, "a379fea383e51b86f3cc7a04b7936dfc1dbbf2009a76fad293f282be7afd4ca6", ("O0", "O2")),  # 169,080 / 28,323
    (5027, "07087c8fdf7e74a42231aef4623659ecb7682a3b2074323716588fafad5f6108", ("O0", "O2")),  # 97,868 / 21,672
    (121, "9a66948f7f097cb1e4df41312909f68e797ff731867f5cbeb159076fefc8d289", ("O0", "O2")),  # 75,305 / 19,162
    # Its -O2 loop reads vector constants with movdqa (0x66 prefix): left to
    # int3s it dropped to 65% translated. -O0 makes 1.4 million branches.
    (30004, "3a0b285be60e6b5bc27bad2db2878382b11906213f7abc8606b89f66e5254e0b", ("O2",)),  # 48,006
]
# csmith's programs are plain user code: only the C library's system calls
# (a few dozen blocks) run under int3s.
MIN_SHARE = 0.9


def seed_levels(i, levels):
    """The levels seed i runs at: all of them; under the sanitizers its last
    alone (-O2 makes a fifth to a sixth of -O0's branches), so that every
    seed's program still runs in CI's sanitizer stage within its time.
    test_translate_differential runs -O0 code there."""
    if not sanitized():
        return levels
    return levels[-1:]


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub records with --record (skipped for %s)" % args.server, True)
        return
    why = csmith_programs.missing()
    c.true("csmith is installed", why is None, why or "")
    if why:
        return
    c.equal("csmith's version", csmith_programs.VERSION, csmith_programs.version())
    with tempfile.TemporaryDirectory(prefix="btstub-csmith-") as directory:
        for i, (seed, digest, levels) in enumerate(SEEDS):
            source, got_digest = csmith_programs.generate(seed, directory)
            if not c.equal("seed %d: csmith writes the program the seed was picked for" % seed,
                           digest, got_digest):
                continue
            for opt in seed_levels(i, levels):
                exe = csmith_programs.build(source, opt)
                label = "csmith_%d_%s" % (seed, opt)
                status, out = csmith_programs.native_run(exe)
                native = csmith_programs.checksum(out)
                c.true("%s: the native run prints its checksum" % label, status == 0 and native, out)
                ref, got = record(exe, [], "int3"), record(exe, [], "translate")
                check_same(c, label, ref, got, min_blocks=10000, min_share=MIN_SHARE)
                for mode, run in (("int3", ref), ("translate", got)):
                    c.equal("%s: the %s run prints the native checksum" % (label, mode), native,
                            csmith_programs.checksum(run["stdout"]), run["stdout"])


if __name__ == "__main__":
    run_test("test_translate_csmith", main)
