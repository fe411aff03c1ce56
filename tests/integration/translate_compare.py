"""Records one program under two --trace-stops modes and compares them.

Shared by test_translate_differential.py (fixed programs),
test_translate_csmith.py (csmith's random programs) and
tests/tools/csmith_differential.py (more seeds, by hand).

`record(prog, args, mode)` runs the program under `btstub --once --record
--trace-stops=MODE` from its first instruction to the stop btstub makes
before it exits (signals the program gets are passed back to it), then
reads the whole branch trace as gdb reads it (Qbtrace:bts adopts the
recording, qXfer:btrace:read:all). `check_same(c, label, ref, got)` makes
the checks every comparison makes: the same stops, the same blocks (the
vDSO's left out: its clock reads retry when the kernel updates the time
meanwhile, which differs from run to run whichever tracer records), and
most branches of the translate run logged by translated code, so that a
comparison cannot pass with the cache unused.

Threaded programs are compared thread by thread: `record_threads(prog,
args, mode, stop_in)` stops each thread at a `ret` of function `stop_in`
(breakpoints, the same in both runs) and reads that thread's trace there,
the first thread's at the held end; `check_same_threads` matches the
threads by their order of creation and compares the blocks of each that
start in the program's own code (its .text and traced_work sections: the
C library's thread start, barriers, locks and joins take paths that
depend on which thread came first, whichever tracer records).
"""

import re
import signal
import subprocess

from harness import HarnessError, Server, load_base
from rsp_client import RspClient, RspError, hexs

ACTIVITY = re.compile(r"Translated code: (\d+) blocks translated, (\d+) left to int3s; (\d+) branches logged")
HELD = re.compile(r"thread \d+: (\d+) of (\d+) branches")
THREAD_LOGGED = re.compile(r"thread (\d+): (\d+) branches logged by translated code")
# How btstub reads a thread's log: in place (a memfd mapped in both), or
# through the process layer where the program cannot make one.
THREAD_LOG = re.compile(r"thread (\d+): \d+ branches logged by translated code \(log ([a-z ]+)\)")
SHARED, READ = "shared with btstub", "read from the program"
BLOCK = re.compile(r'<block begin="0x([0-9a-f]+)" end="0x([0-9a-f]+)"/>')
TIMEOUT = 120.0


def read_maps(pid):
    """The program's mappings: (begin, end, file offset, name) each."""
    maps = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split(None, 5)
            begin, end = fields[0].split("-")
            maps.append((int(begin, 16), int(end, 16), int(fields[2], 16),
                         fields[5].strip() if len(fields) > 5 else ""))
    return maps


def vdso_range(maps):
    """[begin, end) of the program's vDSO."""
    return next(((b, e) for b, e, _, name in maps if name == "[vdso]"), (0, 0))


def blocks_outside(doc, vdso):
    """The document's blocks (begin, end), those starting in the vDSO left out."""
    return [(int(b, 16), int(e, 16)) for b, e in BLOCK.findall(doc or "")
            if not vdso[0] <= int(b, 16) < vdso[1]]


def stop_signal(reply):
    """The signal of a T/S stop reply, or None for anything else."""
    if reply[:1] in ("T", "S") and len(reply) >= 3:
        return int(reply[1:3], 16)
    return None


def strip_thread(reply):
    """A stop reply without its thread id (each run has its own pid)."""
    return re.sub(r"thread:[0-9a-fp.]+;", "", reply)


def read_document(client, request):
    """The whole qXfer document `request` names (offset, length appended)."""
    parts, offset = [], 0
    while True:
        reply = client.request("%s:%x,%x" % (request, offset, 0x10000), timeout=TIMEOUT)
        if reply[:1] not in ("m", "l"):
            return None, reply
        # Joined once at the end: adding each part to a string copies the
        # megabytes read so far every time.
        parts.append(reply[1:])
        offset += len(reply) - 1
        if reply[:1] == "l":
            return "".join(parts), reply


def monitor(client, command):
    client.console = ""
    reply = client.request("qRcmd," + hexs(command), timeout=TIMEOUT)
    return client.console, reply


def record(prog, args, mode, options=()):
    """Runs `prog` to its held end under --trace-stops=`mode`: the btrace
    document and its blocks outside the vDSO, `monitor record status`, the
    stops seen, the server's stdout (where the program writes) and stderr,
    the program's mappings at the end.
    `options` go to btstub after the default ones."""
    return _recorded(prog, args, mode, options, _record_session)


