// PtraceProcess and libraries_svr4 against real system programs.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "stub/process/libraries_svr4.h"
#include "stub/process/ptrace_process.h"
#include "stub/session/step_ahead.h"

namespace test_ptrace_process {  // this file's own names, apart in a unity build

using protocol::Amd64Reg;
using stub::process::LaunchOptions;
using stub::process::ProcessEvent;
using stub::process::PtraceProcess;
using stub::process::StepKind;

namespace {

constexpr uint64_t kAtEntry = 9;

std::unique_ptr<PtraceProcess> launch(std::vector<std::string> argv, std::vector<std::string> wrapper = {}) {
  LaunchOptions options;
  options.argv = std::move(argv);
  options.wrapper = std::move(wrapper);
  auto process = PtraceProcess::launch(options);
  INFO((process ? std::string() : process.error().message));
  REQUIRE(process.ok());
  return std::move(*process);
}

uint64_t auxv_value(PtraceProcess& process, uint64_t type) {
  auto auxv = process.read_auxv();
  REQUIRE(auxv.ok());
  for (std::size_t off = 0; off + 16 <= auxv->size(); off += 16) {
    uint64_t t, v;
    std::memcpy(&t, auxv->data() + off, 8);
    std::memcpy(&v, auxv->data() + off + 8, 8);
    if (t == type) return v;
  }
  FAIL("auxv entry missing");
  return 0;
}

uint64_t pc_of(PtraceProcess& process) {
  auto regs = process.read_registers(process.pid());
  REQUIRE(regs.ok());
  return regs->get_u64(Amd64Reg::rip);
}

// Bytes as the kernel has them, int3s included: checks what we really wrote.
std::vector<uint8_t> raw_bytes(pid_t pid, uint64_t addr, std::size_t len) {
  std::vector<uint8_t> out(len);
  int fd = ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  ssize_t n = ::pread(fd, out.data(), len, static_cast<off_t>(addr));
  ::close(fd);
  REQUIRE(n == static_cast<ssize_t>(len));
  return out;
}

struct Mapping {
  uint64_t start = 0, end = 0;
  std::string line;
};

std::vector<Mapping> mappings(pid_t pid) {
  std::vector<Mapping> out;
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    Mapping m;
    m.line = line;
    std::sscanf(line.c_str(), "%lx-%lx", &m.start, &m.end);
    out.push_back(m);
  }
  return out;
}

std::string mapping_of(pid_t pid, uint64_t addr) {
  for (const auto& m : mappings(pid)) {
    if (addr >= m.start && addr < m.end) return m.line;
  }
  return "";
}

// Whether PR_SET_TSC makes rdtsc fault here: some hypervisors ignore the
// flag (CR4.TSD), and a forked child that sets it then reads the counter.
bool tsc_faults_here() {
  pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGSEGV, SIG_DFL);  // not Catch's handler: it would report this test failed
    if (::prctl(PR_SET_TSC, PR_TSC_SIGSEGV) != 0) ::_exit(2);
    uint32_t lo = 0, hi = 0;
    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    ::_exit(0);
  }
  int status = 0;
  return child > 0 && ::waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

bool is_gone(pid_t pid) {
  int status = 0;
  errno = 0;
  return ::waitpid(pid, &status, WNOHANG | __WALL) == -1 && errno == ECHILD && ::kill(pid, 0) == -1;
}

ProcessEvent wait_for(PtraceProcess& process) {
  auto event = process.wait_event();
  INFO((event ? std::string() : event.error().message));
  REQUIRE(event.ok());
  return *event;
}

ProcessEvent run_to(PtraceProcess& process, uint64_t addr) {
  REQUIRE(process.insert_breakpoint(addr).ok());
  REQUIRE(process.resume(process.pid(), StepKind::Continue, 0).ok());
  return wait_for(process);
}

}  // namespace

TEST_CASE("launch stops at the dynamic loader's first instruction", "[ptrace]") {
  auto process = launch({"/bin/true"});
  pid_t pid = process->pid();
  CHECK_FALSE(process->attached());
  CHECK(process->threads() == std::vector<pid_t>{pid});
  uint64_t pc = pc_of(*process);
  CHECK(pc != auxv_value(*process, kAtEntry));
  CHECK_THAT(mapping_of(pid, pc), Catch::Contains("ld-linux"));
  auto exe = process->exec_file();
  REQUIRE(exe.ok());
  CHECK_THAT(*exe, Catch::EndsWith("/true"));

  REQUIRE(process->resume(pid, StepKind::Continue, 0).ok());
  auto event = wait_for(*process);
  CHECK(event.kind == ProcessEvent::Kind::Exited);
  CHECK(event.exit_code == 0);
  CHECK(is_gone(pid));
}

