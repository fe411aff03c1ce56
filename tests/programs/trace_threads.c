// trace_threads.c: three threads run deterministic work concurrently through
// shared code (loops, direct and indirect calls, recursion, a switch), for
// the software tracer's thread fidelity test (tests/tracing). The work lives
// in its own section, "traced_work", and calls nothing outside it, so each
// thread's path through it depends only on its seed. Before the work, the
// threads race through lazy binding of their own (section "lazy_binding",
// whose paths differ run to run): a call through a pointer in memory that
// another thread may rewrite between a tracer's stop at the call and the
// call's run.
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

// As a PLT slot: the first call through hooks[k] goes to resolve_k, which
// points the slot at the real function and calls it; the three threads make
// their first calls together, so a slot often changes under a thread that
// is about to call through it.
#define LAZY __attribute__((section("lazy_binding"), noinline))
typedef void (*hook_fn)(void);
static unsigned hook_calls;
LAZY static void hooked(void) { __atomic_add_fetch(&hook_calls, 1, __ATOMIC_RELAXED); }
static hook_fn hooks[64];
#define RESOLVER(k) \
  LAZY static void resolve_##k(void) { \
    hooks[k] = hooked;                  \
    hooked();                           \
  }
RESOLVER(0) RESOLVER(1) RESOLVER(2) RESOLVER(3) RESOLVER(4) RESOLVER(5) RESOLVER(6) RESOLVER(7)
RESOLVER(8) RESOLVER(9) RESOLVER(10) RESOLVER(11) RESOLVER(12) RESOLVER(13) RESOLVER(14) RESOLVER(15)
RESOLVER(16) RESOLVER(17) RESOLVER(18) RESOLVER(19) RESOLVER(20) RESOLVER(21) RESOLVER(22) RESOLVER(23)
RESOLVER(24) RESOLVER(25) RESOLVER(26) RESOLVER(27) RESOLVER(28) RESOLVER(29) RESOLVER(30) RESOLVER(31)
RESOLVER(32) RESOLVER(33) RESOLVER(34) RESOLVER(35) RESOLVER(36) RESOLVER(37) RESOLVER(38) RESOLVER(39)
RESOLVER(40) RESOLVER(41) RESOLVER(42) RESOLVER(43) RESOLVER(44) RESOLVER(45) RESOLVER(46) RESOLVER(47)
RESOLVER(48) RESOLVER(49) RESOLVER(50) RESOLVER(51) RESOLVER(52) RESOLVER(53) RESOLVER(54) RESOLVER(55)
RESOLVER(56) RESOLVER(57) RESOLVER(58) RESOLVER(59) RESOLVER(60) RESOLVER(61) RESOLVER(62) RESOLVER(63)
static hook_fn hooks[64] = {
    resolve_0, resolve_1, resolve_2, resolve_3, resolve_4, resolve_5, resolve_6, resolve_7,
    resolve_8, resolve_9, resolve_10, resolve_11, resolve_12, resolve_13, resolve_14, resolve_15,
    resolve_16, resolve_17, resolve_18, resolve_19, resolve_20, resolve_21, resolve_22, resolve_23,
    resolve_24, resolve_25, resolve_26, resolve_27, resolve_28, resolve_29, resolve_30, resolve_31,
    resolve_32, resolve_33, resolve_34, resolve_35, resolve_36, resolve_37, resolve_38, resolve_39,
    resolve_40, resolve_41, resolve_42, resolve_43, resolve_44, resolve_45, resolve_46, resolve_47,
    resolve_48, resolve_49, resolve_50, resolve_51, resolve_52, resolve_53, resolve_54, resolve_55,
    resolve_56, resolve_57, resolve_58, resolve_59, resolve_60, resolve_61, resolve_62, resolve_63};

LAZY static void call_hooks(void) {
  for (int k = 0; k < 64; ++k) hooks[k]();
}

static unsigned results[3];
static pthread_barrier_t start;

static void* worker(void* arg) {
  unsigned seed = (unsigned)(unsigned long)arg;
  pthread_barrier_wait(&start);  // all three in the shared code at once
  call_hooks();
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
