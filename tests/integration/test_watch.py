#!/usr/bin/env python3
"""Watchpoints and hardware breakpoints (Z1-Z4), each gdb script run against
gdbserver (the reference) and the server under test on the same program;
the normalised transcripts must be equal.

1. Software watchpoints (`set can-use-hw-watchpoints 0`, gdb single-steps;
   tests/programs/watch.c): `watch value` shows old and new value at each
   write (2, then 3).
Where the debug registers trap (`btstub --probe`; elsewhere btstub refuses
Z1-Z4 and these say SKIP):
2. Hardware watchpoints on watch.c: `watch value`, `rwatch other`,
   `awatch sink` at once; every write, read and access stops with the
   right kind, address and old/new values, in the order gdbserver shows.
   One 16-byte store that hits two watchpoints, only the second's value
   changed: the stop names that one (as gdbserver's), and gdb shows it.
3. `hbreak reader` (Z1, `hwbreak` stop) and `bt` there; `info registers
   rip` agrees with the breakpoint's address.
4. Four slots shared by all requests: watch, rwatch, awatch and hbreak
   fit, a fifth (another watch) gets gdb's "Could not insert hardware
   watchpoint" error, as with gdbserver; after deleting it the others fire.
5. Threads created later (tests/programs/threads.c): `watch results[2]`
   and `hbreak work` set in main before any worker exists fire in the
   workers (thread 3's write, each worker's call).
6. A stack slot (tests/programs/watch_stack.c), also with btstub recording
   (`--record`): `watch -l` on the slot stops at each call that pushes its
   return address there, `rwatch -l` at the return that pops it. Before,
   the recording tracer made those calls and returns itself and the
   watchpoint never fired.
7. `hbreak` where a return lands (tests/programs/hbreak_landing.c): on
   the call right after a call and on a call's return site, with btstub
   plain and recording (`--record`, also with int3 and debug-register
   trace stops): each stops once a round, as with gdbserver. Before, a
   recording btstub never stopped there (the tracer took the return, and
   the call it landed on, itself; with debug registers the trace stop's RF
   hid the breakpoint).

    python3 test_watch.py [--server gdbserver] [-v]
"""

import re

from harness import check_same_transcript, debug_registers_trap, program, run_gdb_tcp, run_test

SOFTWARE = [
    "set can-use-hw-watchpoints 0",
    "break touch",
    "continue",
    "delete 1",
    "watch value",
    "continue",
    "continue",
    "delete",
    "continue",
]

HARDWARE = [
    "break main",
    "continue",
    "watch value",
    "rwatch other",
    "awatch sink",
    "info watchpoints",
] + ["continue"] * 8

# One 16-byte store hits both (watch.c, store_pair): only pair[12]
# changes. gdb stops for a write watchpoint only where the value changed,
# so the stop must name pair[12]'s, as gdbserver's does (the highest slot
# hit); naming pair[3]'s (the lowest), btstub let the change go unseen.
PAIR = [
    "break main",        # 0
    "continue",          # 1
    "watch pair[3]",     # 2
    "watch pair[12]",    # 3
    "continue",          # 4
    "delete",            # 5
    "continue",          # 6
]

HBREAK = [
    "hbreak reader",
    "continue",
    "bt",
    "info registers rip",
    "delete",
    "continue",
]

SLOTS = [
    "break main",
    "continue",
    "delete",
    "watch value",
    "rwatch other",
    "awatch sink",
    "hbreak reader",
    "watch *((char *) &other + 4)",
    "continue",
    "delete 6",
    "continue",
    "continue",
    "delete",
    "continue",
]

THREADS = [
    "break main",
    "continue",
    "watch results[2]",
    "hbreak work",
    "continue",
    "continue",
    "continue",
    "print $_thread",
    "continue",
    "delete",
    "continue",
]


def both(c, kind, name, prog, commands, options=("--once",)):
    """Runs the script against gdbserver and `kind` (given `options`);
    checks the transcripts are equal and returns the server-under-test's
    result."""
    runs = {}
    for k in ("gdbserver", kind):
        runs[k] = run_gdb_tcp(k, prog, [], commands, options=("--once",) if k == "gdbserver" else options,
                              timeout=120)
    ref, ref_server = runs["gdbserver"]
    test, server = runs[kind]
    check_same_transcript(c, "%s: same gdb transcript as gdbserver" % name, ref, test, kind)
    c.equal("%s: same program output" % name, ref_server.stdout, server.stdout,
            test.transcript())
    return test


