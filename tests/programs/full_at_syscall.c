// Rounds of a call whose block runs a few instructions and then a system
// call: a trace that fills with the call stops the program at the system
// call, after the ptrace tracer stepped to it (test_trace_full_at_syscall).
#include <stdlib.h>

__attribute__((noinline)) void recording_starts(void) { __asm__ volatile("" ::: "memory"); }

// sched_yield (always 0: the same registers in every run), made here so
// that nothing but its own instructions lies between the call and the
// system call.
__attribute__((noinline)) long raw_sched_yield(void) {
  long result;
  __asm__ volatile("mov $24, %%eax\n\tsyscall" : "=a"(result) : : "rcx", "r11", "memory");
  return result;
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 8;
  recording_starts();
  long failed = 0;
  for (int i = 0; i < rounds; ++i) failed += raw_sched_yield() != 0;
  return failed != 0;  // 0
}
