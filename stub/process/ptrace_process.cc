// Launch, attach, registers and memory of the traced program; every ptrace
// request goes through do_ptrace() (ptrace_calls.cc).
#include "stub/process/ptrace_process.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <cerrno>
#include <cstring>
#include <set>

#include "stub/process/proc_file.h"
#include "stub/process/proc_maps.h"
#include "stub/process/ptrace_internal.h"
#include "stub/process/register_mapping.h"
#include "stub/process/shell_command.h"

namespace stub::process {

namespace {

using namespace ptrace_detail;
using btstub::Error;
using btstub::ErrorCode;
using btstub::make_error;

// Large enough for any XSAVE layout (AMX included); the kernel shrinks
// iov_len to the real size.
constexpr std::size_t kXstateMaxSize = 32768;

Error memory_fault(uint64_t addr) {
  return make_error(ErrorCode::MemoryFault, "Cannot access memory at address " + hex(addr));
}

std::vector<pid_t> list_tasks(pid_t pid) {
  std::vector<pid_t> tids;
  std::string path = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return tids;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9') tids.push_back(std::atoi(entry->d_name));
  }
  ::closedir(dir);
  return tids;
}

std::vector<pid_t>& detached_children() {
  static std::vector<pid_t> pids;
  return pids;
}

// Why the child could not become the program; sent through a CLOEXEC pipe
// that a successful exec closes.
struct ChildFailure {
  int stage;  // 0: ptrace(PTRACE_TRACEME), 1: exec, 2: chdir
  int error;
};

// The signals btstub's own parent left ignored, read before btstub changed
// any disposition (static initialization, before main). Ignored
// dispositions survive exec: gdbserver hands on the ones it inherited
// (under gdb's `target remote |`, SIGPIPE ignored; from `nohup` or a
// shell's `trap ''`, others), while btstub ignores some for itself
// (SIGPIPE, SIGTTOU, SIGTTIN) that are not the program's to inherit.
const sigset_t kIgnoredAtStart = [] {
  sigset_t ignored;
  sigemptyset(&ignored);
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction now {};
    if (::sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN) sigaddset(&ignored, sig);
  }
  return ignored;
}();

[[noreturn]] void report_child_failure(int fd, int stage, int error) {
  ChildFailure failure{stage, error};
  ssize_t ignored = ::write(fd, &failure, sizeof failure);
  (void)ignored;
  ::_exit(127);
}

[[noreturn]] void run_child(char* const* argv, char* const* envp, const LaunchOptions& options, int report_fd) {
  // Own process group, as under gdbserver: btstub's group and the program's
  // get their signals apart. Made the terminal's foreground group
  // (LaunchOptions::foreground), it is the program that a Ctrl-C typed at
  // btstub's terminal interrupts, which gdb then sees as a SIGINT stop.
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // What btstub changed for itself goes back to what it inherited (handlers
  // end at exec; ignoring would not). SIGTTOU and SIGTTIN: ignored by the
  // server that owns a terminal (stub/server/terminal.h); the program must
  // be stopped by them as anywhere, unless btstub's parent ignored them.
  for (int sig : {SIGPIPE, SIGINT, SIGCHLD, SIGTERM, SIGTTOU, SIGTTIN}) {
    ::signal(sig, sigismember(&kIgnoredAtStart, sig) == 1 ? SIG_IGN : SIG_DFL);
  }
  if (options.stdio_to_stderr) {
    int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    // The program starts with gdbserver's descriptors: 0-2 and what btstub
    // itself inherited, not this one too.
    if (null_fd > STDIN_FILENO) ::close(null_fd);
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    // gdbserver's words, which gdb's testsuite waits for (non-existing-program.exp).
    static constexpr char kRedirected[] = "stdin/stdout redirected\n";
    ssize_t ignored = ::write(STDERR_FILENO, kRedirected, sizeof kRedirected - 1);
    (void)ignored;
  }
  if (options.disable_randomization) {
    int persona = ::personality(0xffffffff);
    if (persona != -1) ::personality(static_cast<unsigned long>(persona) | ADDR_NO_RANDOMIZE);
  }
  if (!options.working_dir.empty() && ::chdir(options.working_dir.c_str()) != 0) {
    report_child_failure(report_fd, 2, errno);
  }
  if (!do_ptrace(PTRACE_TRACEME, 0, 0, nullptr)) report_child_failure(report_fd, 0, errno);
  // The program's PATH, as a shell would search it: its environment's.
  if (envp != nullptr) {
    ::execvpe(argv[0], argv, envp);
  } else {
    ::execvp(argv[0], argv);
  }
  report_child_failure(report_fd, 1, errno);
}

