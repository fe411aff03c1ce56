// decoder/block_translator.h: translations of the small functions of
// block_translator_code.cc are run for real, in this process, from a cache
// mapped near them. A
// SIGTRAP handler plays the tracer: at each exit it drains the log when
// full, translates the target (linking direct exits to it) and resumes
// there; a return into this file's C++ code resumes natively. Each run must
// give the native result and log exactly the taken branches.
#include <asm/prctl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "decoder/block_translator.h"
#include "tests/common/translation_area.h"
#include "tests/unit/decoder/block_translator_code.h"

namespace test_block_translator {  // this file's own names, apart in a unity build

using decoder::BlockExit;
using decoder::ExitKind;
using decoder::LogRecord;
using decoder::Translation;
using decoder::translate_block;

namespace {

template <class T>
uint64_t addr(T* p) {
  return reinterpret_cast<uint64_t>(p);
}

// A return into the C++ caller, in expected logs.
constexpr uint64_t kCaller = 0;

bool in_code(uint64_t a) { return a >= addr(bttest_begin) && a < addr(bttest_end); }

std::span<const uint8_t> code_at(uint64_t a) {
  return {reinterpret_cast<const uint8_t*>(a), static_cast<std::size_t>(addr(bttest_end) + 1 - a)};
}

// The thread's area, whose drain appends the records to a vector.
class Area : public test_translation::ThreadArea {
 public:
  explicit Area(std::size_t capacity) : ThreadArea(capacity) {}
  // Appends the records written since the last drain and empties the log.
  void drain(std::vector<LogRecord>& into) {
    for (std::size_t i = 0, n = used(); i < n; ++i) into.push_back(record(i));
    reset();
  }
};

// The cache, mapped within 1 GiB of the code it holds translations of.
class Cache : public test_translation::CodeCache {
 public:
  static constexpr std::size_t kSize = 1 << 20;
  Cache() : CodeCache(addr(bttest_begin), kSize) { REQUIRE(ok()); }
  void install(const Translation& t) { REQUIRE(CodeCache::install(t)); }
};

void apply(const decoder::CodePatch& patch) {
  std::memcpy(reinterpret_cast<void*>(patch.address), patch.bytes.data(), patch.bytes.size());
}

// What bttest_below writes below rsp before each of its calls.
constexpr uint64_t kBelowCanary = 0x5a5a5a5a5a5a5a5aULL;

// The in-process tracer. One at a time (the signal handler finds it here).
struct Tracer;
Tracer* g_tracer = nullptr;

struct Tracer {
  Cache cache;
  Area area;
  std::map<uint64_t, Translation> blocks;  // by original address
  bool link = true;                        // link direct exits as their targets appear
  bool table = false;                      // enter indirect targets in the table
  // At a log-full exit, put the thread back before its branch (rsp and rcx
  // as BlockExit says they were) and run it again from a translation
  // starting there, as btstub does when the trace has no room for it.
  bool back_at_full = false;
  std::vector<LogRecord> log;
  int direct_exits = 0, indirect_exits = 0, full_exits = 0;
  int below_checked = 0;  // log-full exits at bttest_below's calls
  std::string failure;  // what went wrong in the handler
  sigjmp_buf bail;

  explicit Tracer(std::size_t capacity = 1024, decoder::LogStores stores = decoder::LogStores::NonTemporal)
      : area(capacity) {
    options.log_stores = stores;
  }
  decoder::TranslateOptions options;

  // The cache address of the translation of `original` (0 on failure).
  uint64_t entry(uint64_t original) {
    if (auto it = blocks.find(original); it != blocks.end()) return it->second.cache_address;
    auto t = translate_block(original, code_at(original), cache.next(), options);
    if (!t) {
      failure = t.error().message;
      return 0;
    }
    cache.install(*t);
    return blocks.emplace(original, std::move(*t)).first->second.cache_address;
  }
  const Translation* holding(uint64_t cache_pc) const {
    for (const auto& [original, t] : blocks) {
      if (cache_pc > t.cache_address && cache_pc <= t.cache_address + t.code.size()) return &t;
    }
    return nullptr;
  }

