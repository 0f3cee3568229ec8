#include <string.h>

#include "ref.h"

static const ref_entry *entries[64];
static int nentries;

void ref_register(const ref_entry *e) {
  if (nentries < 64) entries[nentries++] = e;
}

const ref_entry *ref_find(const char *kernel, const char *pass) {
  for (int i = 0; i < nentries; i++)
    if (!strcmp(entries[i]->kernel, kernel) && !strcmp(entries[i]->pass, pass)) return entries[i];
  return NULL;
}
