#pragma once
// System calls a copy of the program makes again in its own memory instead
// of stopping at them (process_copy.h, expect_calls).
//
// Each system call the program makes is an event re-execution cannot
// repeat (its result, the memory the kernel writes), so the recording
// takes a checkpoint right after it and no copy runs across it. Calls that
// only add to the calling process's own private address space, changing no
// byte it could read before, are the exception: brk growing the heap (or
// asking where it ends), mmap of private anonymous memory where nothing
// was mapped, and mprotect. A copy standing before one makes it again for
// itself, with the arguments the program gave, and gets the same result
// where its address space matches the program's; the copy checks that
// result against the recorded one, and a copy that differs is unusable
// (unknown, never a guess). Calls that take bytes away (munmap, mremap, a
// shrinking brk, mmap over a mapping) stay barriers: a reverse watch
// search compares memory across a barrier, and no hardware watch sees the
// kernel's change. Programs grow the heap all the time: Lua recording a
// script took 109 checkpoints, 26 of them after such calls
// (docs/performance.md).
//
// Calls that change nothing a later instruction can read but rax, and
// whose result the recording holds, are given to the copy instead of
// made: a sleep that ended (nanosleep, clock_nanosleep returning 0: the
// remaining time is written only when one is interrupted) and sched_yield.
// A program that polled with usleep(100) took a checkpoint, a fork, at
// every call, and recorded at a third of its speed; a copy making the
// sleep again would only wait.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace stub::process {

struct RepeatedCall {
  uint64_t pc = 0;  // the `syscall` instruction
  long number = 0;
  std::array<uint64_t, 6> args{};
  long result = 0;  // what the program got
  uint64_t r11 = 0;  // the program's after the call (its flags, with the tracer's trap flag)
  bool operator==(const RepeatedCall&) const = default;
};

// The call the program made at `pc` with `number` and `args` and got
// `result`, when a copy can make it again; nullopt when it is a barrier.
// `brk_before`: where the program's heap ended before the call, if known
// (a brk is made again only where it grows the heap or leaves it).
std::optional<RepeatedCall> repeatable_call(uint64_t pc, long number, const std::array<uint64_t, 6>& args,
                                            long result, std::optional<uint64_t> brk_before);

// The arguments the copy makes `call` with: the program's, except that an
// mmap the kernel placed goes to the address the program got, and only
// there (MAP_FIXED_NOREPLACE): a copy holds mappings the program lacks
// (btstub's counting pages) and lacks ones it holds, so the kernel's own
// choice could differ.
std::array<uint64_t, 6> repeated_args(const RepeatedCall& call);

// Whether a copy makes `call` again itself (false: it is given the
// program's result, the call changing nothing else).
bool made_again(const RepeatedCall& call);

// "brk", "mmap", ... for messages.
std::string call_name(long number);

}  // namespace stub::process