  // Where to go on after the exit the trap at `pc` took (rsp, rbp, rcx: at
  // the trap; rsp and rcx changed when the thread goes back).
  uint64_t on_exit(uint64_t pc, uint64_t& rsp, uint64_t rbp, uint64_t& rcx) {
    const Translation* t = holding(pc);
    const BlockExit* exit = t != nullptr ? t->exit_at(pc) : nullptr;
    if (exit == nullptr) {
      failure = "a trap at a pc that is no exit";
      return 0;
    }
    const uint64_t target = area.slot(decoder::kSlotExitTarget);
    if (exit->kind != ExitKind::Indirect && exit->target != 0 && exit->target != target) {
      failure = "the exit-target slot does not hold the exit's target";
      return 0;
    }
    switch (exit->kind) {
      case ExitKind::Direct: ++direct_exits; break;
      case ExitKind::Indirect: ++indirect_exits; break;
      case ExitKind::LogFull:
        ++full_exits;
        area.drain(log);
        if (exit->retry) {
          // A call's: nothing done yet. Below rsp, what the program left.
          if (exit->rsp_adjust != 0 || exit->rcx_adjust != 0) {
            failure = "a call's log-full exit that moved rsp or rcx";
            return 0;
          }
          if (exit->from == addr(bttest_below_site) || exit->from == addr(bttest_below_site2)) {
            ++below_checked;
            // Read in asm: below the interrupted code's rsp, where no
            // sanitizer knows what lives.
            uint64_t below = 0;
            asm volatile("mov -8(%1), %0" : "=r"(below) : "r"(rsp) : "memory");
            if (below != kBelowCanary) {
              failure = "a call's log-full exit that wrote below rsp";
              return 0;
            }
          }
          return back_at_full ? entry(exit->from) : t->cache_address + exit->retry_offset;
        }
        if (back_at_full) {
          rsp += static_cast<uint64_t>(static_cast<int64_t>(exit->rsp_adjust));
          rcx += static_cast<uint64_t>(static_cast<int64_t>(exit->rcx_adjust));
          return entry(exit->from);
        }
        log.push_back({exit->from, target, rsp + static_cast<uint64_t>(static_cast<int64_t>(exit->rsp_adjust)), rbp});
        break;
    }
    if (!in_code(target)) return target;
    const uint64_t next = entry(target);
    if (next != 0 && table && exit->kind != ExitKind::Direct && exit->target == 0) area.enter_indirect(target, next);
    if (next != 0 && link && exit->kind == ExitKind::Direct) {
      auto patch = decoder::link_exit(*t, static_cast<std::size_t>(exit - t->exits.data()), next);
      if (patch) apply(*patch);
    }
    return next;
  }

  // Runs `function(arg)` from its translation with the gs base at the area.
  long run(const void* function, long arg);
};

void on_trap(int, siginfo_t*, void* context) {
  greg_t* regs = static_cast<ucontext_t*>(context)->uc_mcontext.gregs;
  uint64_t rsp = static_cast<uint64_t>(regs[REG_RSP]);
  uint64_t rcx = static_cast<uint64_t>(regs[REG_RCX]);
  const uint64_t next = g_tracer->on_exit(static_cast<uint64_t>(regs[REG_RIP]), rsp,
                                          static_cast<uint64_t>(regs[REG_RBP]), rcx);
  if (next == 0) siglongjmp(g_tracer->bail, 1);
  regs[REG_RIP] = static_cast<greg_t>(next);
  regs[REG_RSP] = static_cast<greg_t>(rsp);
  regs[REG_RCX] = static_cast<greg_t>(rcx);
}

long Tracer::run(const void* function, long arg) {
  const uint64_t start = entry(addr(function));
  REQUIRE(start != 0);
  struct sigaction sa {}, old {};
  sa.sa_sigaction = on_trap;
  sa.sa_flags = SA_SIGINFO;
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTRAP, &sa, &old);
  uint64_t old_gs = 0;
  REQUIRE(::syscall(SYS_arch_prctl, ARCH_GET_GS, &old_gs) == 0);
  g_tracer = this;
  volatile long result = 0;
  if (sigsetjmp(bail, 1) == 0) {
    ::syscall(SYS_arch_prctl, ARCH_SET_GS, area.base());
    result = reinterpret_cast<long (*)(long)>(start)(arg);
  }
  ::syscall(SYS_arch_prctl, ARCH_SET_GS, old_gs);
  ::sigaction(SIGTRAP, &old, nullptr);
  g_tracer = nullptr;
  area.drain(log);
  INFO(failure);
  REQUIRE(failure.empty());
  return result;
}

// The log with returns into the C++ caller as kCaller; without the stack
// fields unless `stacks`.
std::vector<LogRecord> normalized(std::vector<LogRecord> log, bool stacks = false) {
  for (LogRecord& r : log) {
    if (!in_code(r.to)) r.to = kCaller;
    if (!stacks) r.rsp = r.rbp = 0;
  }
  return log;
}

std::vector<LogRecord> loop_branches(long n) {
  std::vector<LogRecord> out;
  for (long rcx = n; rcx > 0; --rcx) {
    if (rcx < 3) {
      out.push_back({addr(bttest_loop_jb), addr(bttest_loop_small)});
      out.push_back({addr(bttest_loop_jmp), addr(bttest_loop_next)});
    }
    if (rcx > 1) out.push_back({addr(bttest_loop_jnz), addr(bttest_loop_top)});
  }
  out.push_back({addr(bttest_loop_ret), kCaller});
  return out;
}

}  // namespace

