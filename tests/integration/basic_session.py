"""The everyday gdb session on tests/programs/basic.c (argv: alpha beta),
shared by test_basic_commands.py (over TCP) and test_stdio_mode.py (over
`target remote | SERVER - prog args`).

build() returns the command list; check() verifies what gdb printed. Values
come from basic.c: compute(4) sums 0+2+4+6 = 12, and the session sets
counter to 40 before compute returns, so compute returns 52; factorial(5) is
120; three add_one calls give 175; sse_work(4.0) is 4.0 * 2.5 + 0.25 = 10.25.
The program prints "result=175 d=10.25 greeting=hello, btstub" and exits with
7 only if both arguments arrived.
"""

import re

from harness import Script, source_line

SRC = "basic.c"
ARGS = ["alpha", "beta"]
PROGRAM_OUTPUT = "result=175 d=10.25 greeting=hello, btstub"


def line_no(mark):
    return int(source_line(SRC, mark).split("\t")[0])


def build():
    s = Script()
    ix = {}

    def add(key, command):
        ix[key] = s.add(command)

    add("print_error", "print nosuch_symbol")
    add("break", "break compute")
    add("tbreak", "tbreak factorial")
    add("continue_1", "continue")
    add("print_n", "print n")
    add("next_1", "next")
    add("next_2", "next")
    add("print_i", "print i")
    add("until_1", "until")
    add("until_2", "until")
    add("info_locals", "info locals")
    add("next_3", "next")
    add("set_var", "set var counter = 40")
    add("print_counter", "print counter")
    add("finish_compute", "finish")
    add("continue_tbreak", "continue")
    add("break_base", "break %s:%d" % (SRC, line_no("factorial_base")))
    add("continue_base", "continue")
    add("bt", "bt")
    add("up", "up")
    add("print_up_n", "print n")
    add("up_4", "up 4")
    add("print_result", "print result")
    add("down", "down")
    add("print_down_n", "print n")
    add("frame_main", "frame 5")
    add("delete", "delete")
    add("advance", "advance add_one")
    add("print_v", "print v")
    add("finish_add_one", "finish")
    add("until_loc", "until %s:%d" % (SRC, line_no("main_sse")))
    add("step_into", "step")
    add("finish_sse", "finish")
    add("xmm0_double", "print $xmm0.v2_double[0]")
    add("info_xmm0", "info registers xmm0")
    add("mxcsr", "print $mxcsr")
    add("pc_before", "print $pc")
    add("stepi", "stepi")
    add("pc_after", "print $pc")
    add("x_i", "x/i $pc")
    add("print_rip", "print $rip")
    add("info_rip", "info registers rip")
    add("info_eflags", "info registers eflags")
    add("info_segments", "info registers cs ss")
    add("info_registers", "info registers")
    add("fs_base", "print/x $fs_base")
    add("print_counter_2", "print counter")
    add("print_greeting", "print greeting")
    add("print_origin", "print origin")
    add("print_squares", "print squares")
    add("print_expr", "print squares[3] * origin.y + counter")
    add("print_sizeof", "print sizeof(origin)")
    add("print_scale", "print scale * 2")
    add("print_argv1", "print argv[1]")
    add("x_words", "x/4xw squares")
    add("x_string", "x/s greeting")
    add("set_global", "set var squares[2] = 44")
    add("x_words_2", "x/4dw &squares")
    add("info_shared", "info sharedlibrary")
    add("disassemble", "disassemble compute")
    add("continue_exit", "continue")
    return s.commands, ix


