// decoder/counting_patch.h: the patch and trampoline are run for real, in
// this process, on small loops: the loop must stop (SIGTRAP) exactly at the
// n-th visit with the registers it had there, and, moved back to the
// target with its bytes restored, end with the result it has unpatched.
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "decoder/counting_patch.h"

namespace test_counting_patch {  // this file's own names, apart in a unity build

using decoder::build_counting_patch;
using decoder::CountingPatch;

namespace {

// Assembled from (GNU as, Intel syntax):
//   a:      mov ecx, 0x1234 ; xor eax, eax
//   a_loop: cmp rdi, 5                      ; CF = rdi < 5
//   a_t:    adc rax, rdi                    ; uses the CF from before the span
//           dec rdi ; jnz a_loop ; add rax, rcx ; ret
//   b:      mov ecx, 0x1234 ; xor eax, eax
//   b_lea:  lea rdx, [rip + b_data]         ; RIP-relative
//           add rax, [rdx]
//   b_call: call b_bump                     ; call rel32
//   b_dec:  dec rdi ; jnz b_lea             ; a jcc in the span
//           add rax, rcx ; ret
//   b_bump: mov rdx, [rsp] ; lea r8, [rip + b_dec] ; sub rdx, r8
//           add rax, rdx ; inc rax ; ret    ; a wrong return address shows
//   c:      syscall ; ret
//   d:      jrcxz d ; call rax ; ret
//   b_data: .quad 100
constexpr uint8_t kCode[] = {
    0xb9, 0x34, 0x12, 0x00, 0x00, 0x31, 0xc0, 0x48, 0x83, 0xff, 0x05, 0x48, 0x11, 0xf8, 0x48, 0xff, 0xcf, 0x75, 0xf4,
    0x48, 0x01, 0xc8, 0xc3, 0xb9, 0x34, 0x12, 0x00, 0x00, 0x31, 0xc0, 0x48, 0x8d, 0x15, 0x2e, 0x00, 0x00, 0x00, 0x48,
    0x03, 0x02, 0xe8, 0x09, 0x00, 0x00, 0x00, 0x48, 0xff, 0xcf, 0x75, 0xec, 0x48, 0x01, 0xc8, 0xc3, 0x48, 0x8b, 0x14,
    0x24, 0x4c, 0x8d, 0x05, 0xec, 0xff, 0xff, 0xff, 0x4c, 0x29, 0xc2, 0x48, 0x01, 0xd0, 0x48, 0xff, 0xc0, 0xc3, 0x0f,
    0x05, 0xc3, 0xe3, 0xfe, 0xff, 0xd0, 0xc3, 0x64, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
constexpr std::size_t kA = 0x00, kATarget = 0x0b, kB = 0x17, kBLea = 0x1e, kBCall = 0x28, kBDec = 0x2d;
constexpr std::size_t kC = 0x4b, kD = 0x4e;
constexpr std::size_t kPage = decoder::kCountingPageSize;

// What the SIGTRAP handler saw and does.
struct Trap {
  uint8_t* target = nullptr;
  const CountingPatch* patch = nullptr;
  int stops = 0;
  uint64_t rip = 0, rax = 0, rcx = 0, rdi = 0, eflags = 0;
};
Trap g_trap;

void on_trap(int, siginfo_t*, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  greg_t* regs = uc->uc_mcontext.gregs;
  ++g_trap.stops;
  g_trap.rip = static_cast<uint64_t>(regs[REG_RIP]);
  g_trap.rax = static_cast<uint64_t>(regs[REG_RAX]);
  g_trap.rcx = static_cast<uint64_t>(regs[REG_RCX]);
  g_trap.rdi = static_cast<uint64_t>(regs[REG_RDI]);
  g_trap.eflags = static_cast<uint64_t>(regs[REG_EFL]);
  // What btstub does with the stopped copy: its bytes back, its pc back.
  std::memcpy(g_trap.target, g_trap.patch->original.data(), g_trap.patch->original.size());
  regs[REG_RIP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(g_trap.target));
}

// Code in the first page of three, the trampoline in the third.
class Scratch {
 public:
  Scratch() {
    void* p = ::mmap(nullptr, 3 * kPage, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    base_ = static_cast<uint8_t*>(p);
    std::memcpy(base_, kCode, sizeof kCode);
    struct sigaction sa {};
    sa.sa_sigaction = on_trap;
    sa.sa_flags = SA_SIGINFO;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTRAP, &sa, &old_);
  }
  ~Scratch() {
    ::sigaction(SIGTRAP, &old_, nullptr);
    ::munmap(base_, 3 * kPage);
  }
  uint64_t address(std::size_t offset) const { return reinterpret_cast<uintptr_t>(base_ + offset); }
  uint64_t page() const { return address(2 * kPage); }
  std::vector<uint8_t> code_at(std::size_t offset) const {
    return {base_ + offset, base_ + std::min(sizeof kCode, offset + decoder::kCountingCodeBytes)};
  }
  long call(std::size_t entry, long n) const {
    auto* fn = reinterpret_cast<long (*)(long)>(base_ + entry);
    return fn(n);
  }
  void apply(const CountingPatch& patch) {
    std::memcpy(reinterpret_cast<void*>(patch.page_address), patch.page.data(), patch.page.size());
    std::memcpy(reinterpret_cast<void*>(patch.target), patch.patch.data(), patch.patch.size());
    g_trap = Trap{};
    g_trap.target = reinterpret_cast<uint8_t*>(patch.target);
    g_trap.patch = &patch;
  }

 private:
  uint8_t* base_ = nullptr;
  struct sigaction old_ {};
};

long result_a(long n) {
  long sum = 0x1234;
  for (long i = n; i > 0; --i) sum += i + (i < 5 ? 1 : 0);
  return sum;
}

}  // namespace

TEST_CASE("the copy stops at the n-th visit with the program's registers and flags", "[counting_patch]") {
  Scratch s;
  REQUIRE(s.call(kA, 10) == result_a(10));
  for (uint64_t hits : {1, 2, 7, 10}) {
    CAPTURE(hits);
    auto patch = build_counting_patch(s.address(kATarget), s.code_at(kATarget), s.page(), hits);
    REQUIRE(patch);
    CHECK(patch->original.size() == 6);  // adc (3) + dec (3)
    s.apply(*patch);
    // The visits before the last ran the moved adc with the cmp's CF.
    CHECK(s.call(kA, 10) == result_a(10));
    CHECK(g_trap.stops == 1);
    CHECK(g_trap.rip == patch->stop_pc);
    CHECK(g_trap.rdi == 10 - hits + 1);
    CHECK(g_trap.rcx == 0x1234);
    CHECK(((g_trap.eflags & 1) != 0) == (10 - hits + 1 < 5));  // CF from the cmp
    long before = 0;
    for (long i = 10; i > static_cast<long>(10 - hits + 1); --i) before += i + (i < 5 ? 1 : 0);
    CHECK(g_trap.rax == static_cast<uint64_t>(before));
  }
}

TEST_CASE("RIP-relative operands, calls and jcc are moved", "[counting_patch]") {
  Scratch s;
  const long unpatched = s.call(kB, 9);
  REQUIRE(unpatched == 9 * 101 + 0x1234);
  for (std::size_t target : {kBLea, kBCall, kBDec}) {
    CAPTURE(target);
    auto patch = build_counting_patch(s.address(target), s.code_at(target), s.page(), 4);
    REQUIRE(patch);
    s.apply(*patch);
    CHECK(s.call(kB, 9) == unpatched);
    CHECK(g_trap.stops == 1);
    CHECK(g_trap.rdi == 6);
    CHECK(g_trap.rcx == 0x1234);
  }
}

TEST_CASE("code that cannot be moved is refused", "[counting_patch]") {
  Scratch s;
  CHECK_FALSE(build_counting_patch(s.address(kC), s.code_at(kC), s.page(), 3));  // syscall
  CHECK_FALSE(build_counting_patch(s.address(kD), s.code_at(kD), s.page(), 3));  // jrcxz
  CHECK_FALSE(build_counting_patch(s.address(kD + 2), s.code_at(kD + 2), s.page(), 3));  // call rax
  // A page more than 2 GiB away.
  CHECK_FALSE(build_counting_patch(0x400000, s.code_at(kATarget), 0x7f0000000000, 3));
  CHECK_FALSE(build_counting_patch(s.address(kATarget), s.code_at(kATarget), s.page(), 0));
  CHECK_FALSE(build_counting_patch(s.address(kATarget), s.code_at(kATarget), s.page() + 8, 3));
  CHECK_FALSE(build_counting_patch(s.address(kATarget), {0x48}, s.page(), 3));  // truncated
}

}  // namespace test_counting_patch
