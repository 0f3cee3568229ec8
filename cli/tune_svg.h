/* The tuner's chart (`ubgen tune --svg FILE`): time against block size. */
#ifndef CLI_TUNE_SVG_H
#define CLI_TUNE_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  char series[96]; /* "whole row, BLOCK_M=1", ... */
  int64_t x;       /* the first axis's value */
  double us;       /* median */
  bool tuned, dflt;
} cli_svg_pt;

typedef struct {
  char title[256], axis[32];
  int64_t ub_limit_x; /* the largest first-axis value that fits; 0: none */
  cli_svg_pt *pt;
  int n, cap;
} cli_svg_panel;

typedef struct {
  cli_svg_panel *p;
  int n, cap;
} cli_svg;

int cli_svg_panel_add(cli_svg *s, const char *title, const char *axis_name, int64_t ub_limit_x);
/* a point of the last panel */
int cli_svg_point_add(cli_svg *s, const char *series, int64_t x, double us, bool tuned, bool dflt);
int cli_svg_write(const cli_svg *s, const char *path, char *err, size_t nerr);
void cli_svg_free(cli_svg *s);

#endif
