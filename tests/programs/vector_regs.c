/* vector_regs.c: known values in the vector registers at known stops.
 *
 * Used by tests/integration/test_vector_registers.py (ymm, zmm, k registers
 * through btstub and gdbserver, a write of ymm0, the past under --record).
 *
 * Stops (break *LABEL):
 * - avx512_loaded (only on CPUs and kernels with AVX-512): zmm0 holds
 *   dwords 1..16, zmm17 dwords 0x100..0x10f, k1 0xa5a5.
 * - avx_first: ymm0 holds dwords 101..108 (the "past" value).
 * - avx_loaded: ymm0 holds dwords 1..8 (set by the instruction just
 *   before), ymm15 dwords 0x11111111 * (1..8).
 * After avx_loaded the program stores ymm0 to memory; the exit code is
 * its dword 7 (8, or what a debugger wrote there).
 */
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>

static const uint32_t ymm0_past[8] = {101, 102, 103, 104, 105, 106, 107, 108};
static const uint32_t ymm0_value[8] = {1, 2, 3, 4, 5, 6, 7, 8};
static const uint32_t ymm15_value[8] = {0x11111111, 0x22222222, 0x33333333, 0x44444444,
                                        0x55555555, 0x66666666, 0x77777777, 0x88888888};
static const uint32_t zmm0_value[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint32_t zmm17_value[16] = {0x100, 0x101, 0x102, 0x103, 0x104, 0x105, 0x106, 0x107,
                                         0x108, 0x109, 0x10a, 0x10b, 0x10c, 0x10d, 0x10e, 0x10f};
static const uint16_t k1_value = 0xa5a5;

static uint64_t xcr0(void) {
  uint32_t low, high;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return ((uint64_t)high << 32) | low;
}

/* The CPU has it and the OS saves its state (XCR0). */
static int has_avx(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX)) return 0;
  return (xcr0() & 0x6) == 0x6;
}

static int has_avx512(void) {
  unsigned a, b, c, d;
  if (!has_avx() || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_AVX512F)) return 0;
  return (xcr0() & 0xe6) == 0xe6;
}

__attribute__((noinline, noclone, target("avx512f"))) static void load_avx512(void) {
  __asm__ volatile(
      "vmovdqu32 %[z0], %%zmm0\n\t"
      "vmovdqu32 %[z17], %%zmm17\n\t"
      "kmovw %[k1], %%k1\n\t"
      ".globl avx512_loaded\n"
      "avx512_loaded:\n\t"
      "nop\n\t"
      :
      : [z0] "m"(zmm0_value), [z17] "m"(zmm17_value), [k1] "m"(k1_value)
      : "xmm0", "xmm17", "k1");
}

__attribute__((noinline, noclone, target("avx"))) static void load_avx(uint32_t *out) {
  __asm__ volatile(
      "vmovdqu %[past], %%ymm0\n\t"
      ".globl avx_first\n"
      "avx_first:\n\t"
      "nop\n\t"
      "vmovdqu %[y0], %%ymm0\n\t"
      "vmovdqu %[y15], %%ymm15\n\t"
      ".globl avx_loaded\n"
      "avx_loaded:\n\t"
      "nop\n\t"
      "vmovdqu %%ymm0, (%[out])\n\t"
      "vzeroupper\n\t"
      :
      : [past] "m"(ymm0_past), [y0] "m"(ymm0_value), [y15] "m"(ymm15_value), [out] "r"(out)
      : "xmm0", "xmm15", "memory");
}

int main(void) {
  uint32_t out[8] = {0};
  if (!has_avx()) {
    puts("no AVX");
    return 77;
  }
  if (has_avx512()) load_avx512();
  load_avx(out);
  printf("ymm0 dword 7: %u\n", out[7]);
  return (int)(out[7] & 0xff);
}
