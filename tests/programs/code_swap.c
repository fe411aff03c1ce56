// Runs a function of a shared library often (its translation linked and
// hot), unloads the library, loads another build of it at the same
// address (the same code layout, other instructions) and runs it again:
// the translating tracer must never run the first library's translations
// for the second (the sums printed would then be the first's), nor the
// ptrace tracer write the int3s it kept in the first into the second.
// test_translate_differential.
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static long run(const char* dir, const char* name, void** base) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("cannot load %s: %s\n", path, dlerror());
    return -1;
  }
  int (*f)(int) = (int (*)(int))dlsym(lib, "swap_value");
  *base = (void*)f;
  long sum = 0;
  for (int i = 0; i < 300; ++i) sum += f(i);
  dlclose(lib);
  return sum;
}

int main(void) {
  char dir[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
  if (n <= 0) return 1;
  dir[n] = 0;
  *strrchr(dir, '/') = 0;
  void *first = 0, *second = 0;
  long a = run(dir, "libswap_lib1.so", &first);
  long b = run(dir, "libswap_lib2.so", &second);
  printf("lib1: %ld\nlib2: %ld\nsame address: %s\n", a, b, first == second ? "yes" : "no");
  return 0;
}
