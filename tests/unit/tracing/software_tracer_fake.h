#pragma once
// A scripted stand-in for the process layer: registers and memory are set by
// the test, set_trace_stop is recorded, and helpers play the process layer's
// part (resume = before_resume, stop = on_stop at a given pc).
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "protocol/amd64_registers.h"
#include "stub/tracing/software_tracer.h"

namespace fake {

// Every branch a trace holds, oldest first.
inline std::vector<decoder::Branch> branches(const decoder::BlockTrace& trace) {
  std::vector<decoder::Branch> out;
  for (uint64_t s = trace.first_sequence(); s < trace.end_sequence(); ++s) out.push_back(trace.at(s));
  return out;
}

using protocol::Amd64Reg;
using btstub::Expected;

// tests/unit: assembled at 0x1000 (see test_software_tracer.cc for the source).
constexpr uint64_t kStart = 0x1000, kJne = 0x1009, kCall = 0x100b, kBack = 0x1010, kLoop = 0x1016,
                   kLoopJne = 0x1018, kLoopNop = 0x101a, kTgt = 0x101b, kTgtNop = 0x101d, kUd2 = 0x101e,
                   kFunc = 0x1020, kRet = 0x1025, kPtr = 0x1026;
inline const std::vector<uint8_t> kCode = {
    0xb9, 0x02, 0x00, 0x00, 0x00,        // 1000 mov ecx, 2
    0x31, 0xc0,                          // 1005 xor eax, eax
    0x85, 0xc0,                          // 1007 test eax, eax
    0x75, 0xf5,                          // 1009 jne 0x1000
    0xe8, 0x10, 0x00, 0x00, 0x00,        // 100b call 0x1020
    0xff, 0x25, 0x10, 0x00, 0x00, 0x00,  // 1010 jmp [rip+0x10] (-> [0x1026])
    0xff, 0xc9,                          // 1016 dec ecx
    0x75, 0xfc,                          // 1018 jne 0x1016
    0x90,                                // 101a nop
    0x0f, 0x05,                          // 101b syscall
    0x90,                                // 101d nop
    0x0f, 0x0b,                          // 101e ud2
    0xb8, 0x01, 0x00, 0x00, 0x00,        // 1020 mov eax, 1
    0xc3,                                // 1025 ret
    0x1b, 0x10, 0, 0, 0, 0, 0, 0,        // 1026 .quad 0x101b
};
constexpr uint64_t kStack = 0x7000;
constexpr uint64_t kZf = 1u << 6;

class Control final : public stub::process::TracedThreadControl {
 public:
  Control() {
    for (std::size_t i = 0; i < kCode.size(); ++i) memory[0x1000 + i] = kCode[i];
  }

  Expected<protocol::RegisterFile> read_registers(pid_t tid) override {
    ++register_reads;
    auto it = regs.find(tid);
    if (it == regs.end()) return btstub::make_error(btstub::ErrorCode::NoProcess, "no such thread");
    return it->second;
  }
  Expected<std::vector<uint8_t>> read_memory(uint64_t addr, std::size_t len) override {
    std::vector<uint8_t> out;
    for (uint64_t a = addr; a < addr + len; ++a) {
      auto it = memory.find(a);
      if (it == memory.end()) break;
      out.push_back(it->second);
    }
    if (out.empty()) return btstub::make_error(btstub::ErrorCode::MemoryFault, "unmapped");
    return out;
  }
  bool has_user_breakpoint(uint64_t addr) const override { return user_breakpoints.count(addr) != 0; }
  // With `copies`, a checkpoint's copy is taken (as a null one).
  Expected<std::unique_ptr<stub::process::ProcessCopy>> fork_copy(pid_t tid,
                                                                  const std::vector<pid_t>& idle = {}) override {
    last_idle = idle;
    // As the process layer: every other live thread must be idle.
    for (pid_t other : live_threads) {
      if (other != tid && std::find(idle.begin(), idle.end(), other) == idle.end()) {
        return btstub::make_error(btstub::ErrorCode::NotSupported, "another thread runs");
      }
    }
    if (copies) return std::unique_ptr<stub::process::ProcessCopy>{};
    return TracedThreadControl::fork_copy(tid, idle);
  }
  Expected<void> set_trace_stop(pid_t tid, std::optional<uint64_t> addr) override {
    ++arm_calls;
    armed[tid] = addr;
    return {};
  }