TEST_CASE("straight-line RIP-relative loads, stores and lea run from the cache", "[block_translator]") {
  // Every run under both ways of writing the log (block_translator.h).
  const auto stores = GENERATE(decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched);
  const long native = bttest_straight(2);
  REQUIRE(native == 2 * 42 + 1);
  Tracer tracer(1024, stores);
  CHECK(tracer.run(reinterpret_cast<const void*>(bttest_straight), 2) == native);
  CHECK(normalized(tracer.log) == std::vector<LogRecord>{{addr(bttest_straight_ret), kCaller}});
  CHECK(tracer.indirect_exits == 1);
  CHECK(tracer.run(reinterpret_cast<const void*>(bttest_lea), 0) == bttest_lea(0));
  REQUIRE(bttest_rip_forms(0) == 120);
  CHECK(tracer.run(reinterpret_cast<const void*>(bttest_rip_forms), 0) == 120);
  // gcc's vectorised code reads its constants so (csmith seed 30004 at -O2
  // ran its hot loop under int3s when these were refused).
  REQUIRE(bttest_rip_sse(0) == 27);
  CHECK(tracer.run(reinterpret_cast<const void*>(bttest_rip_sse), 0) == 27);

  // Every cache pc of the block's body stands for one of its instructions,
  // each instruction for some cache code, the ret's instrumentation for the ret.
  const Translation& t = tracer.blocks.at(addr(bttest_straight));
  CHECK(t.instructions == 10);
  CHECK(t.end == addr(bttest_straight_ret) + 1);
  CHECK(t.original_pc(t.cache_address) == addr(bttest_straight));
  std::vector<uint64_t> originals;
  for (const auto& e : t.pc_map) {
    if (e.original >= t.address && e.original < t.end) originals.push_back(e.original);
  }
  CHECK(originals.size() == t.instructions);
  CHECK(std::is_sorted(originals.begin(), originals.end()));
  CHECK(t.original_pc(t.cache_address + t.exits.front().trap_offset - 1) == addr(bttest_straight_ret));
  CHECK(t.original_pc(t.cache_address - 1) == 0);
}

TEST_CASE("jcc logs exactly the taken branches and keeps flags, registers and the red zone", "[block_translator]") {
  // Every run under both ways of writing the log (block_translator.h).
  const auto stores = GENERATE(decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched);
  for (long n : {1, 2, 5}) {
    CAPTURE(n);
    Tracer tracer(1024, stores);
    CHECK(tracer.run(reinterpret_cast<const void*>(bttest_loop), n) == bttest_loop(n));
    CHECK(normalized(tracer.log) == loop_branches(n));
  }
  constexpr uint64_t kStatusFlags = 0x8d5;  // CF PF AF ZF SF OF
  for (long rdi : {-3, 4, 5, 6}) {
    CAPTURE(rdi);
    Tracer tracer(1024, stores);
    const uint64_t flags = static_cast<uint64_t>(tracer.run(reinterpret_cast<const void*>(bttest_flags), rdi));
    CHECK((flags & kStatusFlags) == (static_cast<uint64_t>(bttest_flags(rdi)) & kStatusFlags));
    std::vector<LogRecord> expected;
    if (rdi < 5) expected.push_back({addr(bttest_flags_jl), addr(bttest_flags_less)});
    const std::vector<LogRecord> log = normalized(tracer.log);
    CHECK(log.size() == expected.size() + 1);
    CHECK(std::equal(expected.begin(), expected.end(), log.begin()));
  }
}

TEST_CASE("loop, jrcxz and rel32 jcc branch as the original does", "[block_translator]") {
  // Every run under both ways of writing the log (block_translator.h).
  const auto stores = GENERATE(decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched);
  REQUIRE(bttest_forms_je32[0] == 0x0f);  // the rel32 form
  for (long n : {1, 3}) {
    CAPTURE(n);
    REQUIRE(bttest_forms(n) == n + 100);
    Tracer tracer(1024, stores);
    CHECK(tracer.run(reinterpret_cast<const void*>(bttest_forms), n) == n + 100);
    std::vector<LogRecord> expected(static_cast<std::size_t>(n - 1), {addr(bttest_forms_loop), addr(bttest_forms_top)});
    expected.push_back({addr(bttest_forms_jrcxz), addr(bttest_forms_zero)});
    expected.push_back({addr(bttest_forms_je32), addr(bttest_forms_eq)});
    expected.push_back({addr(bttest_forms_ret), kCaller});
    CHECK(normalized(tracer.log) == expected);
  }
}

TEST_CASE("a call pushes the original return address and ret logs its target", "[block_translator]") {
  // Every run under both ways of writing the log (block_translator.h).
  const auto stores = GENERATE(decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched);
  REQUIRE(bttest_call(41) == 42);
  Tracer tracer(1024, stores);
  CHECK(tracer.run(reinterpret_cast<const void*>(bttest_call), 41) == 42);
  CHECK(normalized(tracer.log) == std::vector<LogRecord>{{addr(bttest_call_site), addr(bttest_callee)},
                                                         {addr(bttest_callee_ret), addr(bttest_call_ret)},
                                                         {addr(bttest_call_ret), kCaller}});
  // rsp and rbp as before each branch: the callee runs 8 bytes lower, and
  // returns to where the call left.
  const std::vector<LogRecord> log = normalized(tracer.log, true);
  REQUIRE(log.size() == 3);
  CHECK(log[1].rsp == log[0].rsp - 8);
  CHECK(log[2].rsp == log[0].rsp);
  CHECK(log[0].rsp != 0);
  CHECK(log[0].rbp == log[1].rbp);
  CHECK(log[1].rbp == log[2].rbp);
}