def check(c, result, program_output, label=""):
    """Checks a run of build()'s commands; program_output is what the
    program printed (server stdout over TCP, gdb's stderr over stdio)."""
    out = lambda key: result.of(IX[key])
    ctx = result.transcript()
    p = label

    c.equal(p + "gdb exit status", 0, result.status, ctx)
    c.contains(p + "print error", out("print_error"),
               'No symbol "nosuch_symbol" in current context.')
    c.matches(p + "break compute", out("break"),
              r"^Breakpoint 1 at 0x[0-9a-f]+: file basic\.c, line %d\.$" %
              line_no("compute_entry"))
    c.matches(p + "tbreak factorial", out("tbreak"),
              r"^Temporary breakpoint 2 at 0x[0-9a-f]+: file basic\.c, line \d+\.$")
    c.lines(p + "continue to breakpoint", out("continue_1"), [
        "Breakpoint 1, compute (n=4) at basic.c:%d" % line_no("compute_entry"),
        source_line(SRC, "compute_entry")])
    c.value(p + "print argument", out("print_n"), "4")
    c.lines(p + "next", out("next_1"), [source_line(SRC, "compute_for")])
    c.lines(p + "next into loop body", out("next_2"),
            [source_line(SRC, "compute_loop")])
    c.value(p + "print local", out("print_i"), "0")
    c.lines(p + "until (one line)", out("until_1"),
            [source_line(SRC, "compute_for")])
    c.lines(p + "until (leaves the loop)", out("until_2"),
            ["%d\t  counter += 1;" % (line_no("compute_return") - 1)])
    c.lines(p + "info locals", out("info_locals"), ["sum = 12", "i = 4"])
    c.lines(p + "next to return", out("next_3"),
            [source_line(SRC, "compute_return")])
    c.value(p + "set var then print", out("print_counter"), "40")
    c.lines(p + "finish shows the caller's line", out("finish_compute"),
            [source_line(SRC, "main_compute")])
    c.matches(p + "finish with value", out("finish_compute"),
              r"^Value returned is \$\d+ = 52$")
    c.matches(p + "finish frame line", out("finish_compute"),
              r"^0x[0-9a-f]+ in main \(argc=3, argv=0x[0-9a-f]+\) at basic\.c:%d$"
              % line_no("main_compute"))
    c.lines(p + "continue to tbreak", out("continue_tbreak"), [
        "Temporary breakpoint 2, factorial (n=5) at basic.c:%d" %
        line_no("factorial_entry"),
        source_line(SRC, "factorial_entry")])
    c.matches(p + "break FILE:LINE", out("break_base"),
              r"^Breakpoint 3 at 0x[0-9a-f]+: file basic\.c, line %d\.$" %
              line_no("factorial_base"))
    c.lines(p + "breakpoint in recursion", out("continue_base"), [
        "Breakpoint 3, factorial (n=1) at basic.c:%d" % line_no("factorial_base"),
        source_line(SRC, "factorial_base")])
    bt = out("bt")
    c.matches(p + "bt frame 0", bt,
              r"^#0  factorial \(n=1\) at basic\.c:%d$" % line_no("factorial_base"))
    for level, n in ((1, 2), (2, 3), (3, 4), (4, 5)):
        c.matches(p + "bt frame %d" % level, bt,
                  r"^#%d  0x[0-9a-f]+ in factorial \(n=%d\) at basic\.c:\d+$" %
                  (level, n))
    c.matches(p + "bt main frame", bt,
              r"^#5  0x[0-9a-f]+ in main \(argc=3, argv=0x[0-9a-f]+\) at basic\.c:%d$"
              % line_no("main_factorial"))
    c.equal(p + "bt depth", 6, len(re.findall(r"^#\d", bt, re.M)), bt)
    c.matches(p + "up", out("up"),
              r"^#1  0x[0-9a-f]+ in factorial \(n=2\) at basic\.c:\d+$")
    c.value(p + "print in caller frame", out("print_up_n"), "2")
    c.matches(p + "up 4 reaches main", out("up_4"),
              r"^#5  0x[0-9a-f]+ in main \(argc=3, argv=0x[0-9a-f]+\) at basic\.c:%d$"
              % line_no("main_factorial"))
    c.value(p + "print local of main", out("print_result"), "52")
    c.matches(p + "down", out("down"),
              r"^#4  0x[0-9a-f]+ in factorial \(n=5\) at basic\.c:\d+$")
    c.value(p + "print after down", out("print_down_n"), "5")
    c.matches(p + "frame N", out("frame_main"),
              r"^#5  0x[0-9a-f]+ in main \(argc=3, argv=0x[0-9a-f]+\) at basic\.c:%d$"
              % line_no("main_factorial"))
    c.lines(p + "advance", out("advance"), [
        "add_one (v=172) at basic.c:%d" % line_no("add_one_body"),
        source_line(SRC, "add_one_body")])
    c.value(p + "print after advance", out("print_v"), "172")
    c.matches(p + "finish add_one", out("finish_add_one"),
              r"^Value returned is \$\d+ = 173$")
    c.lines(p + "until LOCATION", out("until_loc"), [
        source_line(SRC, "main_sse")])
    c.matches(p + "until LOCATION frame", out("until_loc"),
              r"^main \(argc=3, argv=0x[0-9a-f]+\) at basic\.c:%d$" %
              line_no("main_sse"))
    c.lines(p + "step into function", out("step_into"), [
        "sse_work (a=4) at basic.c:%d" % line_no("sse_compute"),
        source_line(SRC, "sse_compute")])
    c.matches(p + "finish returns double", out("finish_sse"),
              r"^Value returned is \$\d+ = 10\.25$")
    c.value(p + "xmm0 holds the double", out("xmm0_double"), "10.25")
    c.matches(p + "info registers xmm0", out("info_xmm0"),
              r"^xmm0 +\{.*v2_double = \{0x4024800000000000, 0x0\}")
    c.value(p + "mxcsr", out("mxcsr"), "[ IM DM ZM OM UM PM ]")
    before = c.matches(p + "print $pc", out("pc_before"),
                       r"^\$\d+ = \(void \(\*\)\(\)\) (0x[0-9a-f]+) <main\+\d+>$")
    c.matches(p + "stepi", out("stepi"),
              r"^0x[0-9a-f]+\t%d\t" % line_no("main_sse"))
    after = c.matches(p + "print $pc after stepi", out("pc_after"),
                      r"^\$\d+ = \(void \(\*\)\(\)\) (0x[0-9a-f]+) <main\+\d+>$")
    if before and after:
        c.true(p + "stepi moved pc forward",
               0 < int(after.group(1), 16) - int(before.group(1), 16) <= 15,
               "before %s after %s" % (before.group(1), after.group(1)))
    c.matches(p + "x/i $pc", out("x_i"), r"^=> 0x[0-9a-f]+ <main\+\d+>:\t\S")
    c.matches(p + "print $rip", out("print_rip"),
              r"^\$\d+ = \(void \(\*\)\(\)\) 0x[0-9a-f]+ <main\+\d+>$")
    c.matches(p + "info registers rip", out("info_rip"),
              r"^rip +0x[0-9a-f]+ +0x[0-9a-f]+ <main\+\d+>$")
    c.matches(p + "info registers eflags", out("info_eflags"),
              r"^eflags +0x[0-9a-f]+ +\[ (?:[A-Z]{2,3} )*IF (?:[A-Z]{2,3} )*\]$")
    c.lines(p + "info registers cs ss", out("info_segments"), [
        "cs             0x33                51",
        "ss             0x2b                43"])
    regs = out("info_registers")
    for name in ("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
                 "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip",
                 "eflags", "cs", "ss", "ds", "es", "fs", "gs"):
        c.matches(p + "info registers lists " + name, regs,
                  r"^%s +0x[0-9a-f]+ " % name)
    c.matches(p + "fs_base (TLS) is set", out("fs_base"),
              r"^\$\d+ = 0x7ff[0-9a-f]+$")
    c.value(p + "print global", out("print_counter_2"), "40")
    c.value(p + "print string", out("print_greeting"), '"hello, btstub"')
    c.matches(p + "print struct", out("print_origin"),
              r'^\$\d+ = \{x = 3, y = -4, name = 0x[0-9a-f]+ "origin"\}$')
    c.value(p + "print array", out("print_squares"), "{0, 1, 4, 9}")
    c.value(p + "print expression", out("print_expr"), "4")
    c.value(p + "print sizeof", out("print_sizeof"), "16")
    c.value(p + "print double expression", out("print_scale"), "5")
    c.matches(p + "argv arrived", out("print_argv1"),
              r'^\$\d+ = 0x[0-9a-f]+ "alpha"$')
    c.matches(p + "x/4xw", out("x_words"),
              r"^0x[0-9a-f]+ <squares>:\t0x00000000\t0x00000001\t0x00000004\t0x00000009$")
    c.matches(p + "x/s", out("x_string"),
              r'^0x[0-9a-f]+ <greeting>:\t"hello, btstub"$')
    c.matches(p + "memory write then x/4dw", out("x_words_2"),
              r"^0x[0-9a-f]+ <squares>:\t0\t1\t44\t9$")
    shared = out("info_shared")
    c.matches(p + "info sharedlibrary lists libc", shared,
              r"^0x[0-9a-f]+ +0x[0-9a-f]+ +Yes .*libc\.so\.6$")
    c.matches(p + "info sharedlibrary lists the loader", shared,
              r"^0x[0-9a-f]+ +0x[0-9a-f]+ +Yes .*ld-linux-x86-64\.so\.2$")
    dis = out("disassemble")
    c.lines(p + "disassemble", dis, ["Dump of assembler code for function compute:",
                                     "End of assembler dump."])
    c.matches(p + "disassemble shows offsets", dis,
              r"^   0x[0-9a-f]+ <\+0>:\tpush   %rbp$")
    c.matches(p + "exit code 7 (arguments arrived)", out("continue_exit"),
              r"^\[Inferior 1 \(process \d+\) exited with code 07\]$")
    c.contains(p + "program output", program_output, PROGRAM_OUTPUT)


_, IX = build()