struct FpBuffer {
  std::vector<uint8_t> bytes;
  int note = 0;
};

Expected<FpBuffer> read_fp_buffer(pid_t tid) {
  FpBuffer fp;
  fp.bytes.assign(kXstateMaxSize, 0);
  iovec iov{fp.bytes.data(), fp.bytes.size()};
  if (do_ptrace(PTRACE_GETREGSET, tid, NT_X86_XSTATE, &iov)) {
    fp.note = NT_X86_XSTATE;
  } else {
    fp.bytes.assign(kFxsaveSize, 0);
    iov = iovec{fp.bytes.data(), fp.bytes.size()};
    auto r = do_ptrace(PTRACE_GETREGSET, tid, NT_PRFPREG, &iov);
    if (!r) return r.error();
    fp.note = NT_PRFPREG;
  }
  if (iov.iov_len < kFxsaveSize) {
    return make_error(ErrorCode::Internal, "Short floating-point register set from the kernel");
  }
  fp.bytes.resize(iov.iov_len);
  normalize_xsave(fp.bytes);
  return fp;
}

}  // namespace

PtraceProcess::PtraceProcess(pid_t pid, bool attached) : pid_(pid), attached_(attached) {
  WaitRoutes::instance().enroll(this);
}

PtraceProcess::~PtraceProcess() {
  if (held_child_) (void)detach_fork_child();  // a fork child nobody followed runs free
  if (alive_) {
    if (attached_) {
      (void)detach();
    } else {
      (void)kill();
    }
  }
  if (mem_fd_ >= 0) ::close(mem_fd_);
  WaitRoutes::instance().leave(this);
  reap_detached_children();
}

void PtraceProcess::reap_detached_children() {
  auto& pids = detached_children();
  std::erase_if(pids, [](pid_t pid) {
    int status = 0;
    return wait_retry(pid, &status, WNOHANG) != 0;
  });
}

Expected<std::unique_ptr<PtraceProcess>> PtraceProcess::launch(const LaunchOptions& options) {
  reap_detached_children();
  if (options.argv.empty()) return make_error(ErrorCode::InvalidArgument, "No program to run");
  std::vector<std::string> args = options.wrapper;
  args.insert(args.end(), options.argv.begin(), options.argv.end());
  if (!options.shell.empty()) args = shell_argv(options.shell, args);
  std::vector<char*> cargs;
  for (auto& arg : args) cargs.push_back(arg.data());
  cargs.push_back(nullptr);
  std::vector<std::string> environment = options.environment.value_or(std::vector<std::string>{});
  std::vector<char*> cenv;
  for (auto& entry : environment) cenv.push_back(entry.data());
  cenv.push_back(nullptr);

  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    return make_error(ErrorCode::IoError, std::string("pipe: ") + std::strerror(errno));
  }
  pid_t child = ::fork();
  if (child < 0) {
    int err = errno;
    ::close(report[0]);
    ::close(report[1]);
    return make_error(ErrorCode::Internal, std::string("fork: ") + std::strerror(err));
  }
  if (child == 0) {
    ::close(report[0]);
    run_child(cargs.data(), options.environment ? cenv.data() : nullptr, options, report[1]);
  }
  ::close(report[1]);
  ::setpgid(child, child);  // also done by the child; whoever is first wins
  // Before the wrapper (if any) runs, as gdbserver does: a terminal that
  // btstub has (none: the call fails) is the program's while it is debugged.
  if (options.foreground) (void)::tcsetpgrp(STDERR_FILENO, child);

  ChildFailure failure{};
  ssize_t n;
  do {
    n = ::read(report[0], &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    int status = 0;
    wait_retry(child, &status, 0);
    if (failure.stage == 2) {
      // gdbserver's words (fork_inferior).
      return make_error(ErrorCode::IoError,
                        "Couldn't chdir to " + options.working_dir + ": " + std::strerror(failure.error));
    }
    std::string what = failure.stage == 0 ? "Cannot trace " : "Cannot exec ";
    return make_error(ErrorCode::IoError, what + args[0] + ": " + std::strerror(failure.error));
  }

  // From here on, dropping `process` kills the child.
  std::unique_ptr<PtraceProcess> process(new PtraceProcess(child, false));
  process->threads_[child] = ThreadState{};
  // Each of the shell and the wrapper execs once more before the program.
  const int execs_before = (options.shell.empty() ? 0 : 1) + (options.wrapper.empty() ? 0 : 1);
  if (auto r = process->finish_launch(execs_before); !r) {
    if (r.error().code == ErrorCode::NoProcess) return r.error();  // gdbserver's words already
    return make_error(r.error().code, "During startup of " + options.argv[0] + ": " + r.error().message);
  }
  return process;
}

