#!/usr/bin/env bash
# Runs part of GDB's own DejaGnu testsuite with a gdbserver-compatible stub
# as the server, from this repository alone.
#
#   tests/gdbsuite/run.sh BOARD STUB TESTS...
#
#   BOARD  stub-gdbserver | stub-extended-gdbserver (target remote /
#          extended-remote to STUB, as the stock native-*gdbserver boards);
#          stub-reverse | stub-extended-reverse (the same, telling gdb the
#          target runs backwards itself: gdb.reverse without `record full`)
#   STUB   btstub, or /usr/bin/gdbserver for the reference
#   TESTS  files or folders of gdb/testsuite: gdb.server gdb.btrace/step.exp
#
# The testsuite is the installed gdb's own: Debian's gdb source package of
# the installed version, fetched once with `apt-get source` into
# $GDBSUITE_DIR (default /var/tmp/btstub-gdbsuite) and configured out of
# tree there. Results go to $GDBSUITE_OUT (default build-gdbsuite/ in the
# repository)/BOARD.STUB.TESTS/: gdb.sum, gdb.log, runtest.out.
# The last line printed is the run's folder. Exit status: 0 when runtest
# ran (whatever it counted: tests/gdbsuite/check.py judges), 2 on a usage
# or set-up error. GDBSUITE_TIMEOUT (default 1200 s) bounds the run.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
WORK=${GDBSUITE_DIR:-/var/tmp/btstub-gdbsuite}
OUT_ROOT=${GDBSUITE_OUT:-$root/build-gdbsuite}
TIMEOUT=${GDBSUITE_TIMEOUT:-1200}

die() { echo "gdbsuite: $*" >&2; exit 2; }
[ $# -ge 3 ] || { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
BOARD=$1 STUB=$2
shift 2
STUB=$(readlink -f "$STUB") && [ -x "$STUB" ] || die "STUB '$2' is not an executable"
[ -f "$here/boards/$BOARD.exp" ] || die "no board $BOARD in $here/boards"

# --- set-up: dejagnu, the source package, a configured testsuite ---------
need=()
command -v runtest >/dev/null || need+=(dejagnu)
command -v expect >/dev/null || need+=(expect)
command -v gdb >/dev/null || need+=(gdb)
command -v gdbserver >/dev/null || need+=(gdbserver)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null ||
    die "cannot install ${need[*]}"
fi
version=$(dpkg-query -W -f='${Version}' gdb) || die "gdb is not a Debian package here"
upstream=${version%-*}
upstream=${upstream#*:}
SRC=$WORK/gdb-$upstream
if [ ! -f "$SRC/gdb/testsuite/configure" ]; then
  mkdir -p "$WORK" && cd "$WORK" || die "cannot make $WORK"
  tarball() { ls gdb_"$upstream".orig.tar.* 2>/dev/null | grep -v '\.asc$' | head -1; }
  if [ -z "$(tarball)" ]; then
    # Source lists: Debian's images ship binary ones only.
    if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      [ -f /etc/apt/sources.list.d/debian.sources ] || die "no deb-src source list and no debian.sources to make one from"
      sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >/etc/apt/sources.list.d/btstub-debsrc.sources
    fi
    apt-get update -qq
    apt-get source --download-only "gdb=$version" >/dev/null 2>&1 || die "apt-get source gdb=$version failed"
  fi
  # Only the testsuite and what its configure and Makefile include (32 MB of 220).
  tar xf "$(tarball)" --wildcards --no-wildcards-match-slash \
    "gdb-$upstream/gdb/testsuite/*" "gdb-$upstream/gdb/*.mk" "gdb-$upstream/config.*" \
    "gdb-$upstream/install-sh" "gdb-$upstream/config/*" || die "cannot unpack gdb's testsuite"
fi
if [ ! -f "$WORK/build/site.exp" ]; then
  mkdir -p "$WORK/build" && cd "$WORK/build" || die "cannot make $WORK/build"
  { "$SRC/gdb/testsuite/configure" && make site.exp; } >/dev/null || die "cannot configure gdb's testsuite"
fi

# --- the run --------------------------------------------------------------
TESTS=()
for t in "$@"; do
  t=${t%/}
  if [ -d "$SRC/gdb/testsuite/$t" ]; then
    for f in "$SRC/gdb/testsuite/$t"/*.exp; do TESTS+=("$t/$(basename "$f")"); done
  elif [ -f "$SRC/gdb/testsuite/$t" ]; then
    TESTS+=("$t")
  else
    die "no test or folder $t in $SRC/gdb/testsuite"
  fi
done
# (No "+" in the name: gdb.btrace/gcore.exp puts the output path in a regex.)
OUT=$OUT_ROOT/$BOARD.$(basename "$STUB").$(echo "$*" | tr ' /' '_-')
rm -rf "$OUT" && mkdir -p "$OUT" || die "cannot make $OUT"
# runtest reads ./site.exp (objdir = cwd); ours adds the boards and gdb.
cp "$WORK/build/site.exp" "$OUT/site.exp"
ln -s "$WORK/build/lib" "$OUT/lib"
cat >>"$OUT/site.exp" <<SITE
set GDB $(command -v gdb)
set GDB_DATA_DIRECTORY /usr/share/gdb
lappend boards_dir $here/boards
SITE

# Everything the run starts carries this marker, so that what is left of
# it (expect puts each spawn in a session of its own) can be found after.
export GDBSUITE_RUN=$OUT STUB
cd "$OUT" || exit 2
echo "gdbsuite: $BOARD with $STUB: ${#TESTS[@]} files"
timeout --kill-after=30 "$TIMEOUT" runtest --status --tool gdb --srcdir "$SRC/gdb/testsuite" --outdir "$OUT" \
  --target_board="$BOARD" "${TESTS[@]}" </dev/null >"$OUT/runtest.out" 2>&1
rc=$?
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  [ "$pid" = $$ ] && continue
  { tr "\0" "\n" <"$p/environ"; } 2>/dev/null | grep -qxF "GDBSUITE_RUN=$OUT" && kill -9 "$pid" 2>/dev/null
done
case $rc in
  124 | 137) echo "gdbsuite: runtest did not end within ${TIMEOUT}s; the counts are partial" >>"$OUT/gdb.sum" ;;
esac
grep -E '^# of ' "$OUT/gdb.sum" 2>/dev/null
echo "$OUT"