def check_software(c, kind):
    test = both(c, kind, "software watch", program("watch"), SOFTWARE)
    ctx = test.transcript()
    c.contains("software watch: a software watchpoint", test.of(4),
               "Watchpoint 2: value", ctx)
    c.contains("software watch: first write", test.of(5), "Old value = 1", ctx)
    c.contains("software watch: new value 2", test.of(5), "New value = 2", ctx)
    c.contains("software watch: second write", test.of(6), "New value = 3", ctx)
    c.contains("software watch: program exits", test.of(8), "exited normally", ctx)


def check_hardware(c, kind):
    test = both(c, kind, "watch/rwatch/awatch", program("watch"), HARDWARE)
    ctx = test.transcript()
    c.contains("watch is a hardware watchpoint", test.of(2),
               "Hardware watchpoint 2: value", ctx)
    c.contains("rwatch is a hardware read watchpoint", test.of(3),
               "Hardware read watchpoint 3: other", ctx)
    c.contains("awatch is a hardware access watchpoint", test.of(4),
               "Hardware access (read/write) watchpoint 4: sink", ctx)
    stops = "\n".join(test.of(i) for i in range(6, 14))
    for label, pattern in [
            ("write of value: 1 -> 2", r"Hardware watchpoint 2: value\n+Old value = 1\nNew value = 2"),
            ("write of value: 2 -> 3", r"Hardware watchpoint 2: value\n+Old value = 2\nNew value = 3"),
            ("read of other", r"Hardware read watchpoint 3: other\n+Value = 42"),
            ("access of sink: 0 -> 2", r"Hardware access \(read/write\) watchpoint 4: sink\n+Old value = 0\nNew value = 2"),
            ("access of sink: read", r"Hardware access \(read/write\) watchpoint 4: sink\n+Value = 3"),
            ("write of value: 3 -> 10", r"Hardware watchpoint 2: value\n+Old value = 3\nNew value = 10")]:
        c.matches("watch/rwatch/awatch: " + label, stops, pattern, ctx)

    test = both(c, kind, "one store, two watchpoints", program("watch"), PAIR)
    ctx = test.transcript()
    c.matches("one store, two watchpoints: the changed one stops", test.of(4),
              r"Hardware watchpoint 3: pair\[12\]\n+Old value = 0 '\\000'\nNew value = 9 '\\t'", ctx)
    c.contains("one store, two watchpoints: program exits", test.of(6), "exited normally", ctx)

    test = both(c, kind, "hbreak", program("watch"), HBREAK)
    ctx = test.transcript()
    c.contains("hbreak is a hardware breakpoint", test.of(0),
               "Hardware assisted breakpoint 1 at ", ctx)
    c.contains("hbreak hit", test.of(1), "Breakpoint 1, reader () at ", ctx)
    c.matches("hbreak: bt from reader", test.of(2),
              r"#0  reader \(\) at .*\n#1  0x[0-9a-f]+ in main \(\) at ", ctx)
    bp = re.search(r"Hardware assisted breakpoint 1 at (0x[0-9a-f]+)", test.of(0))
    c.matches("hbreak: rip is the breakpoint's address", test.of(3),
              r"^rip +%s " % (bp.group(1) if bp else "BREAKPOINT"), ctx)
    c.contains("hbreak: program exits", test.of(5), "exited normally", ctx)

    test = both(c, kind, "four slots", program("watch"), SLOTS)
    ctx = test.transcript()
    # Which one gdb finds no room for depends on its insertion order.
    c.equal("four slots: one of the five does not fit", 1,
            len(re.findall(r"^Could not insert hardware (watchpoint|breakpoint) \d+\.$",
                           test.of(8), re.M)), ctx)
    c.matches("four slots: after deleting the fifth, the watchpoint fires",
              test.of(10), r"Hardware watchpoint 2: value\n+Old value = 1\nNew value = 2", ctx)
    c.contains("four slots: and the access watchpoint", test.of(11),
               "Hardware access (read/write) watchpoint 4: sink", ctx)
    c.contains("four slots: program exits", test.of(13), "exited normally", ctx)

    test = both(c, kind, "threads", program("threads"), THREADS)
    ctx = test.transcript()
    c.contains("threads: worker 1 hits hbreak", test.of(4),
               "Breakpoint 3, work (id=1) at ", ctx)
    c.contains("threads: worker 2 hits hbreak", test.of(5),
               "Breakpoint 3, work (id=2) at ", ctx)
    c.matches("threads: worker 2's write fires the watchpoint", test.of(6),
              r"Hardware watchpoint 2: results\[2\]\n+Old value = 0\nNew value = 21", ctx)
    c.matches("threads: the write was worker 2's (thread 3)", test.of(7),
              r"^\$1 = 3$", ctx)
    c.contains("threads: worker 3 hits hbreak", test.of(8),
               "Breakpoint 3, work (id=3) at ", ctx)
    c.contains("threads: program exits", test.of(10), "exited normally", ctx)