namespace {

// A process that ended before the program ran, in gdbserver's words
// (startup_inferior): the shell's 127 for a program it cannot find, say.
Error ended_during_startup(int status) {
  if (WIFEXITED(status)) {
    return make_error(ErrorCode::NoProcess,
                      "During startup program exited with code " + std::to_string(WEXITSTATUS(status)) + ".");
  }
  if (WIFSIGNALED(status)) {
    const char* abbrev = ::sigabbrev_np(WTERMSIG(status));
    return make_error(ErrorCode::NoProcess, std::string("During startup program terminated with signal SIG") +
                                                (abbrev != nullptr ? abbrev : "?") + ", " +
                                                ::strsignal(WTERMSIG(status)) + ".");
  }
  return make_error(ErrorCode::NoProcess, "program exited before its first instruction");
}

}  // namespace

Expected<void> PtraceProcess::finish_launch(int execs_before) {
  int status = 0;
  if (wait_retry(pid_, &status, __WALL) != pid_ || !WIFSTOPPED(status)) {
    mark_gone();
    return ended_during_startup(status);
  }
  long opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;
  if (auto r = do_ptrace(PTRACE_SETOPTIONS, pid_, 0, reinterpret_cast<void*>(opts)); !r) {
    return r.error();
  }
  // Through a shell or a wrapper, the first stop is their own exec; run
  // them until they have exec'd the real program.
  int deliver = 0;
  while (execs_before > 0) {
    if (auto r = do_ptrace(PTRACE_CONT, pid_, 0, signal_arg(deliver)); !r) return r.error();
    if (wait_retry(pid_, &status, __WALL) != pid_ || !WIFSTOPPED(status)) {
      mark_gone();
      return ended_during_startup(status);
    }
    if ((status >> 16) == PTRACE_EVENT_EXEC && --execs_before == 0) {
      // The program stands in its exec event stop, still inside execve: a
      // step from there traps on the way back to user space having run
      // nothing, so a client's first stepi would run no instruction
      // (gdb.btrace/reconnect.exp counts them). That empty step is taken
      // here; the program then stands where a direct exec leaves it. A
      // signal that comes meanwhile (a Ctrl-C, another process's kill) is
      // the program's: taken off for the step, sent again after it, so the
      // first resume reports it.
      std::vector<int> arrived;
      for (int attempt = 0; attempt < 64; ++attempt) {
        if (auto r = do_ptrace(PTRACE_SINGLESTEP, pid_, 0, nullptr); !r) return r.error();
        if (wait_retry(pid_, &status, __WALL) != pid_ || !WIFSTOPPED(status)) {
          mark_gone();
          return ended_during_startup(status);
        }
        if ((status >> 16) != 0 || WSTOPSIG(status) == SIGTRAP) break;
        arrived.push_back(WSTOPSIG(status));
      }
      for (int signal : arrived) requeue_signal(pid_, signal);
      break;
    }
    deliver = ((status >> 16) == 0 && WSTOPSIG(status) != SIGTRAP) ? WSTOPSIG(status) : 0;
  }
  // Forks are followed only from the program on: a wrapper's children are
  // none of our business (ptrace_fork.cc).
  opts = ptrace_options(false);
  if (auto r = do_ptrace(PTRACE_SETOPTIONS, pid_, 0, reinterpret_cast<void*>(opts)); !r) {
    return r.error();
  }
  open_memory();
  return {};
}

