#!/usr/bin/env python3
"""btstub binds itself and its program to one CPU (stub/server/
cpu_affinity.h); the software tracer's packing workers (stub/tracing/
background_packer.h) run on the other CPUs btstub was allowed (one each,
at most 4), one more at idle priority (SCHED_IDLE) on btstub's own CPU,
the translating tracer's heap-prefaulting thread (stub/tracing/
heap_prefault.h) on those other CPUs too (none with one CPU), and never
outside the set it was started with.

record_workload at -O2, 300 rounds (about 40 chunks sealed and packed),
under `btstub --record`, run by gdb to bench_end through `target remote |
taskset -c CPUS btstub ...`. There gdb's python reads the CPUs every
thread of the program and of btstub (its parent) may run on:
- CPUS = every CPU this test may use: the program and btstub's first
  thread on one CPU of them; a worker for each of the others (needs two)
  allowed on all of them, and the idle one on btstub's CPU;
- CPUS = one CPU: everything, the one worker too, on that CPU;
- every CPU, while a process spins on one of them (as another btstub
  recording does): btstub binds itself to another (stub/server/
  cpu_choice.h), for each CPU in turn, twice. Pinned where it started,
  btstubs of a `ctest -j2` run sat beside a recording one at half speed.
  (CTest runs this test alone; where the other CPUs were busy anyway, the
  check is skipped: no CPU was right.)

Runs against btstub only (gdbserver starts no threads and pins nothing).

    python3 test_cpu_affinity.py [-v]
"""

import os
import shlex
import subprocess
import sys
import time

from harness import program, run_gdb, run_test, sanitized, server_path

# One line a thread: "<program|btstub> <pid> <tid> <Cpus_allowed_list>
# <scheduling policy> <name>" (/proc/PID/task/TID/stat's 41st field, comm).
SHOW_THREADS = (
    "python import os, re; pid = gdb.selected_inferior().pid; "
    "ppid = int(re.search(r'PPid:\\s+(\\d+)', open('/proc/%d/status' % pid).read()).group(1)); "
    "print('\\n'.join('THREAD %s %d %s %s %s %s' % (who, p, t, re.search(r'Cpus_allowed_list:\\s+(\\S+)', "
    "open('/proc/%d/task/%s/status' % (p, t)).read()).group(1), "
    "open('/proc/%d/task/%s/stat' % (p, t)).read().rsplit(')', 1)[1].split()[38], "
    "open('/proc/%d/task/%s/comm' % (p, t)).read().split()[0]) "
    "for who, p in (('program', pid), ('btstub', ppid)) for t in os.listdir('/proc/%d/task' % p)))")
SCHED_IDLE = 5
HEAP_THREAD = "btstub-heap"  # stub/tracing/heap_prefault.h kThreadName
MAX_PACKERS = 4  # stub/server/cpu_choice.h kMaxPackers


def cpu_list(text):
    cpus = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def threads_under(cpus):
    prog = program("record_workload", "O2")
    target = "| " + shlex.join(["taskset", "-c", ",".join(map(str, sorted(cpus))),
                                server_path("btstub"), "--record", "-", prog, "300"])
    r = run_gdb(["break bench_end", "continue", SHOW_THREADS, "kill"], prog, target, timeout=120)
    threads = []
    for line in (r.of(2) or "").splitlines():
        fields = line.split()
        if len(fields) == 7 and fields[0] == "THREAD":
            threads.append((fields[1], int(fields[2]), int(fields[3]), cpu_list(fields[4]), int(fields[5]),
                            fields[6]))
    return r, threads


