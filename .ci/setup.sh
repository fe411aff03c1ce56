# Sourced by .ci/run and .ci/demo: installs what btstub needs from Debian's
# packages (when missing) and builds it into build/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
# libipt-dev encodes Intel PT traces (decoder/pt_encoder.h); clang and its
# runtime (libFuzzer, sanitizers) build the fuzz targets; lldb (with
# lldb-server, the reference) drives test_lldb; csmith makes the random
# programs (its headers, csmith.h, are in libcsmith-dev) of
# tests/integration/test_translate_csmith.py. lua5.4, sqlite3 and
# zlib1g-dev are the real programs of tests/bench/real_programs_bench.py
# (a benchmark, not run by CI; zlib's program is built with the tests).
PACKAGES=(g++ cmake make gdb gdbserver python3 libboost-dev libcapstone-dev libipt-dev nlohmann-json3-dev catch2
          clang libclang-rt-14-dev lldb csmith libcsmith-dev
          lua5.4 sqlite3 zlib1g-dev)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "Installing: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# build_tree DIR [cmake options...]: configures and builds every target.
build_tree() {
  local dir=$1
  shift
  cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j"$(nproc)"
}

build_btstub() {
  build_tree "$BUILD" "$@"
}