TEST_CASE("exit code and death by signal are reported", "[ptrace]") {
  SECTION("exit 3") {
    auto process = launch({"/bin/sh", "-c", "exit 3"});
    REQUIRE(process->resume(process->pid(), StepKind::Continue, 0).ok());
    auto event = wait_for(*process);
    CHECK(event.kind == ProcessEvent::Kind::Exited);
    CHECK(event.exit_code == 3);
  }
  SECTION("SIGSEGV stops first, delivering it kills") {
    auto process = launch({"/bin/sh", "-c", "kill -SEGV $$"});
    REQUIRE(process->resume(process->pid(), StepKind::Continue, 0).ok());
    auto event = wait_for(*process);
    REQUIRE(event.kind == ProcessEvent::Kind::Stopped);
    CHECK(event.signal == SIGSEGV);
    REQUIRE(process->resume(event.tid, StepKind::Continue, SIGSEGV).ok());
    event = wait_for(*process);
    CHECK(event.kind == ProcessEvent::Kind::Killed);
    CHECK(event.signal == SIGSEGV);
    CHECK(is_gone(process->pid()));
  }
}

TEST_CASE("launching a missing program is a clear error and leaves no zombie", "[ptrace]") {
  LaunchOptions options;
  options.argv = {"/no/such"};
  auto process = PtraceProcess::launch(options);
  REQUIRE_FALSE(process.ok());
  CHECK(process.error().message == "Cannot exec /no/such: No such file or directory");
  int status = 0;
  errno = 0;
  CHECK(::waitpid(-1, &status, WNOHANG | __WALL) == -1);
  CHECK(errno == ECHILD);
}

