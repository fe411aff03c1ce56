// Writes every page of a 4 MiB buffer in each round, then makes a system
// call: each checkpoint the recording takes there holds pages the program
// overwrites next, so the copies' memory grows by about 4 MiB a round
// (test_checkpoint_memory: --checkpoint-memory must thin them).
#include <stdlib.h>
#include <unistd.h>

static char buf[4 << 20];

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 60;
  for (int i = 1; i <= rounds; ++i) {
    for (size_t p = 0; p < sizeof buf; p += 4096) buf[p] = (char)i;
    getppid();  // MARK: round
  }
  return buf[8192] != (char)rounds;  // MARK: done
}
