// Translated code benchmark (not a test): how fast the translating
// tracer's translations run (decoder/block_translator.h), in this process,
// against the same code run natively. No ptrace, no btstub: what each
// taken branch costs the program in the code cache (the instrumentation
// that logs it, the indirect-target lookup), measured where nothing else
// moves the figures, so that a change to the emitted code can be weighed.
// The workloads are tests/bench/translated_code_workloads.c: a bytecode
// interpreter (an indirect jmp a bytecode), recursive calls (a ret each),
// and loops of direct and conditional branches. As in
// tests/unit/decoder/test_block_translator.cc, a SIGTRAP handler plays the
// tracer: it translates each block at its first exit, links direct exits,
// enters indirect targets in the table and empties the log when it is full
// (its records counted, not kept). A warm-up run translates everything;
// the timed runs then never leave the cache but at full logs. Times are
// the thread's CPU time, the median of ROUNDS runs of each in turn.
// Prints a table for docs/performance.md.
#include <asm/prctl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "decoder/block_translator.h"
#include "tests/common/translation_area.h"

extern "C" {
long tcbench_interp(long), tcbench_calls(long), tcbench_loops(long);
extern const uint8_t __start_tcbench_code[], __stop_tcbench_code[];
}

namespace {

// The thread's own CPU time: a run the scheduler set aside for another
// process counts only what it ran (these machines are shared).
double thread_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

uint64_t addr(const void* p) { return reinterpret_cast<uint64_t>(p); }
bool in_code(uint64_t a) { return a >= addr(__start_tcbench_code) && a < addr(__stop_tcbench_code); }

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "translated_code_bench: %s\n", why.c_str());
  std::exit(1);
}

// The thread's area: 1 Mi records (32 MiB), so that a run leaves the
// cache a few dozen times.
constexpr std::size_t kLogRecords = std::size_t{1} << 20;
// The cache, within reach of the code's RIP-relative operands.
constexpr std::size_t kCacheBytes = std::size_t{4} << 20;

struct Runner;
Runner* g_runner = nullptr;

struct Runner {
  explicit Runner(decoder::LogStores stores) {
    options.log_stores = stores;
    if (!cache.ok()) fail("no room for a cache near the code");
  }

  decoder::TranslateOptions options;
  test_translation::CodeCache cache{addr(__start_tcbench_code), kCacheBytes};
  test_translation::ThreadArea area{kLogRecords};
  std::map<uint64_t, decoder::Translation> blocks;       // by original address
  std::map<uint64_t, const decoder::Translation*> by_cache;  // by cache address
  uint64_t records = 0;  // branches logged (drained ones counted)
  uint64_t exits = 0;

  // Empties the log; returns how many records it held.
  uint64_t drain() {
    const uint64_t used = area.used();
    area.reset();
    return used;
  }

  uint64_t entry(uint64_t original) {
    if (auto it = blocks.find(original); it != blocks.end()) return it->second.cache_address;
    const auto* code = reinterpret_cast<const uint8_t*>(original);
    auto t = decoder::translate_block(original, {code, static_cast<std::size_t>(addr(__stop_tcbench_code) - original)},
                                      cache.next(), options);
    if (!t) fail(t.error().message);
    if (!cache.install(*t)) fail("the cache is full");
    const decoder::Translation& kept = blocks.emplace(original, std::move(*t)).first->second;
    by_cache[kept.cache_address] = &kept;
    return kept.cache_address;
  }