def _recorded(prog, args, mode, options, session):
    """`session(server)`'s result for `prog` under `btstub --once --record
    --trace-stops=MODE OPTIONS`, with the server's stdout and stderr."""
    options = ("--once", "--record", "--trace-stops=" + mode) + tuple(options)
    with Server("btstub", [prog] + args, options=options) as server:
        try:
            result = session(server)
        except (OSError, RspError) as e:
            # Said with what btstub said and how it ended (a crash's signal).
            exited = server.wait_exit(1.0)
            server.stop()
            raise HarnessError("%s under --trace-stops=%s: %s: %s\nbtstub's exit status: %s\nbtstub's stderr:\n%s" %
                               (prog, mode, type(e).__name__, e, exited, server.stderr[-3000:])) from e
    result.update(stdout=server.stdout, stderr=server.stderr)
    return result


def _record_session(server):
    """record()'s session with the started server."""
    with RspClient.connect(server.port, timeout=TIMEOUT) as c:
        c.handshake(features="multiprocess+;swbreak+;hwbreak+;vContSupported+;exec-events+")
        stops = []
        reply = c.request("vCont;c", timeout=TIMEOUT)
        # Signals go back to the program, but SIGTRAP, which gdb keeps
        # (own_int3.c's int3s, which would kill it); signal 0 is the stop
        # before the exit (where a recorded program is held); an exec goes
        # on as gdb goes on from it.
        while len(stops) < 20:
            stops.append(reply)
            sig = stop_signal(reply)
            if sig is None or sig == 0:
                break
            reply = c.request("vCont;c" if ";exec:" in reply or sig == signal.SIGTRAP else "C%02x" % sig, timeout=TIMEOUT)
        select_thread(c, stops[-1])
        status, _ = monitor(c, "record status")
        maps = read_maps(server.inferior_pid)
        vdso = vdso_range(maps)
        enabled = c.request("Qbtrace:bts")
        doc, last = read_document(c, "qXfer:btrace:read:all")
        c.send_packet("k")
    return {"doc": doc, "last": last, "enabled": enabled, "status": status, "stops": stops,
            "blocks": blocks_outside(doc, vdso), "vdso": vdso, "maps": maps}


def select_thread(c, reply):
    """Selects (Hg) the thread a stop reply names, if it names one."""
    thread = re.search(r"thread:([0-9a-fp.]+);", reply)
    if thread:
        c.request("Hg" + thread.group(1))


def full_stop_facts(c, server, reply):
    """What a stop of a full trace (`reply`) shows, the thread selected: the
    stop reply without its thread, pc, registers (`g`), the two code bytes
    at the pc, the mapping the pc is in, `monitor record status`, the
    qXfer:btrace:read:all blocks; then how the program ends when continued
    (one more `continue` past the held end). Kills it after."""
    select_thread(c, reply)
    regs = c.request("g")
    rip = re.search(r"(?:^|;)10:([0-9a-f]{16});", reply[3:])
    pc = int.from_bytes(bytes.fromhex(rip.group(1)), "little") if rip else None
    code = c.request("m%x,2" % pc) if rip else ""
    where = next((name for begin, end, _, name in read_maps(server.inferior_pid) if begin <= pc < end), "") \
        if rip else ""
    status, _ = monitor(c, "record status")
    c.request("Qbtrace:bts")
    doc, _ = read_document(c, "qXfer:btrace:read:all")
    ends = [c.request("vCont;c", timeout=TIMEOUT)]
    if ends[-1].startswith("T"):  # held at the end: let it end
        ends.append(c.request("vCont;c", timeout=TIMEOUT))
    c.send_packet("k")
    return {"stop": strip_thread(reply), "pc": pc, "regs": regs, "code": code, "where": where, "status": status,
            "blocks": BLOCK.findall(doc or ""),
            "ends": [re.sub(r";process:[0-9a-f]+", "", strip_thread(e)) for e in ends]}


def varying_slots(a, b):
    """The 8-byte slots (16 hex digits each) in which two `g` replies of
    runs that should stop alike differ: what the program itself made
    different from run to run (rdtsc, a thread id)."""
    return {i for i in range(0, max(len(a), len(b)), 16) if a[i:i + 16] != b[i:i + 16]}


