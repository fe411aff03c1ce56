#!/usr/bin/env python3
"""The translating tracer backs a busy thread's log area with pages up
front, and leaves a thread that has not filled a log alone.

Each thread of a program under the translating tracer logs into areas
btstub maps into it (a log below, the slots and the indirect-target table
above: 9,220 KiB each, shared with btstub: `/memfd: (deleted)` in the
program's maps). In a VM each page's first touch is a page fault of
~15-20 us, ~6,900 of them a busy thread's three areas, so once a thread
has filled a log btstub has the thread back the area it logs into with
one madvise(MADV_POPULATE_WRITE) (TranslatingTracer::populate_area); a
thread that has not filled one keeps only the pages it touched.

gdb over `btstub --record` on bench_checkpoints_O2 3 40000 0 (three rounds
of 40,000 LCG iterations, a taken branch each, no system call):
  - at main (~11,000 branches logged, no log full yet): no area is
    resident whole (Rss below its size in /proc/PID/smaps);
  - at bench_end (~131,000, a log full once): an area is resident whole,
    which writing alone cannot make it (the thread wrote less than a log
    into it since, and touches few of the table's pages);
  - the program runs on to its end and prints x after the three rounds,
    as computed here: populating changes no byte.

    python3 test_translate_populate.py [-v]
"""

import re
import shlex

from bench_checkpoints_lcg import lcg_after
from harness import program, run_gdb, run_test, server_path

ROUNDS, INNER = 3, 40000
RECORD_STATUS = "monitor record status"
# The program's shared mappings and their Rss, as "ADDR-ADDR KiB-resident".
AREAS = "python exec(%r)" % (
    "import re\n"
    "text = open('/proc/%d/smaps' % gdb.selected_inferior().pid).read()\n"
    "for m in re.finditer(r'^([0-9a-f]+)-([0-9a-f]+) rw-s .*/memfd: \\(deleted\\)\\n(?:.*\\n)*?Rss: +(\\d+) kB',"
    " text, re.M):\n"
    "    print('area %d KiB, %s KiB resident' % ((int(m.group(2), 16) - int(m.group(1), 16)) // 1024,"
    " m.group(3)))\n")


def areas(text):
    """[(size KiB, resident KiB)] of the AREAS output."""
    return [(int(a), int(b)) for a, b in re.findall(r"area (\d+) KiB, (\d+) KiB resident", text or "")]


def full_logs(text):
    m = re.search(r"(\d+) log full", text or "")
    return int(m.group(1)) if m else None


def main(args, c):
    if args.server != "btstub":
        c.true("btstub's own recording (skipped for %s)" % args.server, True)
        return
    prog = program("bench_checkpoints", "O2")
    target = "| " + shlex.join([server_path("btstub"), "--record", "-", prog, str(ROUNDS), str(INNER), "0"])
    result = run_gdb(["break main", "continue", RECORD_STATUS, AREAS,
                      "break bench_end", "continue", RECORD_STATUS, AREAS,
                      "delete", "continue"], prog, target, timeout=120)
    at_main, at_end = (areas(result.of_command(AREAS, n)) for n in (0, 1))
    status_main, status_end = (result.of_command(RECORD_STATUS, n) for n in (0, 1))
    c.true("the statuses say no log was full at main and one or more at bench_end (%s, %s)" %
           (full_logs(status_main), full_logs(status_end)),
           full_logs(status_main) == 0 and (full_logs(status_end) or 0) >= 1, result.transcript())
    c.true("at main the thread's areas are mapped, none resident whole (%s)" % at_main,
           len(at_main) >= 1 and all(resident < size for size, resident in at_main), result.transcript())
    c.true("at bench_end an area is resident whole (%s)" % at_end,
           any(resident == size for size, resident in at_end), result.transcript())
    c.true("the program ran on to its end and printed x after three rounds",
           str(lcg_after(ROUNDS, INNER)) in result.output, result.transcript())


if __name__ == "__main__":
    run_test("test_translate_populate", main)
