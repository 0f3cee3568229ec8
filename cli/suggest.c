#include "suggest.h"

#include <stdio.h>
#include <string.h>

enum { MAX_NAME = 64 };

/* optimal string alignment distance, capped at MAX_NAME characters */
static int distance(const char *a, const char *b) {
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > MAX_NAME || lb > MAX_NAME) return MAX_NAME;
  int d[MAX_NAME + 1][MAX_NAME + 1];
  for (int i = 0; i <= la; i++) d[i][0] = i;
  for (int j = 0; j <= lb; j++) d[0][j] = j;
  for (int i = 1; i <= la; i++)
    for (int j = 1; j <= lb; j++) {
      int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[la][lb];
}

const char *cli_suggest(const char *got, const char *const *cands, int n) {
  if (!got) return NULL;
  int limit = (int)strlen(got) / 3, best = MAX_NAME + 1;
  if (limit < 1) limit = 1;
  const char *found = NULL;
  for (int i = 0; i < n; i++) {
    if (!cands[i]) continue;
    int dist = distance(got, cands[i]);
    if (dist < best) best = dist, found = cands[i];
  }
  return best <= limit ? found : NULL;
}

const char *cli_suggest_word(const char *got, const char *words, char *out, int nout) {
  char copy[512];
  const char *cands[64];
  int n = 0;
  snprintf(copy, sizeof copy, "%s", words);
  for (char *w = strtok(copy, " "); w && n < 64; w = strtok(NULL, " ")) cands[n++] = w;
  const char *s = cli_suggest(got, cands, n);
  if (!s) return NULL;
  snprintf(out, (size_t)nout, "%s", s);
  return out;
}