TEST_CASE("a log-full exit owes the same record the log would have held", "[block_translator]") {
  // Every run under both ways of writing the log (block_translator.h).
  const auto stores = GENERATE(decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched);
  for (long arg : {0L, 1L}) {
    CAPTURE(arg);
    Tracer roomy(1024, stores);
    const long native = roomy.run(reinterpret_cast<const void*>(bttest_indirect), arg);
    for (std::size_t capacity : {1, 2}) {
      CAPTURE(capacity);
      Tracer cramped(capacity, stores);
      CHECK(cramped.run(reinterpret_cast<const void*>(bttest_indirect), arg) == native);
      CHECK(cramped.full_exits > 0);
      CHECK(normalized(cramped.log, true) == normalized(roomy.log, true));
    }
  }
  for (const void* function : {reinterpret_cast<const void*>(bttest_retimm), reinterpret_cast<const void*>(bttest_below)}) {
    Tracer roomy(1024, stores);
    const long native = roomy.run(function, 6);
    for (std::size_t capacity : {1, 2}) {
      CAPTURE(capacity);
      Tracer cramped(capacity, stores);
      CHECK(cramped.run(function, 6) == native);
      CHECK(cramped.full_exits > 0);
      CHECK(normalized(cramped.log, true) == normalized(roomy.log, true));
      // A call's exit runs the call again from the cache: nothing below rsp
      // written before.
      if (function == reinterpret_cast<const void*>(bttest_below)) CHECK(cramped.below_checked > 0);
    }
  }
}

// btstub puts a thread back before a log-full exit's branch when the trace
// has no room for it (--trace-full=stop): rsp_adjust and rcx_adjust must
// give the registers the branch had, or running it again goes wrong (a
// loop counted twice, a call's push or a ret's pop done twice).
TEST_CASE("a thread put back before a log-full exit's branch runs it again as the original", "[block_translator]") {
  // Every run under both ways of writing the log (block_translator.h).
  const auto stores = GENERATE(decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched);
  struct Case {
    const void* function;
    long arg;
  };
  for (const Case& c : {Case{reinterpret_cast<const void*>(bttest_forms), 5},
                        Case{reinterpret_cast<const void*>(bttest_indirect), 0},
                        Case{reinterpret_cast<const void*>(bttest_indirect), 1},
                        Case{reinterpret_cast<const void*>(bttest_retimm), 6},
                        Case{reinterpret_cast<const void*>(bttest_loop), 40},
                        Case{reinterpret_cast<const void*>(bttest_below), 10}}) {
    CAPTURE(c.arg);
    Tracer roomy(1024, stores);
    const long native = roomy.run(c.function, c.arg);
    Tracer cramped(2, stores);
    cramped.back_at_full = true;
    CHECK(cramped.run(c.function, c.arg) == native);
    CHECK(cramped.full_exits > 0);
    CHECK(normalized(cramped.log, true) == normalized(roomy.log, true));
    // Put back before a call, the thread finds below rsp what the program
    // wrote there (the translation once pushed before it checked the log).
    if (c.function == reinterpret_cast<const void*>(bttest_below)) CHECK(cramped.below_checked > 0);
  }
  // Only a loop's exits count rcx, and only its log-full one says so.
  const uint64_t near = addr(bttest_end) + 0x1000;
  auto loop = translate_block(addr(bttest_forms_top), code_at(addr(bttest_forms_top)), near);
  REQUIRE(loop);
  int counted = 0;
  for (const BlockExit& e : loop->exits) {
    CHECK(e.rcx_adjust == (e.kind == ExitKind::LogFull ? 1 : 0));
    counted += e.rcx_adjust;
  }
  CHECK(counted == 1);
  auto jrcxz = translate_block(addr(bttest_forms_jrcxz), code_at(addr(bttest_forms_jrcxz)), near);
  REQUIRE(jrcxz);
  for (const BlockExit& e : jrcxz->exits) CHECK(e.rcx_adjust == 0);
  // A loop on ecx zero-extends its count: not translated.
  auto ecx_loop = translate_block(0x401000, std::vector<uint8_t>{0x67, 0xe2, 0xfe}, 0x402000);
  REQUIRE_FALSE(ecx_loop);
  CHECK(ecx_loop.error().message.find("loop on ecx") != std::string::npos);
}

// Both ways run alike in every test above; here, that each writes its
// records as it says: movnti, or mov after a prefetchw of the line
// decoder::kLogPrefetchAhead bytes on (a direct and an indirect branch).
TEST_CASE("log stores: movnti, or plain stores after a prefetchw ahead", "[block_translator]") {
  const uint64_t near = addr(bttest_end) + 0x1000;
  auto count = [](const std::vector<uint8_t>& code, std::vector<uint8_t> pattern) {
    int n = 0;
    for (auto it = code.begin(); (it = std::search(it, code.end(), pattern.begin(), pattern.end())) != code.end(); ++it) ++n;
    return n;
  };
  std::vector<uint8_t> prefetchw = {0x65, 0x0f, 0x0d, 0x89};
  const int32_t ahead = decoder::kLogPrefetchAhead;
  for (int i = 0; i < 4; ++i) prefetchw.push_back(static_cast<uint8_t>(ahead >> (8 * i)));
  const std::vector<uint8_t> movnti = {0x65, 0x48, 0x0f, 0xc3};
  for (uint64_t block : {addr(bttest_call), addr(bttest_call_ret)}) {
    CAPTURE(block);
    decoder::TranslateOptions cached;
    cached.log_stores = decoder::LogStores::CachedPrefetched;
    auto plain = translate_block(block, code_at(block), near);
    auto prefetched = translate_block(block, code_at(block), near, cached);
    REQUIRE(plain);
    REQUIRE(prefetched);
    CHECK(count(plain->code, movnti) == 4);  // from, to, rsp, rbp
    CHECK(count(plain->code, prefetchw) == 0);
    CHECK(count(prefetched->code, movnti) == 0);
    CHECK(count(prefetched->code, prefetchw) == 1);
  }
}