STACK_SLOT = [
    "break probe",
    "continue",
    "finish",
    "watch -l *(long *)slot",
    "continue",
    "bt 1",
    "continue",
    "bt 1",
    "delete",
    "rwatch -l *(long *)slot",
    "continue",
    "bt 1",
]


def check_stack_slot(c, kind):
    for opt in ("O0", "O2"):
        for options in (("--once",), ("--once", "--record")) if kind == "btstub" else (("--once",),):
            name = "stack slot %s%s" % (opt, " --record" if "--record" in options else "")
            test = both(c, kind, name, program("watch_stack", opt), STACK_SLOT, options)
            ctx = test.transcript()
            c.matches(name + ": first's call pushes into the slot", test.of(4) + test.of(5),
                      r"Hardware watchpoint 2: -location \*\(long \*\)slot\n+Old value = \d+\nNew value = \d+\n"
                      r"(.|\n)*#0 +(0x[0-9a-f]+ in )?first ", ctx)
            c.matches(name + ": second's call pushes into it", test.of(6) + test.of(7),
                      r"Hardware watchpoint 2: (.|\n)*#0 +(0x[0-9a-f]+ in )?second ", ctx)
            c.matches(name + ": second's return reads it", test.of(10) + test.of(11),
                      r"Hardware (read|access \(read/write\)) watchpoint 3: (.|\n)*#0 +(0x[0-9a-f]+ in )?main ", ctx)


HBREAK_LANDING = [
    "break f",         # 0
    "continue",        # 1
    "finish",          # 2: at the call of g, where f's return lands
    "hbreak *$pc",     # 3
    "delete 1",        # 4
    "continue",        # 5
    "print n",         # 6
    "continue",        # 7
    "print n",         # 8
    "delete",          # 9
    "break g",         # 10
    "continue",        # 11
    "finish",          # 12: at the return site of g's call
    "hbreak *$pc",     # 13
    "delete 3",        # 14
    "continue",        # 15
    "print n",         # 16
    "continue",        # 17
    "print n",         # 18
]


def check_hbreak_landing(c, kind):
    runs = [("O0", ("--once",)), ("O2", ("--once",))]
    if kind == "btstub":
        runs += [("O0", ("--once", "--record")), ("O2", ("--once", "--record")),
                 ("O0", ("--once", "--record", "--trace-stops=int3")),
                 ("O0", ("--once", "--record", "--trace-stops=debugreg"))]
    for opt, options in runs:
        name = "hbreak landing %s%s" % (opt, "".join(" " + o for o in options[1:]))
        test = both(c, kind, name, program("hbreak_landing", opt), HBREAK_LANDING, options)
        ctx = test.transcript()
        # n after f and g of each round: 11 a round, f's 1 first.
        for index, value in ((6, 12), (8, 23), (16, 44), (18, 55)):
            c.matches("%s: stopped there with n = %d" % (name, value), test.of(index), r"^\$\d+ = %d$" % value, ctx)


def main(args, c):
    check_software(c, args.server)
    if not debug_registers_trap():
        print("SKIP hardware watchpoints and breakpoints: debug registers "
              "never trap on this machine (btstub --probe)")
        return
    check_hardware(c, args.server)
    check_stack_slot(c, args.server)
    check_hbreak_landing(c, args.server)


if __name__ == "__main__":
    run_test("test_watch", main)
