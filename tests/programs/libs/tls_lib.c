/* A shared library with a thread-local variable of its own (tls_threads.c):
   its block is found through the library's link_map, not the program's. */
__thread int lib_tls = 5;

void lib_tls_set(int value) { lib_tls = value; }
