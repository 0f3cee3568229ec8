/* "Did you mean": the nearest of some names to a misspelt one. */
#ifndef CLI_SUGGEST_H
#define CLI_SUGGEST_H

/* the candidate closest to got by edit distance (insertions, deletions,
 * substitutions, swaps of neighbours), when it is close enough to be a
 * slip: at most a third of got's length, and at least 1; else NULL */
const char *cli_suggest(const char *got, const char *const *cands, int n);
/* the same over the words of a space-separated list ("specs ub margin"),
 * written into out; returns out, or NULL when none is close */
const char *cli_suggest_word(const char *got, const char *words, char *out, int nout);

#endif