  // Where the thread goes on after the exit whose trap is at `pc`.
  uint64_t on_exit(uint64_t pc) {
    ++exits;
    auto it = by_cache.upper_bound(pc - 1);
    if (it == by_cache.begin()) fail("a trap outside the cache");
    const decoder::Translation& t = *std::prev(it)->second;
    const decoder::BlockExit* exit = t.exit_at(pc);
    if (exit == nullptr) fail("a trap at a pc that is no exit");
    const uint64_t target = area.slot(decoder::kSlotExitTarget);
    if (exit->kind == decoder::ExitKind::LogFull) {
      records += drain();
      if (exit->retry) return t.cache_address + exit->retry_offset;
      ++records;  // the branch the full log left out
    }
    if (!in_code(target)) return target;  // back to the caller, natively
    const uint64_t next = entry(target);
    if (exit->kind != decoder::ExitKind::Direct && exit->target == 0) area.enter_indirect(target, next);
    if (exit->kind == decoder::ExitKind::Direct) {
      if (auto patch = decoder::link_exit(t, static_cast<std::size_t>(exit - t.exits.data()), next)) {
        std::memcpy(reinterpret_cast<void*>(patch->address), patch->bytes.data(), patch->bytes.size());
      }
    }
    return next;
  }

  static void on_trap(int, siginfo_t*, void* context) {
    greg_t* regs = static_cast<ucontext_t*>(context)->uc_mcontext.gregs;
    regs[REG_RIP] = static_cast<greg_t>(g_runner->on_exit(static_cast<uint64_t>(regs[REG_RIP])));
  }

  long run(long (*function)(long), long arg) {
    const uint64_t start = entry(addr(reinterpret_cast<const void*>(function)));
    struct sigaction sa {}, old {};
    sa.sa_sigaction = on_trap;
    sa.sa_flags = SA_SIGINFO;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTRAP, &sa, &old);
    uint64_t old_gs = 0;
    ::syscall(SYS_arch_prctl, ARCH_GET_GS, &old_gs);
    g_runner = this;
    ::syscall(SYS_arch_prctl, ARCH_SET_GS, area.base());
    const long result = reinterpret_cast<long (*)(long)>(start)(arg);
    ::syscall(SYS_arch_prctl, ARCH_SET_GS, old_gs);
    ::sigaction(SIGTRAP, &old, nullptr);
    g_runner = nullptr;
    records += drain();
    return result;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Workload {
  const char* name;
  long (*function)(long);
  long arg;
};

void measure(const Workload& w, decoder::LogStores stores, int rounds) {
  Runner runner(stores);
  const long expected = w.function(w.arg);
  if (runner.run(w.function, w.arg) != expected) fail(std::string(w.name) + ": the translation computed another result");
  const uint64_t records_before = runner.records, exits_before = runner.exits;
  std::vector<double> native, translated;
  for (int r = 0; r < rounds; ++r) {
    const double t0 = thread_seconds();
    volatile long a = w.function(w.arg);
    const double t1 = thread_seconds();
    volatile long b = runner.run(w.function, w.arg);
    const double t2 = thread_seconds();
    if (a != expected || b != expected) fail(std::string(w.name) + ": a result changed");
    native.push_back(t1 - t0);
    translated.push_back(t2 - t1);
  }
  const double branches = static_cast<double>(runner.records - records_before) / rounds;
  const double n = median(native), t = median(translated);
  std::printf("| %s | %s | %.2f | %.2f | %.2f | %.0f | %.2f | %.2f | %llu |\n", w.name,
              stores == decoder::LogStores::NonTemporal ? "movnti" : "prefetchw + mov", n * 1e3, t * 1e3, t / n,
              branches, n / branches * 1e9, (t - n) / branches * 1e9,
              static_cast<unsigned long long>(runner.exits - exits_before) / static_cast<unsigned long long>(rounds));
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 11;
  if (rounds < 1) fail("usage: translated_code_bench [ROUNDS]");
  const Workload workloads[] = {
      {"interpreter", tcbench_interp, 100000},
      {"calls", tcbench_calls, 20000},
      {"loops", tcbench_loops, 100000},
  };
  std::printf(
      "| workload | log stores | native ms | translated ms | x native | taken branches | native ns a branch | added ns a "
      "branch | exits a run |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Workload& w : workloads) {
    for (auto stores : {decoder::LogStores::NonTemporal, decoder::LogStores::CachedPrefetched}) measure(w, stores, rounds);
  }
  return 0;
}
