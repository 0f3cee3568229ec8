#include "json_text.h"

int ug_json_hex4(const char *s) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    const char c = s[i];
    const int h = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

int ug_utf8_len(const char *p, const char *end) {
  const unsigned char c = (unsigned char)*p;
  const int n = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
  if (n <= 1 || end - p < n) return n == 1 ? 1 : 0;
  unsigned cp = c & (0x7f >> n);
  for (int i = 1; i < n; i++) {
    const unsigned char t = (unsigned char)p[i];
    if ((t & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (t & 0x3f);
  }
  const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
  return cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000) ? 0 : n;
}

int ug_utf8_put(unsigned cp, char out[4]) {
  if (cp < 0x80) return out[0] = (char)cp, 1;
  if (cp < 0x800) return out[0] = (char)(0xc0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3f)), 2;
  if (cp < 0x10000) {
    out[0] = (char)(0xe0 | cp >> 12), out[1] = (char)(0x80 | (cp >> 6 & 0x3f)), out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = (char)(0xf0 | cp >> 18), out[1] = (char)(0x80 | (cp >> 12 & 0x3f)), out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
  out[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}