TEST_CASE("a wrapper runs first and the program stops at its own start", "[ptrace]") {
  auto process = launch({"/bin/true"}, {"/usr/bin/env", "FOO=1"});
  auto exe = process->exec_file();
  REQUIRE(exe.ok());
  CHECK_THAT(*exe, Catch::EndsWith("/true"));
  CHECK_THAT(mapping_of(process->pid(), pc_of(*process)), Catch::Contains("ld-linux"));
  std::ifstream environ("/proc/" + std::to_string(process->pid()) + "/environ");
  std::string env((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
  CHECK_THAT(env, Catch::Contains(std::string("FOO=1\0", 6)));
}

TEST_CASE("breakpoints are hidden from reads and restore the original bytes", "[ptrace]") {
  auto process = launch({"/bin/true"});
  pid_t pid = process->pid();
  uint64_t entry = auxv_value(*process, kAtEntry);
  auto before = process->read_memory(entry, 16);
  REQUIRE(before.ok());
  REQUIRE(before->size() == 16);
  REQUIRE((*before)[0] != 0xcc);

  REQUIRE(process->insert_breakpoint(entry).ok());
  REQUIRE(process->insert_breakpoint(entry).ok());  // twice is fine
  CHECK(raw_bytes(pid, entry, 1)[0] == 0xcc);
  auto during = process->read_memory(entry - 4, 16);
  REQUIRE(during.ok());
  CHECK(std::vector<uint8_t>(during->begin() + 4, during->end()) ==
        std::vector<uint8_t>(before->begin(), before->end() - 4));

  SECTION("remove restores") {
    REQUIRE(process->remove_breakpoint(entry).ok());  // once removes it
    CHECK(raw_bytes(pid, entry, 16) == *before);
    CHECK_FALSE(process->remove_breakpoint(entry).ok());
  }
  SECTION("writing over a breakpoint updates the saved byte") {
    REQUIRE(process->write_memory(entry, {0x90, 0x90}).ok());
    CHECK(raw_bytes(pid, entry, 2) == std::vector<uint8_t>{0xcc, 0x90});
    auto seen = process->read_memory(entry, 2);
    REQUIRE(seen.ok());
    CHECK(*seen == std::vector<uint8_t>{0x90, 0x90});
    REQUIRE(process->remove_breakpoint(entry).ok());
    CHECK(raw_bytes(pid, entry, 2) == std::vector<uint8_t>{0x90, 0x90});
  }
  SECTION("an unmapped address is refused and leaves no state") {
    auto r = process->insert_breakpoint(0x10);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == btstub::ErrorCode::MemoryFault);
    CHECK_FALSE(process->remove_breakpoint(0x10).ok());
  }
}

TEST_CASE("the list of int3s and the bytes they hide follows every change, shared while none comes", "[ptrace]") {
  using Bytes = stub::process::ProgramBytes;
  auto process = launch({"/bin/true"});
  const pid_t pid = process->pid();
  const uint64_t entry = auxv_value(*process, kAtEntry);
  auto before = process->read_memory(entry, 2);
  REQUIRE(before.ok());
  const uint8_t b0 = (*before)[0], b1 = (*before)[1];
  CHECK(process->inserted_int3s()->empty());

  REQUIRE(process->insert_breakpoint(entry).ok());
  auto user = process->inserted_int3s();
  CHECK(*user == Bytes{{entry, b0}});
  CHECK(process->inserted_int3s() == user);  // the same list, not a new one

  REQUIRE(process->set_trace_breakpoint(pid, entry + 1).ok());
  CHECK(*process->inserted_int3s() == Bytes{{entry, b0}, {entry + 1, b1}});
  REQUIRE(process->set_trace_breakpoint(pid, std::nullopt).ok());  // let go: removed
  CHECK(*process->inserted_int3s() == Bytes{{entry, b0}});

  process->keep_trace_breakpoints(true);
  REQUIRE(process->set_trace_breakpoint(pid, entry + 1).ok());
  REQUIRE(process->set_trace_breakpoint(pid, std::nullopt).ok());  // let go: kept
  auto kept = process->inserted_int3s();
  CHECK(*kept == Bytes{{entry, b0}, {entry + 1, b1}});
  REQUIRE(process->set_trace_breakpoint(pid, entry + 1).ok());  // held again: nothing changed
  CHECK(process->inserted_int3s() == kept);

  REQUIRE(process->write_memory(entry, {0x90, 0x91}).ok());  // the program's new bytes hide under them
  CHECK(*process->inserted_int3s() == Bytes{{entry, 0x90}, {entry + 1, 0x91}});
  REQUIRE(process->remove_breakpoint(entry).ok());
  CHECK(*process->inserted_int3s() == Bytes{{entry + 1, 0x91}});
  process->keep_trace_breakpoints(false);
  REQUIRE(process->set_trace_breakpoint(pid, std::nullopt).ok());
  CHECK(process->inserted_int3s()->empty());
}

TEST_CASE("a breakpoint is hit, reported with pc rewound, and stepped over", "[ptrace]") {
  auto process = launch({"/bin/true"});
  pid_t pid = process->pid();
  uint64_t entry = auxv_value(*process, kAtEntry);
  auto event = run_to(*process, entry);
  REQUIRE(event.kind == ProcessEvent::Kind::Stopped);
  CHECK(event.signal == SIGTRAP);
  CHECK(event.software_breakpoint);
  CHECK_FALSE(event.single_stepped);
  CHECK(pc_of(*process) == entry);

  SECTION("single-step off it, the int3 goes back") {
    REQUIRE(process->resume(pid, StepKind::SingleStep, 0).ok());
    event = wait_for(*process);
    CHECK(event.single_stepped);
    CHECK_FALSE(event.software_breakpoint);
    CHECK(pc_of(*process) != entry);
    CHECK(raw_bytes(pid, entry, 1)[0] == 0xcc);
  }
  SECTION("continue steps over it and runs to the end") {
    REQUIRE(process->resume(pid, StepKind::Continue, 0).ok());
    event = wait_for(*process);
    CHECK(event.kind == ProcessEvent::Kind::Exited);
    CHECK(event.exit_code == 0);
  }
}

TEST_CASE("single-step moves the pc", "[ptrace]") {
  auto process = launch({"/bin/true"});
  uint64_t before = pc_of(*process);
  REQUIRE(process->resume(process->pid(), StepKind::SingleStep, 0).ok());
  auto event = wait_for(*process);
  CHECK(event.kind == ProcessEvent::Kind::Stopped);
  CHECK(event.signal == SIGTRAP);
  CHECK(event.single_stepped);
  CHECK(pc_of(*process) != before);
  CHECK_FALSE(process->poll_event().has_value());
}

TEST_CASE("registers round-trip through the kernel", "[ptrace]") {
  auto process = launch({"/bin/true"});
  pid_t pid = process->pid();
  auto regs = process->read_registers(pid);
  REQUIRE(regs.ok());
  // Every register this CPU has (XCR0), and no other.
  const auto features = process->register_features();
  for (unsigned n = 0; n < protocol::kAmd64RegisterCount; ++n) {
    INFO(protocol::kAmd64Registers[n].name);
    CHECK(regs->available(n) == protocol::has_register(features, n));
  }
  // A fresh exec has the initial x87/SSE state.
  CHECK(regs->get_u64(Amd64Reg::fctrl) == 0x37f);
  CHECK(regs->get_u64(Amd64Reg::ftag) == 0xffff);
  CHECK(regs->get_u64(Amd64Reg::mxcsr) == 0x1f80);
  CHECK(regs->get_u64(Amd64Reg::cs) == 0x33);
  CHECK(regs->get_u64(Amd64Reg::rsp) != 0);

  protocol::RegisterFile changed = *regs;
  changed.set_u64(Amd64Reg::rax, 0x1122334455667788);
  changed.set_u64(Amd64Reg::r15, 0x0102030405060708);
  uint8_t* xmm0 = changed.bytes(static_cast<unsigned>(Amd64Reg::xmm0));
  for (int i = 0; i < 16; ++i) xmm0[i] = static_cast<uint8_t>(0xa0 + i);
  // st0 = 1.0 (valid), st1 = +0 (zero): tags 00 and 01, others empty.
  uint8_t* st0 = changed.bytes(static_cast<unsigned>(Amd64Reg::st0));
  const uint8_t one[10] = {0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f};
  std::memcpy(st0, one, 10);
  std::memset(changed.bytes(static_cast<unsigned>(Amd64Reg::st0) + 1), 0, 10);
  changed.set_u64(Amd64Reg::ftag, 0xfff4);
  changed.set_u64(Amd64Reg::mxcsr, 0x1f00);
  // The upper halves of ymm1 and zmm2 and k3, where the CPU has them: the
  // write goes through the kernel's full-size XSAVE area (AMX included).
  const unsigned ymm1h = static_cast<unsigned>(Amd64Reg::ymm0h) + 1;
  const unsigned zmm2h = static_cast<unsigned>(Amd64Reg::zmm0h) + 2;
  const auto k3 = static_cast<Amd64Reg>(static_cast<unsigned>(Amd64Reg::k0) + 3);
  if (features.avx) {
    for (int i = 0; i < 16; ++i) changed.bytes(ymm1h)[i] = static_cast<uint8_t>(0x30 + i);
  }
  if (features.avx512) {
    for (int i = 0; i < 32; ++i) changed.bytes(zmm2h)[i] = static_cast<uint8_t>(0x50 + i);
    changed.set_u64(k3, 0xf0f0);
  }
  REQUIRE(process->write_registers(pid, changed).ok());

  auto back = process->read_registers(pid);
  REQUIRE(back.ok());
  CHECK(back->get_u64(Amd64Reg::rax) == 0x1122334455667788);
  CHECK(back->get_u64(Amd64Reg::r15) == 0x0102030405060708);
  CHECK(back->get_u64(Amd64Reg::rip) == regs->get_u64(Amd64Reg::rip));
  CHECK(std::memcmp(back->bytes(static_cast<unsigned>(Amd64Reg::xmm0)), xmm0, 16) == 0);
  CHECK(std::memcmp(back->bytes(static_cast<unsigned>(Amd64Reg::st0)), one, 10) == 0);
  CHECK(back->get_u64(Amd64Reg::ftag) == 0xfff4);
  CHECK(back->get_u64(Amd64Reg::mxcsr) == 0x1f00);
  CHECK(back->get_u64(Amd64Reg::fctrl) == 0x37f);
  if (features.avx) CHECK(std::memcmp(back->bytes(ymm1h), changed.bytes(ymm1h), 16) == 0);
  if (features.avx512) {
    CHECK(std::memcmp(back->bytes(zmm2h), changed.bytes(zmm2h), 32) == 0);
    CHECK(back->get_u64(k3) == 0xf0f0);
  }
}

TEST_CASE("memory writes, partial reads and faults", "[ptrace]") {
  auto process = launch({"/bin/true"});
  pid_t pid = process->pid();
  uint64_t rsp = pc_of(*process) ? process->read_registers(pid)->get_u64(Amd64Reg::rsp) : 0;
  std::vector<uint8_t> data = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  REQUIRE(process->write_memory(rsp - 61, data).ok());
  auto back = process->read_memory(rsp - 61, data.size());
  REQUIRE(back.ok());
  CHECK(*back == data);
  CHECK(raw_bytes(pid, rsp - 61, data.size()) == data);

  auto fault = process->read_memory(0, 8);
  REQUIRE_FALSE(fault.ok());
  CHECK(fault.error().code == btstub::ErrorCode::MemoryFault);
  CHECK(fault.error().message == "Cannot access memory at address 0x0");
  CHECK_FALSE(process->write_memory(0, {1}).ok());

  // A read running off the end of a mapping into a hole returns the prefix.
  auto maps = mappings(pid);
  bool tried = false;
  for (std::size_t i = 0; i + 1 < maps.size() && !tried; ++i) {
    if (maps[i].end == maps[i + 1].start || maps[i].line.find(" r") == std::string::npos) continue;
    tried = true;
    auto partial = process->read_memory(maps[i].end - 4, 16);
    REQUIRE(partial.ok());
    CHECK(partial->size() == 4);
  }
  CHECK(tried);
}

// Kilobytes of `pid`'s mapping that starts at `start` resident in its page
// tables (its smaps' Rss); -1 when no mapping starts there.
long resident_kib(pid_t pid, uint64_t start) {
  std::ifstream smaps("/proc/" + std::to_string(pid) + "/smaps");
  std::string line;
  bool in = false;
  while (std::getline(smaps, line)) {
    if (const auto dash = line.find('-'); dash != std::string::npos && line.find(' ') > dash &&
                                          line.find_first_not_of("0123456789abcdef") == dash) {
      in = std::stoull(line.substr(0, dash), nullptr, 16) == start;
    } else if (in && line.rfind("Rss:", 0) == 0) {
      return std::stol(line.substr(4));
    }
  }
  return -1;
}

TEST_CASE("populating btstub's memory in the program backs its pages there, bytes kept, and nothing else", "[ptrace]") {
  auto process = launch({"/bin/true"});
  const pid_t pid = process->pid();
  const uint64_t pc = pc_of(*process);
  constexpr uint64_t kSize = 16 * 4096;
  auto shared = process->map_shared_program_memory(pid, pc, uint64_t{1} << 31, kSize);
  INFO((shared ? std::string() : shared.error().message));
  REQUIRE(shared.ok());
  const uint64_t at = shared->program_address();
  shared->at(at + kSize - 8, 8)[0] = 0x5a;  // written by btstub: in the program's page tables it is not
  CHECK(resident_kib(pid, at) == 0);

  REQUIRE(process->populate_program_memory(pid, at + kSize / 2, kSize / 2).ok());
  CHECK(resident_kib(pid, at) == static_cast<long>(kSize / 2 / 1024));
  auto read = process->read_memory(at + kSize - 8, 1);
  REQUIRE(read.ok());
  CHECK((*read)[0] == 0x5a);
  CHECK(pc_of(*process) == pc);

  // Only what btstub mapped, whole pages: the program's own memory is
  // never touched this way.
  for (auto [begin, size] : {std::pair{pc & ~uint64_t{4095}, uint64_t{4096}}, std::pair{at + 1, uint64_t{4096}},
                             std::pair{at, kSize + 4096}, std::pair{at, uint64_t{0}}}) {
    auto refused = process->populate_program_memory(pid, begin, size);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == btstub::ErrorCode::InvalidArgument);
  }
  CHECK(resident_kib(pid, at) == static_cast<long>(kSize / 2 / 1024));
  REQUIRE(process->resume(pid, StepKind::Continue, 0).ok());
  auto event = wait_for(*process);
  CHECK(event.kind == ProcessEvent::Kind::Exited);
  CHECK(event.exit_code == 0);
}

