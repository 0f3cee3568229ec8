/* Two pieces of JSON's text that both of the library's JSON scanners need
 * (json_loc.c, which finds positions in a spec jansson has read, and
 * tunedb_read.c, which reads a tuning DB on its own). */
#ifndef UG_JSON_TEXT_H
#define UG_JSON_TEXT_H

#include <stddef.h>

/* the value of the 4 hex digits at s (the \u escape's), or -1 when one of
 * them is not a hex digit; s must hold 4 characters */
int ug_json_hex4(const char *s);
/* code point cp (< 0x110000) as UTF-8 in out; returns its length, 1 to 4 */
int ug_utf8_put(unsigned cp, char out[4]);
/* the length (1 to 4) of the well-formed UTF-8 sequence at p, which ends
 * before end; 0 where it is not one (a stray continuation byte, a sequence
 * cut short, an overlong form, a surrogate, above U+10FFFF), as jansson
 * refuses it */
int ug_utf8_len(const char *p, const char *end);

#endif
