#!/usr/bin/env python3
"""Many busy threads share a bound on the translating tracer's logs.

Each thread logs into three logs of up to 256 Ki records (8 MiB each),
resident as far as they were ever written. busy_threads.c lets sixteen
threads go together, each taking about 900,000 branches with no system
call between, so that each fills its logs again and again; then it reads
its own /proc/self/smaps and counts btstub's log areas with more resident
than a 2 MiB log, the table (1 MiB) and the slots. Recorded under
`--trace-stops=translate`, with seventeen threads live the logs share 96
MiB down to 64 Ki records (2 MiB) each: only the main thread's three areas
may hold more (alone, through ld.so's start, it had 8 MiB logs); before,
every thread filled 8 MiB logs (200 busy threads would have held 4.8
GiB, three logs each). The program's sum must be the native run's, and translated code
must have logged most branches (else nothing was measured).

Runs against btstub only.

    python3 test_translate_log_memory.py [-v]
"""

import re
import subprocess

from harness import program, run_test
from translate_compare import record, translated_share



def main(args, c):
    if args.server != "btstub":
        c.true("only btstub records with --record (skipped for %s)" % args.server, True)
        return
    prog = program("busy_threads", "O2")
    native = subprocess.run([prog], capture_output=True, text=True, timeout=60).stdout
    got = record(prog, [], "translate")
    ctx = "translate status:\n%s\nstdout:\n%s\nstderr:\n%s" % (got["status"], got["stdout"], got["stderr"][-2000:])
    c.contains("natively there are no log areas", native, "areas 0 ")
    areas = re.search(r"areas (\d+) over_bound (\d+)", got["stdout"])
    c.true("the program found btstub's log areas (a thread's at least)", areas and int(areas.group(1)) >= 16, ctx)
    if areas:
        c.true("no area but the main thread's three holds more than a 2 MiB log, its table and slots",
               int(areas.group(2)) <= 3, ctx)
    want = re.search(r"sum \d+", native)
    c.contains("the same sum as natively", got["stdout"], want.group(0) if want else "sum ?", ctx)
    share = translated_share(got["status"])
    c.true("translated code logged most branches", share is not None and share[0] > share[1] / 2, ctx)
    c.not_contains("no complaint from the translating tracer", got["stderr"], "btstub: ", ctx)


if __name__ == "__main__":
    run_test("test_translate_log_memory", main)