TEST_CASE("a block ending in a call names where the call returns to", "[block_translator]") {
  // The translating tracer translates return sites ahead and enters them
  // in the indirect table (stub/tracing/translating_tracer_ahead.cc).
  const uint64_t near = addr(bttest_end) + 0x1000;
  auto call = translate_block(addr(bttest_call), code_at(addr(bttest_call)), near);
  REQUIRE(call);
  CHECK(call->return_site == addr(bttest_call_ret));
  CHECK(call->return_site == call->end);
  auto indirect_call = translate_block(addr(bttest_ind_call_mem), code_at(addr(bttest_ind_call_mem)), near);
  REQUIRE(indirect_call);
  CHECK(indirect_call->return_site == addr(bttest_ind_b0_ret));
  auto ret = translate_block(addr(bttest_call_ret), code_at(addr(bttest_call_ret)), near);
  REQUIRE(ret);
  CHECK(ret->return_site == 0);
  auto jumps = translate_block(addr(bttest_ind_jmp_reg), code_at(addr(bttest_ind_jmp_reg)), near);
  REQUIRE(jumps);
  CHECK(jumps->return_site == 0);
}

TEST_CASE("a block ending in a jmp or call through a RIP-relative slot names the slot", "[block_translator]") {
  // The translating tracer translates what the slot holds ahead and enters
  // it in the indirect table (stub/tracing/translating_tracer_ahead.cc).
  const uint64_t near = addr(bttest_end) + 0x1000;
  auto slot_value = [](uint64_t slot) {
    uint64_t value = 0;
    std::memcpy(&value, reinterpret_cast<const void*>(slot), sizeof value);
    return value;
  };
  auto call = translate_block(addr(bttest_ind_call_mem), code_at(addr(bttest_ind_call_mem)), near);
  REQUIRE(call);
  REQUIRE(call->target_slot != 0);
  CHECK(slot_value(call->target_slot) == addr(bttest_ind_callee));
  auto jump = translate_block(addr(bttest_ind_b0_ret), code_at(addr(bttest_ind_b0_ret)), near);
  REQUIRE(jump);
  REQUIRE(jump->target_slot != 0);
  CHECK(slot_value(jump->target_slot) == addr(bttest_ind_end));
  // Through a register, through memory a register addresses, a return.
  for (uint64_t other : {addr(bttest_ind_jmp_reg), addr(bttest_ind_jmp_mem), addr(bttest_ind_call_reg),
                         addr(bttest_call_ret)}) {
    CAPTURE(other);
    auto t = translate_block(other, code_at(other), near);
    REQUIRE(t);
    CHECK(t->target_slot == 0);
  }
}

TEST_CASE("stops inside the instrumentation: entries, fault points and trap pcs", "[block_translator]") {
  const uint64_t near = addr(bttest_end) + 0x1000;
  auto call = translate_block(addr(bttest_call), code_at(addr(bttest_call)), near);
  REQUIRE(call);
  // The push of the return address is the one fault point of a direct call:
  // rcx is borrowed there (the log's cursor, checked first) and rax (the
  // return address).
  REQUIRE(call->fault_points.size() == 1);
  CHECK(call->fault_points[0].rax_saved);
  CHECK(call->fault_points[0].rcx_saved);
  CHECK(call->code[call->fault_points[0].offset] == 0x50);  // push %rax
  // Its log-full exit comes before that push, and runs the call again.
  int retries = 0;
  for (const BlockExit& exit : call->exits) {
    if (exit.kind != ExitKind::LogFull) continue;
    ++retries;
    CHECK(exit.retry);
    CHECK(call->at_entry(call->cache_address + exit.retry_offset));
    CHECK(call->original_pc(call->cache_address + exit.retry_offset) == addr(bttest_call_site));
  }
  CHECK(retries == 1);
  CHECK(call->original_pc(call->cache_address + call->fault_points[0].offset) == addr(bttest_call_site));
  CHECK(call->at_entry(call->cache_address));
  CHECK_FALSE(call->at_entry(call->cache_address + call->fault_points[0].offset));
  for (const BlockExit& exit : call->exits) {
    // A trap pc is no instruction start: a step landing there is no exit.
    CHECK_FALSE(call->at_entry(call->cache_address + exit.trap_offset));
    CHECK(call->code[exit.trap_offset - 1] == 0xcc);
  }
  auto ret = translate_block(addr(bttest_call_ret), code_at(addr(bttest_call_ret)), near);
  REQUIRE(ret);
  REQUIRE(ret->fault_points.size() == 1);  // reading the return slot
  CHECK(ret->fault_points[0].rax_saved);
  CHECK(ret->fault_points[0].rcx_saved);
  CHECK(ret->fault_point_at(ret->cache_address + ret->fault_points[0].offset) == &ret->fault_points[0]);
  CHECK(ret->fault_point_at(ret->cache_address) == nullptr);
}

