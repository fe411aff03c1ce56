// Built twice (libswap_lib1.so, libswap_lib2.so) with another SWAP_VALUE:
// the same functions at the same offsets, other immediates and another
// number of loop passes. code_swap loads one, unloads it and loads the
// other at the same address.
int swap_value(int x) {
  int sum = 0;
  for (int i = 0; i < SWAP_VALUE; ++i) sum += x * SWAP_VALUE + i;
  return sum;
}
