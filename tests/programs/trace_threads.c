// trace_threads.c: three threads run deterministic work concurrently through
// shared code (loops, direct and indirect calls, recursion, a switch), for
// the software tracer's thread fidelity test (tests/tracing). The work lives
// in its own section, "traced_work", and calls nothing outside it, so each
// thread's path through it depends only on its seed.
//   trace_threads          the three workers in threads, started together
//   trace_threads serial   the same work one after another in the main thread
// Exit code: a checksum of the results, the same in both modes.
#include <pthread.h>
#include <string.h>

#define WORK __attribute__((section("traced_work"), noinline))

typedef unsigned (*op_fn)(unsigned, unsigned);

WORK static unsigned op_add(unsigned a, unsigned b) { return a + b; }
WORK static unsigned op_mix(unsigned a, unsigned b) { return (a ^ (b << 3)) * 2654435761u; }
WORK static unsigned op_rot(unsigned a, unsigned b) { return (a << (b & 7)) | (a >> ((32 - (b & 7)) & 31)); }

static op_fn const ops[3] = {op_add, op_mix, op_rot};

WORK static unsigned fib(unsigned n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

WORK static unsigned work(unsigned seed) {
  unsigned acc = seed;
  for (unsigned i = 0; i < 50 + 20 * seed; ++i) {
    acc = ops[(acc + i) % 3](acc, i);
    if (acc & 1) acc += fib(4 + (acc & 3));
    switch (acc % 5) {
      case 0: acc += 7; break;
      case 1: acc ^= 0x55; break;
      case 2: acc -= i; break;
      case 3: acc = acc * 3 + 1; break;
      default: acc >>= 1; break;
    }
  }
  return acc;
}

static unsigned results[3];
static pthread_barrier_t start;

static void* worker(void* arg) {
  unsigned seed = (unsigned)(unsigned long)arg;
  pthread_barrier_wait(&start);  // all three in the shared code at once
  results[seed - 1] = work(seed);
  return 0;
}

int main(int argc, char** argv) {
  int serial = argc > 1 && strcmp(argv[1], "serial") == 0;
  if (serial) {
    for (unsigned seed = 1; seed <= 3; ++seed) results[seed - 1] = work(seed);
  } else {
    pthread_t threads[3];
    pthread_barrier_init(&start, 0, 3);
    for (unsigned long seed = 1; seed <= 3; ++seed) pthread_create(&threads[seed - 1], 0, worker, (void*)seed);
    for (int i = 0; i < 3; ++i) pthread_join(threads[i], 0);
  }
  return (int)((results[0] ^ results[1] * 3 ^ results[2] * 7) % 101);
}
