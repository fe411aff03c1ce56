// trace_exception.cc: a C++ throw and catch for the software tracer's
// fidelity test (tests/tracing): the unwinder's indirect calls and jumps,
// personality routines and landing pads, all ordinary control transfers.
// Exit code: 9 when the exception arrived with its value.
#include <stdexcept>

namespace {

[[gnu::noinline]] int thrower(int depth) {
  if (depth == 0) throw std::runtime_error("deep");
  return thrower(depth - 1) + 1;
}

}  // namespace

int main() {
  int result = 0;
  try {
    result = thrower(3);
  } catch (const std::runtime_error& e) {
    result = e.what()[0] == 'd' ? 9 : 1;
  }
  return result;
}