def check_all_cpus(c, allowed):
    r, threads = threads_under(allowed)
    ctx = r.transcript()
    c.contains("the program stops at bench_end", r.of(1), "Breakpoint 1, ", ctx)
    program_threads = [t for t in threads if t[0] == "program"]
    main = [t for t in threads if t[0] == "btstub" and t[1] == t[2]]
    others = [t for t in threads if t[0] == "btstub" and t[1] != t[2]]
    heap = [t for t in others if t[5] == HEAP_THREAD]
    workers = [t for t in others if t[5] != HEAP_THREAD and t[4] != SCHED_IDLE]
    idle = [t for t in others if t[5] != HEAP_THREAD and t[4] == SCHED_IDLE]
    c.true("the program's threads and btstub's are listed", program_threads and main, ctx)
    if not (program_threads and main):
        return
    pinned = main[0][3]
    c.true("btstub's first thread is on one CPU of those allowed",
           len(pinned) == 1 and pinned <= allowed, ctx)
    c.true("the program is on that CPU", all(t[3] == pinned for t in program_threads), ctx)
    c.equal("btstub has a packing worker for each other CPU (at most %d)" % MAX_PACKERS, len(workers),
            min(len(allowed - pinned), MAX_PACKERS), ctx)
    for _, _, tid, cpus, _, _ in workers:
        c.equal("the worker (thread %d) runs on every allowed CPU but btstub's" % tid,
                sorted(cpus), sorted(allowed - pinned), ctx)
    c.equal("btstub has one packing worker at idle priority", len(idle), 1, ctx)
    for _, _, tid, cpus, _, _ in idle:
        c.equal("the idle worker (thread %d) runs on btstub's CPU" % tid, sorted(cpus), sorted(pinned), ctx)
    # The translating tracer's drains started it (heap_prefault.h); under
    # the sanitizers, whose allocator keeps no [heap], it found nothing to
    # do and ended.
    c.equal("btstub has one heap-prefaulting thread (none under the sanitizers)", len(heap),
            0 if sanitized() else 1, ctx)
    for _, _, tid, cpus, policy, _ in heap:
        c.equal("the heap-prefaulting thread (%d) runs on every allowed CPU but btstub's" % tid,
                sorted(cpus), sorted(allowed - pinned), ctx)
        # Behind the workers it shares those CPUs with (heap_prefault.cc).
        c.equal("the heap-prefaulting thread (%d) is at idle priority" % tid, policy, SCHED_IDLE, ctx)


def check_one_cpu(c, cpu):
    r, threads = threads_under({cpu})
    ctx = r.transcript()
    c.contains("the program stops at bench_end", r.of(1), "Breakpoint 1, ", ctx)
    c.true("btstub has its worker thread, none at idle priority",
           sum(1 for t in threads if t[0] == "btstub") == 2 and all(t[4] != SCHED_IDLE for t in threads), ctx)
    for who, _, tid, cpus, _, _ in threads:
        c.equal("%s thread %d stays on CPU %d, as taskset asked" % (who, tid, cpu), sorted(cpus), [cpu], ctx)


# Spins on the CPU given as its argument until killed.
SPIN = "import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass"


def idle_ticks():
    """Idle + iowait ticks (USER_HZ) per CPU, from /proc/stat."""
    ticks = {}
    for line in open("/proc/stat"):
        fields = line.split()
        if fields and fields[0].startswith("cpu") and fields[0][3:].isdigit():
            ticks[int(fields[0][3:])] = int(fields[4]) + int(fields[5])
    return ticks


def check_avoids_busy_cpu(c, allowed):
    prog = program("basic", "O0")
    hz = os.sysconf("SC_CLK_TCK")
    for busy in sorted(allowed) * 2:
        spinner = subprocess.Popen([sys.executable, "-c", SPIN, str(busy)])
        time.sleep(0.1)  # spinning before btstub looks
        # Whether another CPU has room: when something else keeps them all
        # busy (a build beside the test), there is no right answer.
        before, start = idle_ticks(), time.monotonic()
        time.sleep(0.3)
        after, elapsed = idle_ticks(), time.monotonic() - start
        room = max((after.get(cpu, 0) - before.get(cpu, 0)) / (hz * elapsed) for cpu in allowed if cpu != busy)
        try:
            target = "| " + shlex.join([server_path("btstub"), "-", prog])
            r = run_gdb(["break main", "continue", SHOW_THREADS, "kill"], prog, target, timeout=60)
        finally:
            spinner.kill()
            spinner.wait()
        ctx = r.transcript()
        main_thread = [line.split() for line in (r.of(2) or "").splitlines()
                       if line.startswith("THREAD btstub") and line.split()[2] == line.split()[3]]
        c.true("btstub's first thread is listed (CPU %d busy)" % busy, main_thread, ctx)
        if not main_thread:
            continue
        pinned = cpu_list(main_thread[0][4])
        label = "btstub is on one CPU that is not the busy one, %d (on %s)" % (busy, sorted(pinned))
        if room < 0.5:
            c.skip(label, "the other CPUs were busy too (idle %.0f%% at most)" % (100 * room))
            continue
        c.true(label, len(pinned) == 1 and busy not in pinned and pinned <= allowed, ctx)


def main(args, c):
    if args.server != "btstub":
        c.true("only btstub pins and packs (skipped for %s)" % args.server, True)
        return
    allowed = os.sched_getaffinity(0)
    if len(allowed) >= 2:
        check_all_cpus(c, allowed)
        check_avoids_busy_cpu(c, allowed)
    else:
        c.true("one CPU only: the worker cannot be elsewhere (skipped)", True)
    # The last CPU: not where the shell that started the test runs, most often.
    check_one_cpu(c, max(allowed))


if __name__ == "__main__":
    run_test("test_cpu_affinity", main)
