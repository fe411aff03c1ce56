#!/usr/bin/env bash
# .ci/run's conformance stage: GDB's own gdb.server suite on both gdbserver
# boards and its gdb.btrace suite, with btstub as the server; fails on any
# result known/ does not name (tests/gdbsuite/check.py).
#   tests/gdbsuite/ci.sh [BTSTUB]     (default build/btstub)
set -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
stub=${1:-$here/../../build/btstub}
status=0
for run in "stub-gdbserver gdb.server" "stub-extended-gdbserver gdb.server" "stub-gdbserver gdb.btrace"; do
  set -- $run
  out=$("$here/run.sh" "$1" "$stub" "$2" | tail -1) || { echo "gdbsuite: $1 $2 could not run"; status=1; continue; }
  python3 "$here/check.py" "$out/gdb.sum" "$here/known/$1.$2.txt" || status=1
done
exit $status
