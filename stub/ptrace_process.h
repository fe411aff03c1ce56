#pragma once
// stub::Process on Linux ptrace (x86-64). Threads are auto-attached on clone
// and run freely; only the thread that reports an event stops (all-stop
// across threads is not implemented yet).
//
// ptrace binds a tracee to the tracing *thread*: every call on one object
// must come from the thread that created it. Events are reaped with
// waitpid(tid) while one thread is known and waitpid(-1, __WALL) otherwise,
// so nothing else in the stub may reap children with waitpid(-1).
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "stub/process.h"

namespace stub {

class PtraceProcess final : public Process {
 public:
  // Starts argv (behind the wrapper, if any) stopped at its first
  // instruction, in its own process group, killed if we die.
  static Expected<std::unique_ptr<PtraceProcess>> launch(const LaunchOptions& options);
  // Attaches to every thread of a running process and leaves it stopped.
  static Expected<std::unique_ptr<PtraceProcess>> attach(pid_t pid);

  // A launched process still present is killed, an attached one detached,
  // so a dropped connection never leaves a traced orphan behind.
  ~PtraceProcess() override;
  PtraceProcess(const PtraceProcess&) = delete;
  PtraceProcess& operator=(const PtraceProcess&) = delete;

  pid_t pid() const override { return pid_; }
  std::vector<pid_t> threads() const override;
  bool attached() const override { return attached_; }

  Expected<protocol::RegisterFile> read_registers(pid_t tid) override;
  Expected<void> write_registers(pid_t tid, const protocol::RegisterFile& regs) override;

  Expected<std::vector<uint8_t>> read_memory(uint64_t addr, std::size_t len) override;
  Expected<void> write_memory(uint64_t addr, const std::vector<uint8_t>& bytes) override;

  Expected<void> insert_breakpoint(uint64_t addr) override;
  Expected<void> remove_breakpoint(uint64_t addr) override;

  Expected<void> resume(pid_t tid, StepKind kind, int signal) override;
  std::optional<ProcessEvent> poll_event() override;
  Expected<ProcessEvent> wait_event() override;

  Expected<void> interrupt() override;
  Expected<void> kill() override;
  Expected<void> detach() override;

  Expected<std::string> read_auxv() override;
  Expected<std::string> exec_file() override;

  // Reaps launched programs that were detached earlier and have exited since
  // (they stay our children). Never blocks.
  static void reap_detached_children();

 private:
  struct ThreadState {
    bool running = false;
    bool stepping = false;
    bool continue_after_step = false;  // stepping off a breakpoint for a continue
    StepKind last_kind = StepKind::Continue;
    std::optional<uint64_t> reinsert_at;  // breakpoint lifted for a single-step
  };

  PtraceProcess(pid_t pid, bool attached);

  Expected<void> finish_launch(bool wrapped);
  void open_memory();
  std::vector<uint8_t> raw_read(uint64_t addr, std::size_t len);
  Expected<void> raw_write(uint64_t addr, const std::vector<uint8_t>& bytes);
  Expected<void> poke_write(uint64_t addr, const std::vector<uint8_t>& bytes);
  Expected<uint64_t> read_pc(pid_t tid);

  Expected<std::optional<ProcessEvent>> next_event(bool block);
  std::optional<ProcessEvent> handle_status(pid_t tid, int status);
  std::optional<ProcessEvent> handle_sigtrap(pid_t tid, ThreadState& thread);
  void handle_clone(pid_t parent);
  void handle_exec();
  void mark_gone();
  void stop_running_thread(pid_t tid);

  pid_t pid_ = 0;
  bool attached_ = false;
  bool alive_ = true;
  int mem_fd_ = -1;
  std::map<pid_t, ThreadState> threads_;
  std::map<uint64_t, uint8_t> breakpoints_;  // address -> original byte
  std::map<pid_t, int> early_status_;  // statuses of threads not known yet
};

}  // namespace stub
