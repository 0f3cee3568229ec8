/* cli_isolated: fork, run, wait with a deadline (cli/isolate.h). The child
 * runs OpenMP regions on one thread (the runtime's rt_omp_threads: GNU
 * libgomp's pool does not survive fork), which is right for verifying and
 * not used for timing. */
#include "isolate.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void *cli_shared_alloc(size_t n) {
  void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void cli_shared_free(void *p, size_t n) {
  if (p) munmap(p, n ? n : 1);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int cli_isolated(int (*fn)(void *), void *arg, int timeout_s, char *why, size_t n) {
  fflush(stdout), fflush(stderr); /* nothing buffered is written twice */
  const pid_t pid = fork();
  if (pid < 0) return snprintf(why, n, "cannot start a child process: %s", strerror(errno)), -1;
  if (pid == 0) _exit(fn(arg) & 0xff);
  const double deadline = now() + timeout_s;
  struct timespec nap = {0, 100000}; /* 0.1 ms, doubling to 50 ms: a short call costs little */
  int status;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return snprintf(why, n, "lost the child process: %s", strerror(errno)), -1;
    if (now() > deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      return snprintf(why, n, "still running after %d s (--timeout): killed", timeout_s), -1;
    }
    nanosleep(&nap, NULL);
    if (nap.tv_nsec < 50000000) nap.tv_nsec *= 2;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return snprintf(why, n, "killed by signal %d (%s)", sig, strsignal(sig)), -1;
}
