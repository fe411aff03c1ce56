// trace_exception.cc: a C++ throw and catch for the software tracer's
// fidelity test (tests/tracing): the unwinder's indirect calls and jumps,
// personality routines and landing pads, all ordinary control transfers.
// Exit code: 9 when the exception arrived with its value.
// main sits alone in section "traced_main": the fidelity test starts both
// of its runs there (--from-section), skipping libstdc++'s loading and
// relocation, which is most of the program's instructions and already
// covered by the C programs' start-up.
#include <stdexcept>

namespace {

[[gnu::noinline]] int thrower(int depth) {
  if (depth == 0) throw std::runtime_error("deep");
  return thrower(depth - 1) + 1;
}

}  // namespace

[[gnu::section("traced_main")]] int main() {
  int result = 0;
  try {
    result = thrower(3);
  } catch (const std::runtime_error& e) {
    result = e.what()[0] == 'd' ? 9 : 1;
  }
  return result;
}
