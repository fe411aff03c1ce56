// Replay cursor benchmark (not a test): reverse-stepi latency with 1e3, 1e6
// and 1e7 instructions of synthetic history, and the reverse-continue scan
// rate. Prints a table for docs/performance.md.
//
// The synthetic history is a 10-instruction loop (9 x `mov rax, rcx`, then
// `jne` back), with rsp/rbp snapshots as the software tracer records them.
#include <chrono>
#include <cstdio>
#include <vector>

#include "decoder/block_cache.h"
#include "decoder/block_trace.h"
#include "decoder/code_reader.h"
#include "decoder/instruction_decoder.h"
#include "decoder/replay_history.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kBase = 0x401000;
constexpr uint64_t kJne = 0x40101b;
constexpr uint64_t kAfter = 0x40101d;
constexpr uint64_t kInsnsPerLoop = 10;

std::vector<uint8_t> loop_code() {
  std::vector<uint8_t> code;
  for (int i = 0; i < 9; ++i) code.insert(code.end(), {0x48, 0x89, 0xc8});
  code.insert(code.end(), {0x75, 0xe3, 0x90});  // jne 0x401000; nop
  return code;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void run(uint64_t history_insns) {
  const std::vector<uint8_t> code = loop_code();
  decoder::BufferReader reader(kBase, code.data(), code.size());
  auto dec = decoder::InstructionDecoder::create();
  if (!dec) {
    std::printf("cannot open capstone: %s\n", dec.error().message.c_str());
    return;
  }
  decoder::BlockCache cache(*dec, reader);
  const uint64_t loops = history_insns / kInsnsPerLoop;
  decoder::BlockTrace trace(kBase, loops + 1);
  for (uint64_t i = 0; i < loops; ++i) trace.append(kJne, kBase, decoder::StackSnapshot{0x7ffe0000, 0x7ffe0100});
  const decoder::LiveState live{kAfter, {0x7ffe0000, 0x7ffe0100}};

  // Kept from one cursor to the next, as the replay engine keeps them
  // from one stop to the next.
  decoder::HistorySummaries summaries;
  summaries.use_for(trace);
  auto start = Clock::now();
  decoder::ReplayCursor cursor(trace, live, cache, &summaries);
  cursor.step_back();
  const double first_step = seconds_since(start);

  const uint64_t steps = std::min<uint64_t>(history_insns - 2, 1000000);
  start = Clock::now();
  uint64_t moved = 0;
  for (uint64_t i = 0; i < steps; ++i) moved += cursor.step_back() == decoder::ReplayStop::Moved;
  const double step_ns = seconds_since(start) * 1e9 / static_cast<double>(steps);
  volatile auto keep = cursor.stack().rsp;  // one register query, as gdb would
  (void)keep;

  // A fresh cursor (the first reverse-continue after a stop) to a
  // breakpoint one loop back: what gdb's reverse-next over a call and
  // reverse-finish do. It costs the way to the breakpoint, whatever the
  // history's length.
  start = Clock::now();
  decoder::ReplayCursor fresh(trace, live, cache);
  fresh.continue_back({kBase + 3});
  const double near_bc = seconds_since(start);

  // A breakpoint that never executes: the scan covers the whole history.
  const std::vector<uint64_t> bps = {0x500000};
  const uint64_t total = cursor.instruction_number().total;
  cursor.go_live_end();
  start = Clock::now();
  cursor.continue_back(bps);
  const double cold = seconds_since(start);
  cursor.go_live_end();
  start = Clock::now();
  cursor.continue_back(bps);
  const double warm = seconds_since(start);

  // Worst case for memory in the past: a slot above rsp that the history
  // never writes, so the walk goes back to the start of history.
  cursor.go_live_end();
  start = Clock::now();
  auto bytes = cursor.memory(0x7ffe0040, 8);
  const double far_read = seconds_since(start);
  if (bytes[0]) std::printf("(unexpectedly known byte)\n");
  // gdb reads the same slots again at every stop; after a reverse-stepi the
  // read is answered from the remembered walk.
  cursor.step_back();
  start = Clock::now();
  bytes = cursor.memory(0x7ffe0040, 8);
  const double again_read = seconds_since(start);
  if (bytes[0]) std::printf("(unexpectedly known byte)\n");
  // The next stop's cursor reads it again: the summaries of the history's
  // runs are kept, so the walk passes them.
  decoder::ReplayCursor next(trace, live, cache, &summaries);
  start = Clock::now();
  bytes = next.memory(0x7ffe0040, 8);
  const double next_read = seconds_since(start);
  if (bytes[0]) std::printf("(unexpectedly known byte)\n");

  std::printf("| %10llu | %10.1f | %14.1f | %12.1f | %14.0f | %14.0f | %12.2f | %12.1f | %12.3f |\n",
              static_cast<unsigned long long>(total), first_step * 1e6, step_ns, near_bc * 1e6,
              static_cast<double>(total) / cold / 1e6, static_cast<double>(total) / warm / 1e6, far_read * 1e3,
              again_read * 1e6, next_read * 1e3);
  if (moved != steps) std::printf("(only %llu of the steps moved)\n", static_cast<unsigned long long>(moved));
}

}  // namespace

int main() {
  std::printf("| history    | first bs   | bs (ns, avg of | first bc, one| bc scan, cold  | bc scan, warm  | far stack    | same read    | far read, next|\n");
  std::printf("| (insns)    | (us)       | <=1e6 steps)   | loop back(us)| (M insns/s)    | (M insns/s)    | read (ms)    | after bs (us)| cursor (ms)   |\n");
  std::printf("|------------|------------|----------------|--------------|----------------|----------------|--------------|--------------|---------------|\n");
  for (uint64_t n : {uint64_t{1000}, uint64_t{1000000}, uint64_t{10000000}}) run(n);
  return 0;
}