def masked_slots(regs, slots):
    """`regs` with those slots left out."""
    return "".join("-" * 16 if i in slots else regs[i:i + 16] for i in range(0, len(regs), 16))


def first_difference(a, b):
    """Index of the first block where the lists differ (the shorter's length
    when one is the start of the other), None when they are equal."""
    if a == b:
        return None
    return next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))


def compared_blocks(a, b, ctx):
    """(index of the first differing block or None, what to show): the
    blocks there under both tracers, then `ctx`."""
    first = first_difference(a, b)
    if first is None:
        return None, ctx
    return first, ("%d vs %d blocks; newest first, the first difference at block %d:\n"
                   "int3:      %s\ntranslate: %s\n%s" %
                   (len(a), len(b), first, [(hex(x), hex(y)) for x, y in a[first:first + 3]],
                    [(hex(x), hex(y)) for x, y in b[first:first + 3]], ctx))


def translated_share(status):
    """(branches logged by translated code, branches held) from `monitor
    record status`, or None when it does not say. Logged: by the threads
    there now (after an exec, by the new image: its trace starts there),
    the whole run's count where no thread is listed."""
    m, held = ACTIVITY.search(status), HELD.search(status)
    if not m or not held:
        return None
    per_thread = THREAD_LOGGED.findall(status)
    logged = sum(int(n) for _, n in per_thread) if per_thread else int(m.group(3))
    return logged, int(held.group(1))


def held_whole(status):
    """True when `monitor record status` shows a trace below its bound (no
    branch dropped: the comparison covers the whole run)."""
    held = HELD.search(status)
    return held is not None and int(held.group(1)) < int(held.group(2))


def check_same(c, label, ref, got, min_blocks=1000, min_share=0.5):
    """The checks of one comparison: `ref` from record(..., "int3"), `got`
    from record(..., "translate"), which must have logged more than
    `min_share` of its branches in translated code."""
    ctx = "int3 stops: %s\ntranslate stops: %s\nint3 status:\n%s\ntranslate status:\n%s\n" \
          "translate stderr:\n%s" % (ref["stops"], got["stops"], ref["status"], got["status"],
                                      got["stderr"][-3000:])
    c.true("%s: the reference run ends held before the exit" % label,
           stop_signal(ref["stops"][-1]) == 0, ctx)
    c.equal("%s: the same stops" % label, [strip_thread(r) for r in ref["stops"]],
            [strip_thread(r) for r in got["stops"]], ctx)
    c.true("%s: the reference's trace reads" % label, ref["doc"] is not None,
           "last reply: %r\n%s" % (ref["last"][:200], ctx))
    a, b = ref["blocks"], got["blocks"]
    c.true("%s: the reference holds many blocks (%d)" % (label, len(a)), len(a) > min_blocks, ctx)
    c.true("%s: the reference holds the whole run" % label, held_whole(ref["status"]), ctx)
    c.true("%s: the vDSO is found" % label, ref["vdso"][1] > 0 and ref["vdso"] == got["vdso"], ctx)
    first, detail = compared_blocks(a, b, ctx)
    c.true("%s: the same branch trace under both tracers" % label, first is None, detail)
    share = translated_share(got["status"])
    c.true("%s: the translate run reports its translated code" % label, share is not None, ctx)
    if share:
        logged, total = share
        c.true("%s: translated code logged over %d%% of the branches (%d of %d)" %
               (label, 100 * min_share, logged, total), total > 0 and logged > min_share * total, ctx)
    # Every program calls the C library through PLT stubs (and libc its
    # own ifuncs through its PLT): `jmp *slot(%rip)`, whose targets are
    # translated ahead from what the slot holds (translating_tracer_ahead.cc).
    slots = re.search(r"(\d+) targets read from jmp/call slots entered", got["status"])
    c.true("%s: targets read from jmp/call slots were entered ahead" % label,
           slots is not None and int(slots.group(1)) > 0, ctx)
    # Translated code that went stale would show here first: a program
    # that rewrites its code computes other values (code_rewrite).
    c.equal("%s: the program prints the same under both tracers" % label, ref["stdout"], got["stdout"], ctx)
    # Shared by default: what is compared is the in-place drain.
    modes = [mode for _, mode in THREAD_LOG.findall(got["status"])]
    c.true("%s: the translate run's log is shared with btstub (%s)" % (label, modes),
           modes and all(m == SHARED for m in modes), ctx)
    c.not_contains("%s: no complaint from the translating tracer" % label, got["stderr"],
                   "btstub: ", ctx)


