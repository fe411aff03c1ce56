/* Copies of the program re-run into hot code (test_past_hot_loop.py):
 * fill() runs a `rep stosb` (the label rep_insn) 402 times with 0-4
 * iterations, the last time 1; then spin() runs a one-block loop 6,000
 * times (more visits of one pc than a checkpoint stretch has branches).
 * Both write a, b, c and d, each in its own debug register when watched,
 * every so often and always to a new value. Then icall_loop calls a
 * function through a register 2,000 times. */
#include <stdio.h>

volatile long a, b, c, d;

/* icall_loop(n, fn): sum of fn(i) for i in 0..n-1, the call indirect. A
 * copy cannot count the visits of icall_insn itself (the jmp would cover an
 * indirect call); it counts those of the loop's first instruction. */
long icall_loop(long n, long (*fn)(long));
__asm__(".text\n"
        ".globl icall_loop\n.type icall_loop, @function\n"
        "icall_loop:\n"
        "\tpush %rbx\n\tpush %r12\n\tpush %rbp\n"
        "\tmov %rdi, %rbx\n\tmov %rsi, %r12\n\txor %ebp, %ebp\n"
        "1:\tmov %rbx, %rdi\n"
        "\tlea -1(%rdi), %rdi\n"
        ".globl icall_insn\nicall_insn:\n"
        "\tcall *%r12\n"
        "\tadd %rax, %rbp\n"
        "\tdec %rbx\n"
        "\tjnz 1b\n"
        "\tmov %rbp, %rax\n"
        "\tpop %rbp\n\tpop %r12\n\tpop %rbx\n"
        "\tret\n"
        ".size icall_loop, .-icall_loop\n");

__attribute__((noinline, noclone)) long twice(long x) { return 2 * x + (x & 3); }
char buf[64];

__attribute__((noinline, noclone)) void fill(char *p, long n) {
  __asm__ volatile(".globl rep_insn\nrep_insn:\n\trep stosb" : "+D"(p), "+c"(n) : "a"(0x5a) : "memory");
}

__attribute__((noinline, noclone)) unsigned long spin(unsigned long x, long n) {
  for (long i = 0; i < n; i++) {
    x = x * 6364136223846793005UL + (unsigned long)i;
    if ((i & 1023) == 1000) c += (long)(x | 1); /* MARK: spin_write */
  }
  return x;
}

int main(void) {
  for (long k = 0; k < 402; k++) {
    fill(buf, k % 5);
    if (k % 100 == 50) b += k + 1; /* MARK: fill_write */
  }
  a = 1;
  unsigned long x = spin(7, 6000);
  d = (long)x;
  long sum = icall_loop(2000, twice);
  printf("x %lu b %ld c %ld sum %ld\n", x, b, c, sum); /* MARK: done */
  return 0;
}
