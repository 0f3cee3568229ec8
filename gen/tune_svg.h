/* The tuner's chart (`ubgen tune --svg FILE`): time against block size. */
#ifndef UG_TUNE_SVG_H
#define UG_TUNE_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  char series[96]; /* "whole row, BLOCK_M=1", ... */
  int64_t x;       /* the first axis's value */
  double us;       /* median */
  bool tuned, dflt;
} ug_svg_pt;

typedef struct {
  char title[256], axis[32];
  int64_t ub_limit_x; /* the largest first-axis value that fits; 0: none */
  ug_svg_pt *pt;
  int n, cap;
} ug_svg_panel;

typedef struct {
  ug_svg_panel *p;
  int n, cap;
} ug_svg;

int ug_svg_panel_add(ug_svg *s, const char *title, const char *axis_name, int64_t ub_limit_x);
/* a point of the last panel */
int ug_svg_point_add(ug_svg *s, const char *series, int64_t x, double us, bool tuned, bool dflt);
int ug_svg_write(const ug_svg *s, const char *path, char *err, size_t nerr);
void ug_svg_free(ug_svg *s);

#endif
