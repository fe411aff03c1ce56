/* For test programs whose threads must be in a known state when the test
   stops one: waits until another thread of the process is inside a given
   system call (its /proc system call file then starts with the call's
   number). Bounded: where /proc cannot tell, it goes on after a while. */
#pragma once
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void wait_until_in_system_call(int tid, long number) {
  char path[64], text[32], prefix[24];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
  snprintf(prefix, sizeof prefix, "%ld ", number);
  for (int tries = 0; tries < 100000; ++tries) {
    int fd = open(path, O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
    if (fd >= 0) close(fd);
    if (n > 0) {
      text[n] = 0;
      if (strncmp(text, prefix, strlen(prefix)) == 0) return;
    }
    sched_yield();
  }
}
