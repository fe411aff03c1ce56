/* The code translated_code_bench.cc runs natively and from the code cache
 * (decoder/block_translator.h). Every function lives in the section
 * `tcbench_code` (the linker's __start_/__stop_ symbols give its range),
 * calls nothing outside it, and takes and returns a long. Built -O2
 * without splitting hot and cold code, so that all of it stays there. */
#define BENCH __attribute__((section("tcbench_code"), noinline))

/* A bytecode interpreter: a switch on each op, which -O2 makes a jump
 * through a table (an indirect jmp a bytecode, as Lua's dispatch). */
enum { OP_PUSH, OP_ADD, OP_SUB, OP_MUL, OP_DUP, OP_SWAP, OP_DROP, OP_JNZ, OP_DEC, OP_HALT };
static const signed char kProgram[] = {
    OP_PUSH, 7, OP_DUP, OP_PUSH, 3, OP_MUL, OP_SWAP, OP_PUSH, 5, OP_ADD, OP_SUB, OP_DROP,
    OP_DEC, OP_DUP, OP_JNZ, -16, OP_HALT,
};
BENCH long tcbench_interp(long rounds) {
  long total = 0;
  for (long r = 0; r < rounds; ++r) {
    long stack[16];
    int sp = 0;
    stack[sp++] = 20; /* the loop's counter */
    const signed char* pc = kProgram;
    for (;;) {
      switch (*pc++) {
        case OP_PUSH: stack[sp++] = *pc++; break;
        case OP_ADD: --sp; stack[sp - 1] += stack[sp]; break;
        case OP_SUB: --sp; stack[sp - 1] -= stack[sp]; break;
        case OP_MUL: --sp; stack[sp - 1] *= stack[sp]; break;
        case OP_DUP: stack[sp] = stack[sp - 1]; ++sp; break;
        case OP_SWAP: { long t = stack[sp - 1]; stack[sp - 1] = stack[sp - 2]; stack[sp - 2] = t; break; }
        case OP_DROP: total += stack[--sp]; break;
        case OP_JNZ: { const signed char off = *pc++; if (stack[--sp] != 0) pc += off; break; }
        case OP_DEC: --stack[sp - 1]; break;
        case OP_HALT: goto done;
        default: return -1;
      }
    }
  done:
    total += sp;
  }
  return total;
}

/* Calls and returns: each return an indirect transfer looked up in the
 * table. */
BENCH long tcbench_fib(long n) { return n < 2 ? n : tcbench_fib(n - 1) + tcbench_fib(n - 2); }
BENCH long tcbench_calls(long rounds) {
  long total = 0;
  for (long r = 0; r < rounds; ++r) total += tcbench_fib(12);
  return total;
}

/* Direct jumps and conditional branches only. */
BENCH long tcbench_loops(long rounds) {
  long total = 0;
  for (long r = 0; r < rounds; ++r) {
    for (long i = 0; i < 64; ++i) {
      if ((i ^ r) & 1) {
        total += i;
      } else if (i & 2) {
        total -= r;
      } else {
        total ^= i << 3;
      }
    }
  }
  return total;
}
