#pragma once
// A scripted stand-in for the program: fake memory and registers, a queue of
// events to report, and a log of what the session asked it to do.
#include <deque>
#include <set>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "stub/process/process.h"

namespace test {

class FakeProcess : public stub::process::Process {
 public:
  pid_t pid_ = 100;
  std::vector<pid_t> threads_{100};
  bool attached_ = false;
  std::optional<std::string> throw_on_read;      // read_memory throws this (a library that throws)
  std::map<uint64_t, uint8_t> memory;           // sparse; absent bytes are unmapped
  std::map<pid_t, protocol::RegisterFile> regs;
  protocol::Amd64Features features;  // what register_features() says
  std::deque<stub::process::ProcessEvent> events;        // what poll_event returns next
  std::vector<std::string> log;                 // "resume 100 step 0", "interrupt", ...

  FakeProcess() {
    protocol::RegisterFile r;
    r.set_all_available(true);
    r.set_u64(protocol::Amd64Reg::rip, 0x401000);
    r.set_u64(protocol::Amd64Reg::rsp, 0x7ffe0000);
    regs[100] = r;
  }

  pid_t pid() const override { return pid_; }
  std::vector<pid_t> threads() const override { return threads_; }
  bool attached() const override { return attached_; }

  protocol::Amd64Features register_features() const override { return features; }
  btstub::Expected<protocol::RegisterFile> read_registers(pid_t tid) override {
    auto it = regs.find(tid);
    if (it == regs.end()) return btstub::make_error(btstub::ErrorCode::NoProcess, "no such thread");
    return it->second;
  }
  btstub::Expected<void> write_registers(pid_t tid, const protocol::RegisterFile& r) override {
    regs[tid] = r;
    log.push_back("write_registers " + std::to_string(tid));
    return {};
  }
  btstub::Expected<std::vector<uint8_t>> read_memory(uint64_t addr, std::size_t len) override {
    if (throw_on_read) throw std::runtime_error(*throw_on_read);
    std::vector<uint8_t> out;
    for (std::size_t i = 0; i < len; ++i) {
      auto it = memory.find(addr + i);
      if (it == memory.end()) break;
      out.push_back(it->second);
    }
    if (out.empty()) return btstub::make_error(btstub::ErrorCode::MemoryFault, "Cannot access memory");
    return out;
  }
  btstub::Expected<void> write_memory(uint64_t addr, const std::vector<uint8_t>& bytes) override {
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      if (memory.count(addr + i) == 0) return btstub::make_error(btstub::ErrorCode::MemoryFault, "unmapped");
    }
    for (std::size_t i = 0; i < bytes.size(); ++i) memory[addr + i] = bytes[i];
    return {};
  }
  btstub::Expected<void> insert_breakpoint(uint64_t addr) override {
    if (memory.count(addr) == 0) return btstub::make_error(btstub::ErrorCode::MemoryFault, "unmapped");
    log.push_back("insert " + std::to_string(addr));
    return {};
  }
  btstub::Expected<void> remove_breakpoint(uint64_t addr) override {
    log.push_back("remove " + std::to_string(addr));
    return {};
  }
  bool running = false;  // resumed at least once (events do not clear it)
  bool has_running_threads() const override { return running; }
  btstub::Expected<void> resume(pid_t tid, stub::process::StepKind kind, int signal) override {
    running = true;
    log.push_back("resume " + std::to_string(tid) +
                  (kind == stub::process::StepKind::SingleStep ? " step " : " cont ") + std::to_string(signal));
    return {};
  }
  std::optional<stub::process::ProcessEvent> poll_event() override {
    if (events.empty()) return std::nullopt;
    auto e = events.front();
    events.pop_front();
    return e;
  }
  btstub::Expected<stub::process::ProcessEvent> wait_event() override {
    if (auto e = poll_event()) return *e;
    return btstub::make_error(btstub::ErrorCode::Internal, "no scripted event");
  }
  btstub::Expected<void> set_syscall_catch(const std::optional<std::set<int>>& caught) override {
    std::string line = "catch syscalls";
    if (!caught) line += " off";
    for (int n : caught.value_or(std::set<int>{})) line += " " + std::to_string(n);
    log.push_back(line);
    return {};
  }
  btstub::Expected<void> interrupt() override {
    log.push_back("interrupt");
    return {};
  }
  btstub::Expected<void> kill() override {
    log.push_back("kill");
    return {};
  }
  bool fail_detach = false;
  void deliver_on_detach(pid_t tid, int signal) override {
    log.push_back("deliver on detach " + std::to_string(tid) + " " + std::to_string(signal));
  }
  btstub::Expected<void> detach() override {
    log.push_back("detach");
    if (fail_detach) return btstub::make_error(btstub::ErrorCode::NoProcess, "cannot detach " + std::to_string(pid_));
    return {};
  }
  btstub::Expected<std::string> read_auxv() override { return std::string("\x06\0\0\0\0\0\0\0", 8); }
  btstub::Expected<std::string> exec_file() override { return std::string("/bin/fake"); }
};

}  // namespace test
