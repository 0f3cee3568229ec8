/* Where the library finds the shipped specs and templates at run time (the
 * JIT renders templates): $UBGEN_DATA_DIR, else <dir of this library or
 * program>/../share/ubgen when it exists (an installed tree), else the
 * source tree it was built from. Read once per process. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "../gen/specset.h"
#include "internal.h"

static char data_dir[4096];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void find(void) {
  Dl_info info;
  const char *anchor = NULL;
  if (dladdr((void *)&rt_data_dir, &info) && info.dli_fname) anchor = info.dli_fname;
  ug_data_dir(anchor, data_dir, sizeof data_dir);
}

const char *rt_data_dir(void) {
  pthread_once(&once, find);
  return data_dir;
}
