/* A user's code run where it cannot take the command down: `check` and
 * `tune` run a spec's reference and its kernels (C the user wrote, through
 * templates) in a child process with a time limit, so a crash or a hang is
 * a failure named by kernel and variant, and the command goes on. The
 * child's results reach the parent through memory both share. */
#ifndef CLI_ISOLATE_H
#define CLI_ISOLATE_H

#include <stddef.h>

/* the default of --timeout: seconds one isolated call may take */
enum { CLI_TIMEOUT_DEFAULT = 300 };

/* n bytes the parent and its children share (zeroed; NULL when out of
 * memory), and their release */
void *cli_shared_alloc(size_t n);
void cli_shared_free(void *p, size_t n);

/* fn(arg) in a child process (fn returns 0 to 255: its exit status), given
 * timeout_s seconds: fn's value, or -1 with why ("killed by signal 11
 * (Segmentation fault)", "still running after 300 s: killed") when it did
 * not return; -1 with why also when the child cannot be made */
int cli_isolated(int (*fn)(void *), void *arg, int timeout_s, char *why, size_t n);

#endif
