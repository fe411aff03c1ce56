/* closed_files.c: closes files whose end other processes can see, and
 * checks that they saw it (test_copy_files: a recorded program's checkpoint
 * copies must not keep them open).
 *
 *   closed_files_O0 LOCK_FILE
 *
 * 1. A pipe to a child: the parent writes 35 bytes and closes its end; the
 *    child reads until end of file (at most 5 s) and exits 0 when it came.
 * 2. An flock on LOCK_FILE, closed: a second open of it must lock at once.
 * 3. A listening socket on a port of 127.0.0.1, closed: a new socket must
 *    bind that port again.
 * Prints one line per step and exits 0 when all three went as natively.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int pipe_end(void) {
  int p[2];
  if (pipe(p) != 0) return 0;
  pid_t child = fork();
  if (child == 0) {
    close(p[1]);
    long got = 0;
    for (;;) {
      struct pollfd in = {p[0], POLLIN, 0};
      if (poll(&in, 1, 5000) != 1) _exit(1); /* no end of file in 5 s */
      char buf[64];
      ssize_t n = read(p[0], buf, sizeof buf);
      if (n <= 0) _exit(n == 0 && got == 35 ? 0 : 2);
      got += n;
    }
  }
  close(p[0]);
  for (int i = 0; i < 5; i++) {
    char line[16];
    int n = snprintf(line, sizeof line, "line %d\n", i);
    if (write(p[1], line, (size_t)n) != n) return 0;
  }
  close(p[1]);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int lock_freed(const char *path) {
  int fd = open(path, O_RDWR | O_CREAT, 0600);
  if (fd < 0 || flock(fd, LOCK_EX) != 0) return 0;
  close(fd);
  int again = open(path, O_RDWR);
  int ok = again >= 0 && flock(again, LOCK_EX | LOCK_NB) == 0;
  if (again >= 0) close(again);
  return ok;
}

static int port_freed(void) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  socklen_t len = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 1) != 0 ||
      getsockname(s, (struct sockaddr *)&a, &len) != 0) {
    return 0;
  }
  close(s);
  int s2 = socket(AF_INET, SOCK_STREAM, 0);
  int ok = s2 >= 0 && bind(s2, (struct sockaddr *)&a, sizeof a) == 0;
  if (s2 >= 0) close(s2);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  int pipe_ok = pipe_end();
  printf("pipe: %s\n", pipe_ok ? "end of file" : "no end of file");
  int lock_ok = lock_freed(argv[1]);
  printf("flock: %s\n", lock_ok ? "free after close" : "still held");
  int port_ok = port_freed();
  printf("port: %s\n", port_ok ? "bound again" : "still in use");
  return pipe_ok && lock_ok && port_ok ? 0 : 1;
}