TEST_CASE("interrupt stops a running program with SIGINT; kill leaves nothing", "[ptrace]") {
  auto process = launch({"/bin/sleep", "100"});
  pid_t pid = process->pid();
  REQUIRE(process->resume(pid, StepKind::Continue, 0).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK_FALSE(process->poll_event().has_value());
  REQUIRE(process->interrupt().ok());
  auto event = wait_for(*process);
  CHECK(event.kind == ProcessEvent::Kind::Stopped);
  CHECK(event.signal == SIGINT);
  REQUIRE(process->kill().ok());
  CHECK(is_gone(pid));
}

TEST_CASE("dropping a launched process kills and reaps it", "[ptrace]") {
  pid_t pid;
  {
    auto process = launch({"/bin/sleep", "100"});
    pid = process->pid();
    REQUIRE(process->resume(pid, StepKind::Continue, 0).ok());
  }
  CHECK(is_gone(pid));
}

TEST_CASE("attach to a running program and detach again", "[ptrace]") {
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::execl("/bin/sleep", "sleep", "100", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  {
    auto process = PtraceProcess::attach(child);
    INFO((process ? std::string() : process.error().message));
    REQUIRE(process.ok());
    CHECK((*process)->attached());
    CHECK((*process)->threads() == std::vector<pid_t>{child});
    CHECK((*process)->read_registers(child).ok());
    auto exe = (*process)->exec_file();
    REQUIRE(exe.ok());
    CHECK_THAT(*exe, Catch::EndsWith("/sleep"));
    REQUIRE((*process)->detach().ok());
  }
  // Still alive and no longer traced: SIGKILL now ends it for its real parent.
  CHECK(::kill(child, 0) == 0);
  std::ifstream status_file("/proc/" + std::to_string(child) + "/status");
  std::string status_text((std::istreambuf_iterator<char>(status_file)), std::istreambuf_iterator<char>());
  CHECK_THAT(status_text, Catch::Contains("TracerPid:\t0"));
  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
}

TEST_CASE("attach to a missing process is a clear error", "[ptrace]") {
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);  // now surely not running
  auto process = PtraceProcess::attach(child);
  REQUIRE_FALSE(process.ok());
  CHECK(process.error().message == "Cannot attach to process " + std::to_string(child) + ": No such process");
}

TEST_CASE("libraries-svr4 lists libc once ld.so has run", "[ptrace][svr4]") {
  auto process = launch({"/bin/true"});
  auto early = stub::process::libraries_svr4_xml(*process);
  INFO((early ? std::string() : early.error().message));
  REQUIRE(early.ok());
  CHECK(*early == "<library-list-svr4 version=\"1.0\"/>");

  auto event = run_to(*process, auxv_value(*process, kAtEntry));
  REQUIRE(event.software_breakpoint);
  auto xml = stub::process::libraries_svr4_xml(*process);
  INFO((xml ? std::string() : xml.error().message));
  REQUIRE(xml.ok());
  CHECK_THAT(*xml, Catch::StartsWith("<library-list-svr4 version=\"1.0\" main-lm=\"0x"));
  CHECK_THAT(*xml, Catch::Contains("libc.so"));
  CHECK_THAT(*xml, Catch::Contains("ld-linux"));
  CHECK_THAT(*xml, Catch::EndsWith("</library-list-svr4>"));
  // The main program is not listed as a library.
  auto exe = process->exec_file();
  REQUIRE(exe.ok());
  CHECK_THAT(*xml, !Catch::Contains("name=\"" + *exe + "\""));
}

TEST_CASE("new threads are followed silently and their exit is not an event", "[ptrace][threads]") {
  if (::access("/usr/bin/python3", X_OK) != 0) return;  // the only threaded system program at hand
  auto process = launch({"/usr/bin/python3", "-c",
                         "import threading, time\n"
                         "ts = [threading.Thread(target=time.sleep, args=(0.2,)) for _ in range(3)]\n"
                         "[t.start() for t in ts]\n"
                         "[t.join() for t in ts]\n"
                         "raise SystemExit(5)\n"});
  REQUIRE(process->resume(process->pid(), StepKind::Continue, 0).ok());
  std::size_t most_threads = 1;
  std::optional<ProcessEvent> event;
  for (int i = 0; i < 300 && !event; ++i) {
    event = process->poll_event();
    most_threads = std::max(most_threads, process->threads().size());
    if (!event) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(event.has_value());
  CHECK(event->kind == ProcessEvent::Kind::Exited);
  CHECK(event->exit_code == 5);
  CHECK(most_threads == 4);
  CHECK(is_gone(process->pid()));
}

TEST_CASE("kill reaps every thread of a running multi-threaded program", "[ptrace][threads]") {
  if (::access("/usr/bin/python3", X_OK) != 0) return;
  auto process = launch({"/usr/bin/python3", "-c",
                         "import threading, time\n"
                         "for _ in range(3): threading.Thread(target=time.sleep, args=(100,)).start()\n"
                         "time.sleep(100)\n"});
  pid_t pid = process->pid();
  REQUIRE(process->resume(pid, StepKind::Continue, 0).ok());
  for (int i = 0; i < 500 && process->threads().size() < 4; ++i) {
    CHECK_FALSE(process->poll_event().has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(process->threads().size() == 4);
  REQUIRE(process->kill().ok());
  CHECK(process->threads().empty());
  CHECK(is_gone(pid));
}

TEST_CASE("an attached program left running is detached when dropped", "[ptrace]") {
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::execl("/bin/sleep", "sleep", "100", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  {
    auto process = PtraceProcess::attach(child);
    REQUIRE(process.ok());
    REQUIRE((*process)->resume(child, StepKind::Continue, 0).ok());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::ifstream status_file("/proc/" + std::to_string(child) + "/status");
  std::string status_text((std::istreambuf_iterator<char>(status_file)), std::istreambuf_iterator<char>());
  CHECK_THAT(status_text, Catch::Contains("TracerPid:\t0"));
  CHECK_THAT(status_text, Catch::Contains("State:\tS"));  // sleeping again, not stopped
  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WTERMSIG(status) == SIGKILL);
}

TEST_CASE("through a shell, a program that cannot run ends the start-up with the shell's status", "[ptrace]") {
  LaunchOptions options;
  options.argv = {"/no/such/program", "a b"};
  options.shell = "/bin/sh";
  auto process = PtraceProcess::launch(options);
  REQUIRE_FALSE(process.ok());
  CHECK(process.error().message == "During startup program exited with code 127.");
  int status = 0;
  CHECK(::waitpid(-1, &status, WNOHANG | __WALL) == -1);  // nothing left behind
}

TEST_CASE("through a shell and a wrapper, the program starts with its own arguments", "[ptrace]") {
  LaunchOptions options;
  options.argv = {"/bin/true", "$HOME", "a b"};
  options.wrapper = {"/usr/bin/env", "X=1"};
  options.shell = "/bin/sh";
  auto process = PtraceProcess::launch(options);
  REQUIRE(process.ok());
  // Stopped at the program's exec: /proc says it is /bin/true, its argv the words given.
  char exe[256] = {};
  ::readlink(("/proc/" + std::to_string((*process)->pid()) + "/exe").c_str(), exe, sizeof exe - 1);
  CHECK(std::string(exe) == std::filesystem::canonical("/bin/true").string());
  std::ifstream cmdline("/proc/" + std::to_string((*process)->pid()) + "/cmdline");
  std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  CHECK(args == std::string("/bin/true\0$HOME\0a b\0", 20));
}

TEST_CASE("a wrapper that never runs the program is an error", "[ptrace]") {
  LaunchOptions options;
  options.argv = {"/bin/true"};
  options.wrapper = {"/bin/false"};
  auto process = PtraceProcess::launch(options);
  REQUIRE_FALSE(process.ok());
  // gdbserver's words (startup_inferior), with the wrapper's exit status.
  CHECK(process.error().message == "During startup program exited with code 1.");
  int status = 0;
  errno = 0;
  CHECK(::waitpid(-1, &status, WNOHANG | __WALL) == -1);
  CHECK(errno == ECHILD);
}

TEST_CASE("continuing from a breakpoint puts the int3 back", "[ptrace]") {
  auto process = launch({"/bin/sleep", "100"});
  pid_t pid = process->pid();
  uint64_t entry = auxv_value(*process, kAtEntry);
  REQUIRE(run_to(*process, entry).software_breakpoint);
  REQUIRE(process->resume(pid, StepKind::Continue, 0).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK_FALSE(process->poll_event().has_value());  // the step's trap was swallowed
  CHECK(raw_bytes(pid, entry, 1)[0] == 0xcc);
  REQUIRE(process->interrupt().ok());
  auto event = wait_for(*process);
  CHECK(event.signal == SIGINT);
  CHECK_FALSE(event.single_stepped);
  CHECK(pc_of(*process) != entry);
}

TEST_CASE("an event kept for later is what the next resume reports, without running", "[ptrace][step-ahead]") {
  auto process = launch({"/bin/true"});
  pid_t pid = process->pid();
  const uint64_t pc = pc_of(*process);
  ProcessEvent kept;
  kept.tid = pid;
  kept.signal = SIGUSR1;
  process->keep_pending(kept, {});
  CHECK(process->has_pending_event());
  REQUIRE(process->resume(pid, StepKind::SingleStep, 0).ok());
  auto event = wait_for(*process);
  CHECK(event.kind == ProcessEvent::Kind::Stopped);
  CHECK(event.signal == SIGUSR1);
  CHECK(pc_of(*process) == pc);
}

TEST_CASE("a step run ahead and undone leaves registers and memory as they were", "[ptrace][step-ahead]") {
  auto process = launch({"/bin/true"});
  pid_t pid = process->pid();
  // Step until the next instruction is a push or a call (the loader's
  // start has both), then run it ahead: it writes the slot below rsp.
  stub::session::StepAhead ahead;
  for (int i = 0; i < 500; ++i) {
    auto code = process->read_memory(pc_of(*process), 2);
    REQUIRE(code.ok());
    const uint8_t op = (*code)[0] == 0x41 && code->size() > 1 ? (*code)[1] : (*code)[0];
    if ((op >= 0x50 && op <= 0x57) || op == 0xe8) break;
    REQUIRE(process->resume(pid, StepKind::SingleStep, 0).ok());
    (void)wait_for(*process);
  }
  auto regs = process->read_registers(pid);
  REQUIRE(regs.ok());
  const uint64_t slot = regs->get_u64(Amd64Reg::rsp) - 8;
  const std::vector<uint8_t> before = raw_bytes(pid, slot, 8);
  ahead.run(*process, pid, {});
  REQUIRE(ahead.active());
  CHECK(pc_of(*process) != regs->get_u64(Amd64Reg::rip));  // it really ran
  std::vector<uint8_t> seen = raw_bytes(pid, slot, 8);
  CHECK(seen != before);  // the pushed value (a return address, or a register unlike the stale slot)
  ahead.show_before(slot, seen);
  CHECK(seen == before);

  ahead.undo(*process);
  CHECK_FALSE(ahead.active());
  auto after = process->read_registers(pid);
  REQUIRE(after.ok());
  for (Amd64Reg reg : {Amd64Reg::rip, Amd64Reg::rsp, Amd64Reg::eflags, Amd64Reg::rax, Amd64Reg::rdi}) {
    CHECK(after->get_u64(reg) == regs->get_u64(reg));
  }
  CHECK(raw_bytes(pid, slot, 8) == before);
}

TEST_CASE("a thread's siginfo is read and put back", "[ptrace][step-ahead]") {
  auto process = launch({"/bin/true"});
  pid_t pid = process->pid();
  REQUIRE(process->resume(pid, StepKind::SingleStep, 0).ok());
  (void)wait_for(*process);
  auto info = process->read_siginfo(pid);
  REQUIRE(info.ok());
  siginfo_t changed{};
  std::memcpy(&changed, info->data(), sizeof changed);
  changed.si_errno = 42;
  std::vector<uint8_t> bytes(sizeof changed);
  std::memcpy(bytes.data(), &changed, sizeof changed);
  REQUIRE(process->write_siginfo(pid, bytes).ok());
  auto again = process->read_siginfo(pid);
  REQUIRE(again.ok());
  siginfo_t now{};
  std::memcpy(&now, again->data(), sizeof now);
  CHECK(now.si_errno == 42);
  CHECK(now.si_signo == SIGTRAP);
}

TEST_CASE("a signal sent to a stopped thread waits in its queue", "[ptrace][step-ahead]") {
  auto process = launch({"/bin/true"});
  pid_t pid = process->pid();
  auto before = process->signal_waiting(pid);
  REQUIRE(before.ok());
  CHECK_FALSE(*before);
  REQUIRE(::kill(pid, SIGUSR1) == 0);  // the process's queue
  auto after = process->signal_waiting(pid);
  REQUIRE(after.ok());
  CHECK(*after);
}

// A checkpoint's copy must never read a new time stamp counter value: its
// rdtsc faults (PR_SET_TSC), set before its first run rather than when it
// is taken (most copies never run), and inherited by copies forked from it.
TEST_CASE("a copy's rdtsc faults, from its first run on and in copies forked from it", "[ptrace][copies]") {
  auto process = launch({"/bin/true"});
  const uint64_t pc = pc_of(*process);
  const std::vector<uint8_t> rdtsc = {0x0f, 0x31, 0x90, 0x90};
  const std::vector<uint8_t> nops = {0x90, 0x90, 0x90, 0x90};

  auto plain = process->fork_copy(process->pid());
  REQUIRE(plain.ok());
  REQUIRE((*plain)->write_memory(pc, nops));
  CHECK((*plain)->run_to(pc + 2, 1).ok());  // the run itself works

  if (!tsc_faults_here()) {
    WARN("SKIPPED: rdtsc does not fault under PR_SET_TSC on this machine (hypervisor)");
    return;
  }
  auto reads = process->fork_copy(process->pid());
  REQUIRE(reads.ok());
  REQUIRE((*reads)->write_memory(pc, rdtsc));
  auto ran = (*reads)->run_to(pc + 2, 1);
  CHECK_FALSE(ran.ok());

  auto parent = process->fork_copy(process->pid());
  REQUIRE(parent.ok());
  auto child = (*parent)->fork();
  REQUIRE(child.ok());
  REQUIRE((*child)->write_memory(pc, rdtsc));
  CHECK_FALSE((*child)->run_to(pc + 2, 1).ok());
}

}  // namespace test_ptrace_process