Expected<std::unique_ptr<PtraceProcess>> PtraceProcess::attach(pid_t pid) {
  reap_detached_children();
  auto fail = [pid](int err) {
    return make_error(err == ESRCH ? ErrorCode::NoProcess : ErrorCode::IoError,
                      "Cannot attach to process " + std::to_string(pid) + ": " + std::strerror(err));
  };
  if (pid <= 0 || pid == ::getpid()) return fail(pid <= 0 ? ESRCH : EPERM);
  if (::kill(pid, 0) != 0 && errno == ESRCH) return fail(ESRCH);

  std::unique_ptr<PtraceProcess> process(new PtraceProcess(pid, true));
  // Threads may be created while we attach; repeat until no new one shows up.
  bool found_new = true;
  while (found_new) {
    found_new = false;
    std::vector<pid_t> tids = list_tasks(pid);
    if (tids.empty()) tids.push_back(pid);
    for (pid_t tid : tids) {
      if (process->threads_.count(tid)) continue;
      if (!do_ptrace(PTRACE_ATTACH, tid, 0, nullptr)) {
        if (tid == pid) {
          int err = errno;
          process->alive_ = false;  // nothing attached yet
          return fail(err);
        }
        continue;  // the thread exited meanwhile
      }
      int status = 0;
      if (wait_retry(tid, &status, __WALL) != tid || !WIFSTOPPED(status)) {
        if (tid == pid) {
          process->mark_gone();
          return fail(ESRCH);
        }
        continue;
      }
      const long opts = process->ptrace_options(false);
      (void)do_ptrace(PTRACE_SETOPTIONS, tid, 0, reinterpret_cast<void*>(opts));
      process->threads_[tid] = ThreadState{};
      found_new = true;
    }
  }
  process->open_memory();
  return process;
}

void PtraceProcess::open_memory() {
  if (mem_fd_ >= 0) ::close(mem_fd_);
  std::string path = "/proc/" + std::to_string(pid_) + "/mem";
  mem_fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
}

void PtraceProcess::mark_gone() {
  alive_ = false;
  tracer_shared_.clear();
  tracer_mappings_.clear();
  threads_.clear();
  client_int3s_.clear();
  breakpoints_.edit().clear();
  trace_int3s_.edit().clear();
  vfork_parent_ = 0;
  recheck_pending_ = false;
  replay_.clear();
  WaitRoutes::instance().drop_handed(this);
  WaitRoutes::instance().forget_unclaimed_of(this);
  if (mem_fd_ >= 0) ::close(mem_fd_);
  mem_fd_ = -1;
}

Expected<protocol::RegisterFile> PtraceProcess::read_registers(pid_t tid) {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  return read_thread_registers(tid);
}

// The kernel enables the same XSAVE components (XCR0) for every process.
protocol::Amd64Features PtraceProcess::register_features() const {
  return features_of(host_xsave_layout().xcr0);
}

Expected<protocol::RegisterFile> ptrace_detail::read_thread_registers(pid_t tid) {
  user_regs_struct gregs{};
  if (auto r = do_ptrace(PTRACE_GETREGS, tid, 0, &gregs); !r) return r.error();
  auto fp = read_fp_buffer(tid);
  if (!fp) return fp.error();
  protocol::RegisterFile regs;
  gregs_to_file(gregs, regs);
  fxsave_to_file(fp->bytes.data(), regs);
  if (fp->note == NT_X86_XSTATE) xsave_to_file(fp->bytes, host_xsave_layout(), regs);
  return regs;
}

Expected<protocol::RegisterFile> PtraceProcess::read_general_registers(pid_t tid) {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  user_regs_struct gregs{};
  if (auto r = do_ptrace(PTRACE_GETREGS, tid, 0, &gregs); !r) return r.error();
  protocol::RegisterFile regs;
  gregs_to_file(gregs, regs);
  return regs;
}

Expected<void> PtraceProcess::write_registers(pid_t tid, const protocol::RegisterFile& regs) {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  // An inferior call or a jump there would only end it, and the history
  // with it: the held end is as read-only as the past.
  if (ending_) return make_error(ErrorCode::InvalidArgument, "The program has ended; its registers cannot change");
  user_regs_struct gregs{};
  if (auto r = do_ptrace(PTRACE_GETREGS, tid, 0, &gregs); !r) return r.error();
  file_to_gregs(regs, gregs);
  if (auto r = do_ptrace(PTRACE_SETREGS, tid, 0, &gregs); !r) return r.error();
  if (!any_xsave_register_available(regs)) return {};
  // The whole area as the kernel gave it, patched: with AMX the kernel
  // takes an XSAVE write only at its own full size (tile data included).
  auto fp = read_fp_buffer(tid);
  if (!fp) return fp.error();
  file_to_fxsave(regs, fp->bytes.data());
  if (fp->note == NT_X86_XSTATE) file_to_xsave(regs, host_xsave_layout(), fp->bytes);
  iovec iov{fp->bytes.data(), fp->bytes.size()};
  if (auto r = do_ptrace(PTRACE_SETREGSET, tid, static_cast<uint64_t>(fp->note), &iov); !r) {
    return r.error();
  }
  return {};
}