  Expected<void> set_trace_breakpoint(pid_t tid, std::optional<uint64_t> addr) override {
    ++int3_calls;
    int3[tid] = addr;
    int3s[tid].clear();
    if (addr) int3s[tid].push_back(*addr);
    return {};
  }
  Expected<void> set_trace_breakpoints(pid_t tid, const std::vector<uint64_t>& addrs) override {
    if (addrs.size() <= 1) return set_trace_breakpoint(tid, addrs.empty() ? std::nullopt : std::optional(addrs[0]));
    ++int3_calls;
    int3[tid] = std::nullopt;  // several: see int3s
    int3s[tid] = addrs;
    return {};
  }
  Expected<void> write_registers(pid_t tid, const protocol::RegisterFile& in) override {
    auto it = regs.find(tid);
    if (it == regs.end()) return btstub::make_error(btstub::ErrorCode::NoProcess, "no such thread");
    for (unsigned n = 0; n < protocol::kAmd64RegisterCount; ++n) {
      if (!in.available(n)) continue;
      std::memcpy(it->second.bytes(n), in.bytes(n), protocol::amd64_register_size(n));
      it->second.set_available(n, true);
    }
    ++register_writes;
    return {};
  }
  // Only mapped bytes (present in `memory`) are writable.
  Expected<void> write_memory(uint64_t addr, const std::vector<uint8_t>& bytes) override {
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      if (memory.count(addr + i) == 0) return btstub::make_error(btstub::ErrorCode::MemoryFault, "unmapped");
    }
    for (std::size_t i = 0; i < bytes.size(); ++i) memory[addr + i] = bytes[i];
    return {};
  }
  void map(uint64_t addr, std::size_t len) {
    for (uint64_t a = addr; a < addr + len; ++a) memory.emplace(a, 0);
  }
  uint64_t read_u64(uint64_t addr) {
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = (value << 8) | memory[addr + i];
    return value;
  }

  void set_reg(pid_t tid, Amd64Reg reg, uint64_t value) { regs[tid].set_u64(reg, value); }
  uint64_t pc(pid_t tid) { return regs[tid].get_u64(Amd64Reg::rip); }
  void write_u64(uint64_t addr, uint64_t value) {
    for (int i = 0; i < 8; ++i) memory[addr + i] = static_cast<uint8_t>(value >> (8 * i));
  }
  // `ret` will go to `target`.
  void push_return(pid_t tid, uint64_t target) {
    set_reg(tid, Amd64Reg::rsp, kStack);
    write_u64(kStack, target);
  }

  std::map<pid_t, protocol::RegisterFile> regs;
  std::map<uint64_t, uint8_t> memory;
  std::set<uint64_t> user_breakpoints;
  bool copies = false;
  bool signal_waits(pid_t tid, int signal) override { return waiting_signals.count({tid, signal}) != 0; }
  bool watched(uint64_t begin, uint64_t end) const override {
    return std::any_of(watches.begin(), watches.end(),
                       [&](const auto& w) { return w.first < end && begin < w.second; });
  }

  bool hw_breakpoint_at(uint64_t addr) const override { return hw_breakpoints.count(addr) != 0; }

  std::vector<std::pair<uint64_t, uint64_t>> watches;  // the client's watched [begin, end)s
  std::set<uint64_t> hw_breakpoints;                   // the client's Z1 addresses

  std::set<std::pair<pid_t, int>> waiting_signals;  // signal_waits' answers
  std::vector<pid_t> last_idle;   // what the last fork_copy was told
  std::set<pid_t> live_threads;   // the program's threads, for fork_copy's check
  std::map<pid_t, std::optional<uint64_t>> armed;
  std::map<pid_t, std::optional<uint64_t>> int3;  // set_trace_breakpoint's per thread
  std::map<pid_t, std::vector<uint64_t>> int3s;   // set_trace_breakpoints' per thread
  int arm_calls = 0;
  int int3_calls = 0;
  int register_reads = 0;
  int register_writes = 0;
};

// A tracer with int3 trace stops (TraceStops::Breakpoint), default config.
inline std::unique_ptr<stub::tracing::SoftwareTracer> breakpoint_tracer() {
  auto made = stub::tracing::SoftwareTracer::create({}, false, stub::tracing::TraceStops::Breakpoint);
  REQUIRE(made.ok());
  return std::move(made).value();
}

// Plays the process layer for one thread.
struct Driver {
  stub::tracing::SoftwareTracer& tracer;
  Control& control;
  pid_t tid;

  stub::process::StepKind resume(stub::process::StepKind kind = stub::process::StepKind::Continue, int signal = 0) {
    return tracer.before_resume(control, tid, kind, signal);
  }
  stub::process::TraceVerdict trace_stop_at(uint64_t pc) {
    stub::process::TracedStop stop;
    stop.tid = tid;
    stop.signal = SIGTRAP;
    stop.trace_stop_hit = true;
    return stop_at(pc, stop);
  }
  stub::process::TraceVerdict step_done_at(uint64_t pc) {
    stub::process::TracedStop stop;
    stop.tid = tid;
    stop.signal = SIGTRAP;
    stop.single_stepped = true;
    return stop_at(pc, stop);
  }
  stub::process::TraceVerdict signal_at(uint64_t pc, int signal) {
    stub::process::TracedStop stop;
    stop.tid = tid;
    stop.signal = signal;
    return stop_at(pc, stop);
  }
  stub::process::TraceVerdict breakpoint_at(uint64_t pc) {
    stub::process::TracedStop stop;
    stop.tid = tid;
    stop.signal = SIGTRAP;
    stop.software_breakpoint = true;
    return stop_at(pc, stop);
  }
  stub::process::TraceVerdict stop_at(uint64_t pc, stub::process::TracedStop stop) {
    control.set_reg(tid, Amd64Reg::rip, pc);
    stop.pc = pc;
    return tracer.on_stop(control, stop);
  }
  std::optional<uint64_t> armed() { return control.armed[tid]; }
};

}  // namespace fake
