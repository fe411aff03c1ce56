/* spoil_log.c: for tests/integration/test_translate_lost_log.py. The
 * program writes over the log cursor of the translating tracer's area in
 * its own memory (found in /proc/self/maps: the log btstub maps near
 * 0x7ea000000000, 0x901000 bytes: an 8 MiB log of 256 Ki records, then the slots and
 * the indirect-target table; its cursor 0x800010 bytes in), as a wild store
 * could, then makes a system call at once, where btstub drains the log:
 * the branches logged since the last drain are lost, and the trace must
 * say so with a gap, never join the blocks on either side of the hole.
 * Under the ptrace tracer there is no such area, and nothing is spoiled.
 *
 * No input; the work after the spoil takes the same path in every run.
 * noipa keeps every function a real call at -O2 too.
 */
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

unsigned long g_acc;
long g_spoiled;

__attribute__((noipa)) unsigned long mix(unsigned long acc, long i) { return acc * 31 + (unsigned long)(i ^ (long)(acc >> 7)); }

__attribute__((noipa)) unsigned long work(long rounds) {
  unsigned long acc = 1;
  for (long i = 0; i < rounds; i++) acc = mix(acc, i);
  return acc;
}

/* The cursor slots of btstub's log areas (a thread has two where a CPU is
 * spare, and logs into one of them at a time), at most `max`: how many. */
__attribute__((noipa)) int cursor_slots(long **slots, int max) {
  FILE *maps = fopen("/proc/self/maps", "r");
  if (!maps) return 0;
  char line[512];
  int found = 0;
  while (fgets(line, sizeof line, maps) && found < max) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo >= 0x7e8000000000ul && lo < 0x7ec000000000ul &&
        hi - lo == 0x901000) {
      slots[found++] = (long *)(lo + 0x800010);
    }
  }
  fclose(maps);
  return found;
}

int main(void) {
  g_acc = work(2000);
  long *slots[4];
  const int found = cursor_slots(slots, 4);
  /* Both areas' (the one not in use is reset before it is used): a few
   * branches before the system call. */
  for (int i = 0; i < found; i++) *slots[i] += 8; /* no longer a whole number of records */
  g_spoiled = found > 0;
  syscall(SYS_getpid); /* drained here */
  g_acc += work(3000);
  /* Said without a branch that depends on it: the runs under both tracers
   * take one path after the system call. */
  static const char *const said[2] = {"spoiled: 0\n", "spoiled: 1\n"};
  write(1, said[g_spoiled], 11);
  return 0;
}