TEST_CASE("options end blocks before system calls and named addresses", "[block_translator]") {
  const uint64_t near = addr(bttest_end) + 0x1000;
  decoder::TranslateOptions options;
  options.syscalls_exit = true;
  auto sys = translate_block(addr(bttest_syscall), code_at(addr(bttest_syscall)), near, options);
  REQUIRE(sys);
  CHECK(sys->stopped_before.find("system call") != std::string::npos);
  REQUIRE(sys->exits.size() == 1);
  CHECK(sys->exits[0].kind == ExitKind::Direct);
  const uint64_t syscall_at = sys->exits[0].target;
  CHECK_FALSE(translate_block(syscall_at, code_at(syscall_at), near, options));

  decoder::TranslateOptions at_ret;
  at_ret.stop_before = [](uint64_t a) { return a == addr(bttest_callee_ret); };
  auto callee = translate_block(addr(bttest_callee), code_at(addr(bttest_callee)), near, at_ret);
  REQUIRE(callee);
  CHECK(callee->end == addr(bttest_callee_ret));
  REQUIRE(callee->exits.size() == 1);
  CHECK(callee->exits[0].target == addr(bttest_callee_ret));
  CHECK_FALSE(translate_block(addr(bttest_callee_ret), code_at(addr(bttest_callee_ret)), near, at_ret));
}

TEST_CASE("an indirect target in the table is reached without an exit", "[block_translator]") {
  // Every run under both ways of writing the log (block_translator.h).
  const auto stores = GENERATE(decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched);
  for (long arg : {0L, 1L}) {
    CAPTURE(arg);
    Tracer plain(1024, stores);
    const long native = plain.run(reinterpret_cast<const void*>(bttest_indirect), arg);
    Tracer tabled(1024, stores);
    tabled.table = true;
    CHECK(tabled.run(reinterpret_cast<const void*>(bttest_indirect), arg) == native);
    const int first_exits = tabled.indirect_exits;
    CHECK(first_exits == plain.indirect_exits);  // an empty table: every one exits
    tabled.log.clear();
    CHECK(tabled.run(reinterpret_cast<const void*>(bttest_indirect), arg) == native);
    // Again, with every target inside the code in the table: only the
    // return into the C++ caller exits; the log is the same.
    CHECK(tabled.indirect_exits == first_exits + 1);
    CHECK(normalized(tabled.log, true) == normalized(plain.log, true));
  }
  // A colliding entry (the same index, another address) is a miss.
  Tracer collided(1024, stores);
  collided.table = true;
  collided.run(reinterpret_cast<const void*>(bttest_call), 1);
  const int exits = collided.indirect_exits;
  const uint64_t other = addr(bttest_call_ret) + 0xffff;  // bits 0-15 one less, 16-31 one more
  REQUIRE((addr(bttest_call_ret) & 0xffff) != 0);
  REQUIRE(decoder::indirect_entry_offset(other) == decoder::indirect_entry_offset(addr(bttest_call_ret)));
  collided.area.enter_indirect(other, collided.blocks.begin()->second.cache_address);
  collided.log.clear();
  CHECK(collided.run(reinterpret_cast<const void*>(bttest_call), 1) == 2);
  CHECK(collided.indirect_exits == exits + 2);  // the callee's ret and the final one
  CHECK(normalized(collided.log).size() == 3);
}

TEST_CASE("targets 64 KiB apart take different table entries", "[block_translator]") {
  for (uint64_t target : {uint64_t{0x7ffff7f40eb0}, uint64_t{0x555555554000}, uint64_t{0x401000}}) {
    CAPTURE(target);
    CHECK(decoder::indirect_entry_offset(target) != decoder::indirect_entry_offset(target + 0x10000));
    CHECK(decoder::indirect_entry_offset(target) != decoder::indirect_entry_offset(target + 0x30000));
    CHECK(decoder::indirect_entry_offset(target) >= decoder::kIndirectTable);
    CHECK(decoder::indirect_entry_offset(target) + decoder::kIndirectEntrySize <= decoder::kThreadAreaAboveBase);
  }
}

TEST_CASE("no indirect target matches an empty table entry, a null one included", "[block_translator]") {
  for (uint64_t target : {uint64_t{0}, uint64_t{1}, uint64_t{0xffff}, uint64_t{0x10000}, ~uint64_t{0},
                          ~uint64_t{0} << 16, uint64_t{0x555555554000}}) {
    CAPTURE(target);
    const uint64_t offset = decoder::indirect_entry_offset(target);
    const std::vector<uint8_t> entry = decoder::empty_indirect_entry(offset);
    REQUIRE(entry.size() == decoder::kIndirectEntrySize);
    uint64_t key = 0, cache_address = 0;
    std::memcpy(&key, entry.data(), 8);
    std::memcpy(&cache_address, entry.data() + 8, 8);
    CHECK(key + target != 0);  // the translations' test: -original + target == 0
    CHECK(cache_address == 0);
  }
}

TEST_CASE("ret imm16 pops its bytes", "[block_translator]") {
  // Every run under both ways of writing the log (block_translator.h).
  const auto stores = GENERATE(decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched);
  REQUIRE(bttest_retimm(6) == 7);
  Tracer tracer(1024, stores);
  CHECK(tracer.run(reinterpret_cast<const void*>(bttest_retimm), 6) == 7);
  CHECK(normalized(tracer.log) == std::vector<LogRecord>{{addr(bttest_retimm_site), addr(bttest_retimm_callee)},
                                                         {addr(bttest_retimm_ret), addr(bttest_retimm_back)},
                                                         {addr(bttest_retimm_back), kCaller}});
}