Expected<uint64_t> PtraceProcess::read_pc(pid_t tid) {
  user_regs_struct gregs{};
  if (auto r = do_ptrace(PTRACE_GETREGS, tid, 0, &gregs); !r) return r.error();
  return static_cast<uint64_t>(gregs.rip);
}

// --- Memory -----------------------------------------------------------------

std::size_t ptrace_detail::read_mem_fd(int fd, uint64_t addr, uint8_t* out, std::size_t len) {
  std::size_t got = 0;
  while (fd >= 0 && got < len) {
    ssize_t n = ::pread(fd, out + got, len - got, static_cast<off_t>(addr + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got;
}

std::vector<uint8_t> PtraceProcess::raw_read(uint64_t addr, std::size_t len) {
  std::vector<uint8_t> out(len);
  std::size_t got = read_mem_fd(mem_fd_, addr, out.data(), len);
  if (got == 0) {
    // /proc/pid/mem unusable (or refused): word-wise PEEKDATA, which needs
    // a stopped thread.
    pid_t tid = pid_;
    for (const auto& [t, state] : threads_) {
      if (!state.running) {
        tid = t;
        break;
      }
    }
    while (got < len) {
      uint64_t at = addr + got;
      uint64_t word_addr = at & ~uint64_t{7};
      auto word = do_ptrace(PTRACE_PEEKDATA, tid, word_addr, nullptr);
      if (!word) break;
      uint64_t value = static_cast<uint64_t>(*word);
      for (std::size_t i = at - word_addr; i < 8 && got < len; ++i) {
        out[got++] = static_cast<uint8_t>(value >> (8 * i));
      }
    }
  }
  out.resize(got);
  return out;
}

Expected<void> PtraceProcess::poke_write(uint64_t addr, const std::vector<uint8_t>& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    uint64_t at = addr + done;
    uint64_t word_addr = at & ~uint64_t{7};
    std::size_t first = at - word_addr;
    uint64_t value = 0;
    if (first != 0 || bytes.size() - done < 8) {
      auto word = do_ptrace(PTRACE_PEEKDATA, pid_, word_addr, nullptr);
      if (!word) return memory_fault(at);
      value = static_cast<uint64_t>(*word);
    }
    for (std::size_t i = first; i < 8 && done < bytes.size(); ++i, ++done) {
      value &= ~(uint64_t{0xff} << (8 * i));
      value |= uint64_t{bytes[done]} << (8 * i);
    }
    if (!do_ptrace(PTRACE_POKEDATA, pid_, word_addr, reinterpret_cast<void*>(value))) {
      return memory_fault(at);
    }
  }
  return {};
}

Expected<void> PtraceProcess::raw_write(uint64_t addr, const std::vector<uint8_t>& bytes) {
  std::size_t done = 0;
  while (mem_fd_ >= 0 && done < bytes.size()) {
    ssize_t n = ::pwrite(mem_fd_, bytes.data() + done, bytes.size() - done,
                         static_cast<off_t>(addr + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  if (done == bytes.size()) return {};
  std::vector<uint8_t> rest(bytes.begin() + static_cast<std::ptrdiff_t>(done), bytes.end());
  return poke_write(addr + done, rest);
}

Expected<std::vector<uint8_t>> PtraceProcess::read_memory(uint64_t addr, std::size_t len) {
  if (len == 0) return std::vector<uint8_t>{};
  if (!alive_) return memory_fault(addr);
  if (addr + len < addr) len = static_cast<std::size_t>(0 - addr);  // stop at the top
  std::vector<uint8_t> out = raw_read(addr, len);
  if (out.empty()) return memory_fault(addr);
  for (auto it = breakpoints_.lower_bound(addr); it != breakpoints_.end() && it->first < addr + out.size();
       ++it) {
    out[it->first - addr] = it->second;
  }
  for (auto it = trace_int3s_.lower_bound(addr); it != trace_int3s_.end() && it->first < addr + out.size();
       ++it) {
    out[it->first - addr] = it->second.original;
  }
  return out;
}

Expected<std::size_t> PtraceProcess::read_memory_into(uint64_t addr, std::span<uint8_t> out) {
  if (out.empty()) return std::size_t{0};
  if (!alive_) return memory_fault(addr);
  if (addr + out.size() < addr) out = out.first(static_cast<std::size_t>(0 - addr));  // stop at the top
  // process_vm_readv copies once, from the program's pages into `out`:
  // /proc/PID/mem copies twice (through a kernel page), which was a quarter
  // of the tracer's time draining translated code's logs.
  std::size_t got = 0;
  const iovec local{out.data(), out.size()};
  const iovec remote{reinterpret_cast<void*>(addr), out.size()};
  const ssize_t n = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  if (n > 0) got = static_cast<std::size_t>(n);
  // It stops at a page the program cannot read; /proc/PID/mem reads on.
  if (got < out.size()) got += read_mem_fd(mem_fd_, addr + got, out.data() + got, out.size() - got);
  if (got == 0) return TracedThreadControl::read_memory_into(addr, out);  // PEEKDATA, as read_memory
  for (auto it = breakpoints_.lower_bound(addr); it != breakpoints_.end() && it->first < addr + got; ++it) {
    out[it->first - addr] = it->second;
  }
  for (auto it = trace_int3s_.lower_bound(addr); it != trace_int3s_.end() && it->first < addr + got; ++it) {
    out[it->first - addr] = it->second.original;
  }
  return got;
}

bool PtraceProcess::recording() const {
  if (hook_ == nullptr) return false;
  return std::any_of(threads_.begin(), threads_.end(), [&](const auto& entry) { return hook_->traces(entry.first); });
}

namespace {

// Whether one of `addrs` lies in an executable mapping of `pid` (also
// when the maps cannot be read: then it may).
bool any_executable(pid_t pid, const std::vector<uint64_t>& addrs) {
  const std::vector<MemoryMapping> maps = read_maps(pid);
  if (maps.empty()) return true;
  return std::any_of(addrs.begin(), addrs.end(), [&](uint64_t at) {
    return std::any_of(maps.begin(), maps.end(),
                       [&](const MemoryMapping& m) { return m.executable && at >= m.begin && at < m.end; });
  });
}

}  // namespace

// The int3s a client's write puts over another byte of the program's
// (under our own int3s, the byte they keep): gdb's breakpoints written into
// memory. An int3 written over an int3 is the program's own, or one the
// client wrote before.
std::vector<uint64_t> PtraceProcess::new_client_int3s(uint64_t addr, const std::vector<uint8_t>& bytes) {
  std::vector<uint64_t> added;
  if (std::find(bytes.begin(), bytes.end(), kInt3) == bytes.end()) return added;
  const std::vector<uint8_t> before = raw_read(addr, bytes.size());  // shorter: the write fails too
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (bytes[i] != kInt3) continue;
    const uint64_t at = addr + i;
    uint8_t program_byte = before[i];
    if (auto user = breakpoints_.find(at); user != breakpoints_.end()) program_byte = user->second;
    if (auto trace = trace_int3s_.find(at); trace != trace_int3s_.end()) program_byte = trace->second.original;
    if (program_byte != kInt3) added.push_back(at);
  }
  return added;
}

Expected<void> PtraceProcess::write_memory(uint64_t addr, const std::vector<uint8_t>& bytes) {
  if (bytes.empty()) return {};
  if (!alive_) return memory_fault(addr);
  if (addr + bytes.size() < addr) return memory_fault(addr);
  const std::vector<uint64_t> added = new_client_int3s(addr, bytes);
  // The software tracer decodes the program's code from its memory: an
  // int3 the client wrote there would be taken for code, and the program
  // faulted. Refused, saying what works, until the tracer hides them.
  // Only in code: elsewhere 0xcc is data (a variable set to 204, the
  // bytes gdb puts on the stack for an inferior call).
  if (!added.empty() && recording() && any_executable(pid_, added)) {
    return make_error(ErrorCode::NotSupported,
                      "btstub records this program: a breakpoint written into its memory would be taken for its "
                      "code; use breakpoint packets (set remote Z-packet on)");
  }
  std::vector<uint8_t> data = bytes;
  auto first = breakpoints_.lower_bound(addr);
  auto last = breakpoints_.lower_bound(addr + bytes.size());
  for (auto it = first; it != last; ++it) data[it->first - addr] = kInt3;
  auto trace_first = trace_int3s_.lower_bound(addr);
  auto trace_last = trace_int3s_.lower_bound(addr + bytes.size());
  for (auto it = trace_first; it != trace_last; ++it) {
    if (trace_int3_written(it->first)) data[it->first - addr] = kInt3;
  }
  if (auto r = raw_write(addr, data); !r) return r;
  // The program's new byte becomes the one to restore; our int3 stays.
  const uint64_t end = addr + bytes.size();
  // Another byte over a client's int3 ends it (gdb removing its breakpoint).
  for (auto it = client_int3s_.lower_bound(addr); it != client_int3s_.end() && *it < end;) {
    it = bytes[*it - addr] != kInt3 ? client_int3s_.erase(it) : std::next(it);
  }
  client_int3s_.insert(added.begin(), added.end());
  if (first != last) {
    auto& user = breakpoints_.edit();
    for (auto it = user.lower_bound(addr); it != user.end() && it->first < end; ++it) it->second = bytes[it->first - addr];
  }
  if (trace_first != trace_last) {
    auto& trace = trace_int3s_.edit();
    for (auto it = trace.lower_bound(addr); it != trace.end() && it->first < end; ++it) {
      it->second.original = bytes[it->first - addr];
    }
  }
  return {};
}

Expected<void> PtraceProcess::insert_breakpoint(uint64_t addr) {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  if (breakpoints_.count(addr)) return {};
  if (auto trace = trace_int3s_.find(addr); trace != trace_int3s_.end()) {
    // The int3 is already there, unless a vfork child has the memory.
    if (!trace_int3_written(addr)) {
      if (auto r = raw_write(addr, {kInt3}); !r) return r;
    }
    breakpoints_.edit()[addr] = trace->second.original;
    return {};
  }
  std::vector<uint8_t> original = raw_read(addr, 1);
  if (original.empty()) {
    return make_error(ErrorCode::MemoryFault, "Cannot insert breakpoint at " + hex(addr) +
                                                  ": cannot access memory");
  }
  if (auto r = raw_write(addr, {kInt3}); !r) return r;
  breakpoints_.edit()[addr] = original[0];
  return {};
}

Expected<void> PtraceProcess::remove_breakpoint(uint64_t addr) {
  auto it = breakpoints_.find(addr);
  if (it == breakpoints_.end()) {
    return make_error(ErrorCode::InvalidArgument, "No breakpoint at " + hex(addr));
  }
  uint8_t original = it->second;
  breakpoints_.edit().erase(it);
  if (non_stop_ && original != kInt3) retired_user_int3s_.insert(addr);
  bool lifted = false;
  for (auto& [tid, state] : threads_) {
    if (state.reinsert_at == addr) {
      state.reinsert_at.reset();
      lifted = true;
    }
  }
  if (lifted || !alive_ || trace_int3_written(addr)) return {};  // the tracer's int3 stays
  return raw_write(addr, {original});
}

// --- Control ----------------------------------------------------------------

Expected<void> PtraceProcess::interrupt() {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  // SIGINT like gdbserver, also for attached processes; a launched program
  // leads its own process group, so the whole group gets it like a Ctrl-C.
  int r = attached_ ? ::kill(pid_, SIGINT) : ::kill(-pid_, SIGINT);
  if (r != 0 && !attached_) r = ::kill(pid_, SIGINT);
  if (r != 0) {
    return make_error(ErrorCode::NoProcess, std::string("Cannot interrupt: ") + std::strerror(errno));
  }
  return {};
}

Expected<void> PtraceProcess::kill() {
  if (!alive_) return {};
  ::kill(pid_, SIGKILL);
  // A process already on its way out (held at its exit: ProcessEvent::
  // exit_held) ignores signals, SIGKILL too: its stopped threads are let go.
  for (const auto& [tid, state] : threads_) {
    if (!state.running && !state.exited) (void)do_ptrace(PTRACE_CONT, tid, 0, nullptr);
  }
  // Traced non-leader threads stay zombies until we reap them, and the
  // leader cannot be reaped before they are. A thread may still stop on
  // its way out (PTRACE_EVENT_EXIT): it is let go on.
  for (;;) {
    std::set<pid_t> tids;
    for (const auto& [tid, state] : threads_) tids.insert(tid);
    for (pid_t tid : list_tasks(pid_)) tids.insert(tid);
    for (pid_t tid : tids) {
      int status = 0;
      while (tid != pid_ && wait_retry(tid, &status, __WALL) == tid && !WIFEXITED(status) &&
             !WIFSIGNALED(status)) {
        (void)do_ptrace(PTRACE_CONT, tid, 0, nullptr);
      }
    }
    int status = 0;
    pid_t r = wait_retry(pid_, &status, __WALL);
    if (r < 0 || (r == pid_ && (WIFEXITED(status) || WIFSIGNALED(status)))) break;
    if (r == pid_ && WIFSTOPPED(status)) (void)do_ptrace(PTRACE_CONT, pid_, 0, nullptr);
  }
  mark_gone();
  return {};
}

void PtraceProcess::stop_running_thread(pid_t tid, bool send_sigstop) {
  if (send_sigstop) ::syscall(SYS_tgkill, pid_, tid, SIGSTOP);
  for (;;) {
    int status = 0;
    pid_t reaped = wait_for_stop(tid, &status);
    if (reaped == 0) {
      leader_exited();
      return;
    }
    if (reaped != tid || !WIFSTOPPED(status)) {
      threads_.erase(tid);
      return;
    }
    if ((status >> 16) == 0 && WSTOPSIG(status) == SIGSTOP) return;
    // Another stop came first: let it run on (delivering a real signal)
    // until our SIGSTOP arrives.
    int deliver = (status >> 16) == 0 && WSTOPSIG(status) != SIGTRAP ? WSTOPSIG(status) : 0;
    user_regs_struct gregs{};
    if (deliver == 0 && do_ptrace(PTRACE_GETREGS, tid, 0, &gregs) &&
        (breakpoints_.count(gregs.rip - 1) || trace_int3s_.count(gregs.rip - 1))) {
      gregs.rip -= 1;  // one of our int3s: run the real instruction after detaching
      (void)do_ptrace(PTRACE_SETREGS, tid, 0, &gregs);
    }
    if (!do_ptrace(PTRACE_CONT, tid, 0, signal_arg(deliver))) return;
  }
}

Expected<void> PtraceProcess::detach() {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  // Threads must be stopped both to write memory via ptrace and to detach.
  std::vector<pid_t> tids = threads();
  std::vector<pid_t> held;
  for (pid_t tid : tids) {
    auto found = threads_.find(tid);
    if (found == threads_.end()) continue;
    // A thread still owing us an all-stop SIGSTOP would stop for good
    // once detached: run it into that SIGSTOP first.
    bool owed = found->second.sigstop_expected;
    if (owed && !found->second.running) found->second.running = do_ptrace(PTRACE_CONT, tid, 0, nullptr).ok();
    if (!found->second.running) continue;
    stop_running_thread(tid, !owed);
    if (auto stopped = threads_.find(tid); stopped != threads_.end()) {
      stopped->second.running = false;  // in its SIGSTOP's stop, which that SIGSTOP was
      stopped->second.sigstop_expected = false;
      held.push_back(tid);
    }
  }
  // A thread stopped here may stand in the translating tracer's code cache
  // (the client went while the program ran): the hook moves it out, as at
  // an all-stop's hold, before the cache is taken out of the program.
  if (hook_ != nullptr) {
    for (pid_t tid : held) {
      if (threads_.count(tid) != 0 && hook_->traces(tid)) hook_->on_held(*this, tid);
    }
  }
  unmap_tracer_memory();
  for (const auto& [addr, original] : breakpoints_) (void)raw_write(addr, {original});
  for (const auto& [addr, int3] : trace_int3s_) (void)raw_write(addr, {int3.original});
  for (auto& [tid, state] : threads_) state.reinsert_at.reset();
  breakpoints_.edit().clear();
  trace_int3s_.edit().clear();
  // Debug registers a client left armed (D without z1-z4; gdb removes
  // them first) would trap in a program nobody traces: SIGTRAP kills it.
  user_debug_.clear();
  for (auto& [tid, state] : threads_) state.trace_stop.reset();
  sync_all_debug_regs();
  Expected<void> result = detach_threads();
  if (!attached_ && btstub_is_parent_) detached_children().push_back(pid_);
  mark_gone();
  return result;
}

void PtraceProcess::deliver_on_detach(pid_t tid, int signal) {
  if (auto found = threads_.find(tid); found != threads_.end()) found->second.detach_signal = signal;
}

Expected<std::string> PtraceProcess::read_auxv() {
  if (!alive_) return make_error(ErrorCode::NoProcess, "The program is not being run.");
  return read_whole_file("/proc/" + std::to_string(pid_) + "/auxv");
}

Expected<std::string> PtraceProcess::exec_file() {
  std::string path = "/proc/" + std::to_string(pid_) + "/exe";
  std::vector<char> buf(4096);
  ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
  if (n < 0) return make_error(ErrorCode::IoError, "Cannot read " + path + ": " + std::strerror(errno));
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

}  // namespace stub::process