# ---- threaded programs, compared thread by thread ----

# The program's own code: the sections of the executable compared.
OWN_CODE = (".text", "traced_work")


def elf_facts(prog, function):
    """The program file's own code (OWN_CODE sections, [begin, end) each)
    and the addresses of the `ret`s of `function` (all as linked), and
    whether it is position independent (then they are offsets from its
    load base)."""
    headers = subprocess.run(["objdump", "-h", prog], capture_output=True, text=True, check=True).stdout
    code_ranges = []
    for line in headers.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1] in OWN_CODE:
            vma, size = int(fields[3], 16), int(fields[2], 16)
            code_ranges.append((vma, vma + size))
    code = subprocess.run(["objdump", "-d", "--no-show-raw-insn", prog], capture_output=True, text=True,
                          check=True).stdout
    rets, inside = [], False
    for line in code.splitlines():
        if re.match(r"^[0-9a-f]+ <%s>:$" % re.escape(function), line):
            inside = True
        elif inside and not line.strip():
            break
        elif inside:
            m = re.match(r"^\s*([0-9a-f]+):\s+ret", line)
            if m:
                rets.append(int(m.group(1), 16))
    kind = subprocess.run(["readelf", "-h", prog], capture_output=True, text=True, check=True).stdout
    if not code_ranges or not rets:
        raise HarnessError("%s: no .text or no ret in %s" % (prog, function))
    return code_ranges, rets, "DYN" in kind


def blocks_within(doc, code_ranges):
    """The document's blocks (begin, end) that start in one of the ranges."""
    return [(int(b, 16), int(e, 16)) for b, e in BLOCK.findall(doc or "")
            if any(begin <= int(b, 16) < end for begin, end in code_ranges)]


def record_threads(prog, args, mode, stop_in, options=()):
    """Runs `prog` to its held end under --trace-stops=`mode` with
    breakpoints at the rets of `stop_in`: each thread's branch trace read
    where it stopped there (the first thread's at the end), in the order
    the threads were created (creation_order), cut to the blocks of the
    program's own code; `monitor record status` and the stops seen."""
    text, rets, pie = elf_facts(prog, stop_in)
    return _recorded(prog, args, mode, options,
                     lambda server: _record_threads_session(server, prog, text, rets, pie))


def creation_order(threads, pid):
    """`threads` (as in stop replies, "pP.T" or "T" in hex) in the order
    Linux created them: tids ascending from the process's pid, which is its
    first thread's. Linux hands out ids upwards and wraps at pid_max (32768
    here, soon reached on a busy machine), so a plain sort misorders the
    threads of a program started just before the wrap."""
    try:
        with open("/proc/sys/kernel/pid_max") as f:
            pid_max = int(f.read())
    except (OSError, ValueError):
        pid_max = 1 << 22  # the kernel's upper bound
    return sorted(threads, key=lambda t: (int(t.split(".")[-1], 16) - pid) % pid_max)


def _thread_trace(c, thread):
    """The whole trace of `thread` (as in a stop reply), as gdb reads it,
    how many of its branches translated code logged (None: not said), and
    how btstub reads its log (THREAD_LOG; None: not said)."""
    c.request("Hg" + thread)
    c.request("Qbtrace:bts")
    doc, _ = read_document(c, "qXfer:btrace:read:all")
    status, _ = monitor(c, "record status")
    tid = int(thread.split(".")[-1], 16)
    logged = {int(t): int(n) for t, n in THREAD_LOGGED.findall(status)}
    modes = {int(t): mode for t, mode in THREAD_LOG.findall(status)}
    return doc, logged.get(tid), modes.get(tid)