TEST_CASE("indirect jmp and call through registers and memory are logged", "[block_translator]") {
  // Every run under both ways of writing the log (block_translator.h).
  const auto stores = GENERATE(decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched);
  REQUIRE(bttest_indirect(0) == 11);
  REQUIRE(bttest_indirect(1) == 21);
  Tracer tracer(1024, stores);
  CHECK(tracer.run(reinterpret_cast<const void*>(bttest_indirect), 0) == 11);
  CHECK(normalized(tracer.log) == std::vector<LogRecord>{{addr(bttest_ind_jmp_reg), addr(bttest_ind_a)},
                                                         {addr(bttest_ind_jmp_mem), addr(bttest_ind_b0)},
                                                         {addr(bttest_ind_call_mem), addr(bttest_ind_callee)},
                                                         {addr(bttest_ind_callee_ret), addr(bttest_ind_b0_ret)},
                                                         {addr(bttest_ind_b0_ret), addr(bttest_ind_end)},
                                                         {addr(bttest_ind_end), kCaller}});
  tracer.log.clear();
  CHECK(tracer.run(reinterpret_cast<const void*>(bttest_indirect), 1) == 21);
  CHECK(normalized(tracer.log) == std::vector<LogRecord>{{addr(bttest_ind_jmp_reg), addr(bttest_ind_a)},
                                                         {addr(bttest_ind_jmp_mem), addr(bttest_ind_b1)},
                                                         {addr(bttest_ind_call_reg), addr(bttest_ind_callee)},
                                                         {addr(bttest_ind_callee_ret), addr(bttest_ind_end)},
                                                         {addr(bttest_ind_end), kCaller}});
}

TEST_CASE("a full log exits, and draining it keeps every branch in order", "[block_translator]") {
  // Every run under both ways of writing the log (block_translator.h).
  const auto stores = GENERATE(decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched);
  for (std::size_t capacity : {1, 2, 3}) {
    CAPTURE(capacity);
    Tracer tracer(capacity, stores);
    CHECK(tracer.run(reinterpret_cast<const void*>(bttest_loop), 5) == bttest_loop(5));
    CHECK(normalized(tracer.log) == loop_branches(5));
    CHECK(tracer.full_exits >= static_cast<int>(loop_branches(5).size() / (capacity + 1)));
  }
  // Full at an indirect branch too.
  Tracer tracer(1, stores);
  CHECK(tracer.run(reinterpret_cast<const void*>(bttest_call), 1) == 2);
  CHECK(normalized(tracer.log).size() == 3);
  CHECK(tracer.full_exits > 0);
}

TEST_CASE("a direct exit linked to another translation runs through both", "[block_translator]") {
  // Every run under both ways of writing the log (block_translator.h).
  const auto stores = GENERATE(decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched);
  Tracer tracer(1024, stores);
  tracer.link = false;
  CHECK(tracer.run(reinterpret_cast<const void*>(bttest_link), 0) == 3);
  CHECK(tracer.direct_exits == 1);  // unlinked: through the stub

  const Translation& a = tracer.blocks.at(addr(bttest_link));
  const uint64_t b = tracer.entry(addr(bttest_link_b));
  REQUIRE(a.exits.size() == 2);  // the jmp's stub, its log-full trap
  const auto direct = std::find_if(a.exits.begin(), a.exits.end(), [](const BlockExit& e) { return e.kind == ExitKind::Direct; });
  REQUIRE(direct != a.exits.end());
  CHECK(direct->target == addr(bttest_link_b));
  CHECK(direct->logged);
  auto patch = decoder::link_exit(a, static_cast<std::size_t>(direct - a.exits.begin()), b);
  REQUIRE(patch);
  apply(*patch);
  tracer.log.clear();
  tracer.direct_exits = 0;
  CHECK(tracer.run(reinterpret_cast<const void*>(bttest_link), 0) == 3);
  CHECK(tracer.direct_exits == 0);
  CHECK(normalized(tracer.log) == std::vector<LogRecord>{{addr(bttest_link_jmp), addr(bttest_link_b)},
                                                         {addr(bttest_link_ret), kCaller}});
  // Linked back to its stub, the exit traps again.
  auto unlink = decoder::link_exit(a, static_cast<std::size_t>(direct - a.exits.begin()), a.cache_address + direct->stub_offset);
  REQUIRE(unlink);
  apply(*unlink);
  CHECK(tracer.run(reinterpret_cast<const void*>(bttest_link), 0) == 3);
  CHECK(tracer.direct_exits == 1);
}

TEST_CASE("a system call runs inside a translation", "[block_translator]") {
  // Every run under both ways of writing the log (block_translator.h).
  const auto stores = GENERATE(decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched);
  Tracer tracer(1024, stores);
  CHECK(tracer.run(reinterpret_cast<const void*>(bttest_syscall), 0) == ::getpid());
  CHECK(normalized(tracer.log) == std::vector<LogRecord>{{addr(bttest_syscall_ret), kCaller}});
}

