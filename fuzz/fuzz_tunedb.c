/* libFuzzer target: the tuning DB's reader (gen/tunedb_read.c). Input: the
 * bytes of a DB file. Any input must load or fail with a message (a
 * position, or the entry at fault), never crash, never undefined behaviour
 * (the build has UBSan); what loads must hold only entries with a kernel,
 * pass, dtype and a shape within bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tunedb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ug_tunedb db = {0};
  char why[512];
  int rc = ug_tunedb_parse((const char *)data, size, &db, why, sizeof why);
  if (rc != 0 && !why[0]) abort(); /* a failure always says why */
  for (int i = 0; rc == 0 && i < db.n; i++)
    if (db.e[i].dtype < 0 || db.e[i].dtype > 2 || db.e[i].nshape < 0 || db.e[i].nshape > UG_TUNE_MAX_SHAPE ||
        strlen(db.e[i].kernel) >= sizeof db.e[i].kernel)
      abort();
  ug_tunedb_free(&db);
  return 0;
}
