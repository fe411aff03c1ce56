/* Prints each file descriptor it starts with and what it refers to, so a
 * test can compare what btstub and gdbserver hand the program. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void) {
  DIR *dir = opendir("/proc/self/fd");
  if (dir == NULL) return 1;
  int own = dirfd(dir);
  struct dirent *entry;
  char path[300], target[256];
  while ((entry = readdir(dir)) != NULL) {
    if (entry->d_name[0] == '.' || atoi(entry->d_name) == own) continue;
    snprintf(path, sizeof path, "/proc/self/fd/%s", entry->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    target[n > 0 ? n : 0] = '\0';
    printf("fd %s -> %s\n", entry->d_name, target);
  }
  closedir(dir);
  return 0;
}