def _record_threads_session(server, prog, code_ranges, rets, pie):
    base = load_base(server.inferior_pid, prog) if pie else 0
    code_ranges = [(base + begin, base + end) for begin, end in code_ranges]
    with RspClient.connect(server.port, timeout=TIMEOUT) as c:
        c.handshake()
        for ret in rets:
            inserted = c.request("Z0,%x,1" % (base + ret))
            if inserted != "OK":
                raise HarnessError("Z0 at a ret: %r" % inserted)
        docs, stops = {}, []
        reply = c.request("vCont;c", timeout=TIMEOUT)
        while len(stops) < 200:
            stops.append(reply)
            sig = stop_signal(reply)
            thread = re.search(r"thread:([0-9a-fp.]+);", reply)
            if sig is None or sig == 0 or thread is None:
                break
            if sig == 5 and "swbreak" in reply:
                docs[thread.group(1)] = _thread_trace(c, thread.group(1))
                sig = 0
            reply = c.request("vCont;C%02x" % sig if sig else "vCont;c", timeout=TIMEOUT)
        thread = re.search(r"thread:([0-9a-fp.]+);", stops[-1])
        if thread:
            docs[thread.group(1)] = _thread_trace(c, thread.group(1))
        status, _ = monitor(c, "record status")
        c.send_packet("k")
    order = creation_order(docs, server.inferior_pid)
    # Each thread's stops, threads in creation order: the threads run at
    # once, so the order between them is the scheduler's.
    of_thread = {}
    for reply in stops:
        thread = re.search(r"thread:([0-9a-fp.]+);", reply)
        of_thread.setdefault(thread.group(1) if thread else "", []).append(strip_thread(reply))
    return {"threads": [blocks_within(docs[t][0], code_ranges) for t in order],
            # Every thread traced or stopped, so that a thread with no stop
            # in one run does not shift the others.
            "thread_stops": [of_thread.get("", [])] +
                            [of_thread.get(t, []) for t in
                             creation_order(sorted((set(docs) | set(of_thread)) - {""}), server.inferior_pid)],
            # Each thread's branches, and those translated code logged.
            "shares": [(max(0, len(BLOCK.findall(docs[t][0] or "")) - 1), docs[t][1]) for t in order],
            "unread": [t for t in order if docs[t][0] is None],
            "log_modes": [docs[t][2] for t in order],
            "status": status, "stops": stops}


def check_same_threads(c, label, ref, got, min_blocks=1000, min_share=0.5, log_modes=None):
    """check_same for record_threads' results: the same stops of each
    thread (by order of creation) and the same last stop, and each
    thread (by order of creation) the same blocks of the program's own code
    under both, more than `min_blocks` of them in all; in the translate
    run, over `min_share` of each thread's branches logged by translated
    code (`monitor record status` where its trace was read), and its log
    read as `log_modes` says (by default: every one shared)."""
    ctx = "int3 stops: %s\ntranslate stops: %s\nint3 status:\n%s\ntranslate status:\n%s\n" \
          "translate stderr:\n%s" % (ref["stops"], got["stops"], ref["status"], got["status"],
                                      got["stderr"][-3000:])
    c.true("%s: the reference run ends held before the exit" % label, stop_signal(ref["stops"][-1]) == 0, ctx)
    c.equal("%s: the same stops, thread by thread" % label, ref["thread_stops"], got["thread_stops"], ctx)
    c.equal("%s: the same last stop" % label, strip_thread(ref["stops"][-1]), strip_thread(got["stops"][-1]), ctx)
    c.true("%s: every thread's trace reads" % label, not ref["unread"] and not got["unread"], ctx)
    c.true("%s: several threads" % label, len(ref["threads"]) > 1, ctx)
    c.equal("%s: as many threads under both tracers" % label, len(ref["threads"]), len(got["threads"]), ctx)
    total = sum(len(a) for a in ref["threads"])
    c.true("%s: the reference holds many blocks (%d)" % (label, total), total > min_blocks, ctx)
    for i, (a, b) in enumerate(zip(ref["threads"], got["threads"])):
        c.true("%s: thread %d's reference holds blocks (%d)" % (label, i + 1, len(a)), len(a) > 0, ctx)
        first, detail = compared_blocks(a, b, ctx)
        c.true("%s: thread %d, the same branch trace under both tracers" % (label, i + 1), first is None, detail)
    c.true("%s: the translate run reports its translated code" % label, ACTIVITY.search(got["status"]) is not None,
           ctx)
    for i, (branches, logged) in enumerate(got["shares"]):
        c.true("%s: thread %d, translated code logged over %d%% of its branches (%s of %d)" %
               (label, i + 1, 100 * min_share, logged, branches),
               logged is not None and branches > 0 and logged > min_share * branches, ctx)
    want = log_modes or [SHARED] * len(got["log_modes"])
    c.equal("%s: how btstub read each thread's log" % label, want, got["log_modes"], ctx)
    c.not_contains("%s: no complaint from the translating tracer" % label, got["stderr"], "btstub: ", ctx)
