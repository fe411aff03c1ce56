/* spawner.c: the four ways a program starts another through vfork.
 *
 * Used by tests/integration/test_vfork_record.py. Each child shares the
 * parent's memory until it execs (vfork+exec, system(), posix_spawn,
 * popen): under a branch tracer whose int3s sit in that memory, a child
 * that met one would die of SIGTRAP (system() would return 5 and print
 * nothing). With an argument, a second thread runs branchy work meanwhile.
 * Prints the children's lines, each status, "work N" with an argument;
 * exit 0.
 */
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static volatile int stop_work;

static void *worker(void *arg) {
  long n = 0;
  while (!stop_work) n += (n & 1) ? 3 : 1;
  return n >= 0 ? arg : NULL;
}

static int describe(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 100 + WTERMSIG(status);
  return -1;
}

int main(int argc, char **argv) {
  pthread_t thread;
  if (argc > 1) pthread_create(&thread, NULL, worker, argv[1]);
  fflush(stdout);
  pid_t pid = vfork(); /* MARK: vfork_call */
  if (pid == 0) {
    execl("/bin/echo", "echo", "vfork child", (char *)0);
    _exit(9);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  printf("vfork status %d\n", describe(status)); /* MARK: vfork_status */
  fflush(stdout);

  int r = system("echo system child"); /* MARK: system_call */
  printf("system status %d\n", describe(r)); /* MARK: after_system */
  fflush(stdout);

  char *spawn_argv[] = {"echo", "spawn child", NULL};
  r = posix_spawn(&pid, "/bin/echo", NULL, NULL, spawn_argv, environ);
  if (r == 0) waitpid(pid, &status, 0);
  printf("spawn %d status %d\n", r, describe(status));
  fflush(stdout);

  char line[64] = "";
  FILE *pipe = popen("echo popen child", "r");
  if (pipe != NULL && fgets(line, sizeof line, pipe) == NULL) line[0] = 0;
  r = pipe != NULL ? pclose(pipe) : -1;
  printf("popen read %s", line);
  printf("popen status %d\n", describe(r));

  if (argc > 1) {
    stop_work = 1;
    void *done;
    pthread_join(thread, &done);
    printf("work %s\n", (char *)done);
  }
  return 0;
}