TEST_CASE("VEX and EVEX forms Capstone does not know are copied, a RIP-relative one retargeted", "[block_translator]") {
  // Every run under both ways of writing the log (block_translator.h).
  const auto stores = GENERATE(decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched);
  // Translated for a cache 256 MiB away, so that a copied disp32 would
  // miss the text: it must be made to reach it from there.
  const uint64_t cache = addr(bttest_end) + (uint64_t{256} << 20);
  auto t = translate_block(addr(bttest_evex), code_at(addr(bttest_evex)), cache);
  REQUIRE(t);
  CHECK(t->instructions == 6);  // vpbroadcastb, vpcmpeqb, kmovd, popcnt, kortestd, jz
  CHECK(t->end == addr(bttest_evex_test));
  const auto entry = std::find_if(t->pc_map.begin(), t->pc_map.end(),
                                  [](const decoder::PcMapEntry& e) { return e.original == addr(bttest_evex_rip); });
  REQUIRE(entry != t->pc_map.end());
  constexpr std::size_t kSize = 10, kDisp = 6;  // 62 f1 75 20 74 0d disp32
  REQUIRE(entry->offset + kSize <= t->code.size());
  const uint8_t* copied = t->code.data() + entry->offset;
  CHECK(std::memcmp(copied, bttest_evex_rip, kDisp) == 0);
  int32_t original_disp = 0, copied_disp = 0;
  std::memcpy(&original_disp, bttest_evex_rip + kDisp, 4);
  std::memcpy(&copied_disp, copied + kDisp, 4);
  CHECK(t->cache_address + entry->offset + kSize + copied_disp == addr(bttest_evex_rip) + kSize + original_disp);

  auto gs = translate_block(addr(bttest_evex_gs), code_at(addr(bttest_evex_gs)), cache);
  REQUIRE_FALSE(gs);
  CHECK(gs.error().message.find("gs") != std::string::npos);

  if (!__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl")) {
    WARN("this CPU has no AVX-512BW/VL: the translations are not run");
    return;
  }
  REQUIRE(bttest_evex('a') == 11);
  REQUIRE(bttest_evex('z') == -1);
  for (long byte : {'a', 'n', 'z'}) {
    CAPTURE(byte);
    Tracer tracer(1024, stores);
    CHECK(tracer.run(reinterpret_cast<const void*>(bttest_evex), byte) == bttest_evex(byte));
    std::vector<LogRecord> expected;
    if (byte == 'z') expected.push_back({addr(bttest_evex_jz), addr(bttest_evex_none)});
    const std::vector<LogRecord> log = normalized(tracer.log);
    CHECK(log.size() == expected.size() + 1);
    CHECK(std::equal(expected.begin(), expected.end(), log.begin()));
  }
}

TEST_CASE("blocks end before what they cannot run, and untranslatable code is an error", "[block_translator]") {
  const uint64_t near = addr(bttest_end) + 0x1000;
  auto stop = translate_block(addr(bttest_stop), code_at(addr(bttest_stop)), near);
  REQUIRE(stop);
  CHECK(stop->end == addr(bttest_stop_at));
  CHECK(stop->stopped_before.find("rdtsc") != std::string::npos);
  REQUIRE(stop->exits.size() == 1);
  CHECK(stop->exits[0].kind == ExitKind::Direct);
  CHECK(stop->exits[0].target == addr(bttest_stop_at));
  CHECK_FALSE(stop->exits[0].logged);
  // The jump out stands for the instruction not run yet; the mov before it
  // for itself.
  CHECK(stop->original_pc(stop->cache_address + stop->exits[0].link_field - 1) == addr(bttest_stop_at));
  CHECK(stop->original_pc(stop->cache_address) == addr(bttest_stop));

  auto rdtsc = translate_block(addr(bttest_stop_at), code_at(addr(bttest_stop_at)), near);
  REQUIRE_FALSE(rdtsc);
  CHECK(rdtsc.error().message.find("rdtsc") != std::string::npos);
  auto ud2 = translate_block(addr(bttest_ud2), code_at(addr(bttest_ud2)), near);
  REQUIRE_FALSE(ud2);
  CHECK(ud2.error().message.find("trapping") != std::string::npos);

  const std::vector<uint8_t> gs_load = {0x65, 0x48, 0x8b, 0x04, 0x25, 0, 0, 0, 0, 0xc3};  // mov rax, gs:[0]
  auto gs = translate_block(0x401000, gs_load, 0x402000);
  REQUIRE_FALSE(gs);
  CHECK(gs.error().message.find("gs") != std::string::npos);
  auto invalid = translate_block(0x401000, std::vector<uint8_t>{0x06, 0xc3}, 0x402000);  // push es
  REQUIRE_FALSE(invalid);
  CHECK(invalid.error().message.find("undecodable") != std::string::npos);
  CHECK_FALSE(translate_block(0x401000, std::span<const uint8_t>{}, 0x402000));

  // A cache 8 GiB away: a RIP-relative load cannot reach, a lea still can.
  const uint64_t far = addr(bttest_begin) + (uint64_t{8} << 30);
  auto load = translate_block(addr(bttest_straight), code_at(addr(bttest_straight)), far);
  REQUIRE_FALSE(load);
  CHECK(load.error().message.find("out of 32-bit reach") != std::string::npos);
  auto lea = translate_block(addr(bttest_lea), code_at(addr(bttest_lea)), far);
  CHECK(lea);

  // Only direct exits link.
  auto ret = translate_block(addr(bttest_lea), code_at(addr(bttest_lea)), near);
  REQUIRE(ret);
  REQUIRE(ret->exits.size() == 2);
  CHECK_FALSE(decoder::link_exit(*ret, 0, near));
  CHECK_FALSE(decoder::link_exit(*ret, 7, near));
}

}  // namespace test_block_translator
