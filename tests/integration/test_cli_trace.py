#!/usr/bin/env python3
"""btstub's branch-tracing options on the command line (no gdb needed):

--help describes --record, --backend=auto|software, --trace-size=BYTES,
--trace-full=drop|stop and --trace-stops; a bad value of each gives a clear message naming
the option and a non-zero exit, before anything is launched or listened on.
gdbserver has none of these options: against it the checks are skipped.

    python3 test_cli_trace.py [--server gdbserver] [-v]
"""

from harness import program, run_command, run_test, server_path


def check_help(path, c):
    status, out, err = run_command([path, "--help"], 10)
    c.equal("--help exits 0", 0, status, err)
    for option in ("--record", "--backend=auto|software", "--trace-size=BYTES",
                   "--trace-full=drop|stop", "--trace-stops=int3|debugreg|step|translate"):
        c.contains("--help mentions %s" % option, out, option)


def check_bad_values(path, c):
    cases = [
        ("--backend=bts", "Bad --backend 'bts': expected auto, software, perf-bts, intel-bts or intel-pt"),
        ("--trace-size=lots", "Bad --trace-size 'lots'"),
        ("--trace-size=8", "at least 24 bytes"),
        ("--trace-full=wrap", "Bad --trace-full 'wrap': expected drop or stop"),
        ("--trace-stops=dr", "Bad --trace-stops 'dr': expected int3, debugreg, step or translate"),
    ]
    for option, message in cases:
        status, out, err = run_command([path, "--once", option, "127.0.0.1:0",
                                        program("basic")], 15)
        c.equal("%s: exit status 1 (a usage error, as gdbserver's)" % option, 1, status, err)
        c.contains("%s: says why" % option, err, message)
        c.not_contains("%s: does not listen" % option, err, "Listening on port")


def main(args, c):
    if args.server != "btstub":
        print("SKIP tracing options are btstub's own")
        return
    path = server_path(args.server)
    check_help(path, c)
    check_bad_values(path, c)


if __name__ == "__main__":
    run_test("test_cli_trace", main)
