/* `ubgen tune --svg FILE`: one panel per tuned (pass, dtype, shape): median
 * time against the first axis (BLOCK_D, BLOCK_N, ...) on log2 x and log10 y
 * axes, one line per series (tiled or whole-row, and the other axes'
 * values), the UB limit as a dashed line after the largest block that fits,
 * the tuned variant ringed, the default marked. Written atomically. */
#include "tune_svg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gen/fsutil.h"
#include "../gen/strbuf.h"

enum { PANEL_W = 720, PANEL_H = 310, LEFT = 70, RIGHT = 210, TOP = 50, BOTTOM = 45 };
static const char *const COLORS[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                     "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

int cli_svg_panel_add(cli_svg *s, const char *title, const char *axis_name, int64_t ub_limit_x) {
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 8;
    cli_svg_panel *p = realloc(s->p, (size_t)cap * sizeof *p);
    if (!p) return -1;
    s->p = p, s->cap = cap;
  }
  cli_svg_panel *p = &s->p[s->n++];
  memset(p, 0, sizeof *p);
  snprintf(p->title, sizeof p->title, "%s", title);
  snprintf(p->axis, sizeof p->axis, "%s", axis_name);
  p->ub_limit_x = ub_limit_x;
  return 0;
}

int cli_svg_point_add(cli_svg *s, const char *series, int64_t x, double us, bool tuned, bool dflt) {
  cli_svg_panel *p = &s->p[s->n - 1];
  if (p->n == p->cap) {
    int cap = p->cap ? 2 * p->cap : 32;
    cli_svg_pt *q = realloc(p->pt, (size_t)cap * sizeof *q);
    if (!q) return -1;
    p->pt = q, p->cap = cap;
  }
  cli_svg_pt *t = &p->pt[p->n++];
  snprintf(t->series, sizeof t->series, "%s", series);
  t->x = x, t->us = us, t->tuned = tuned, t->dflt = dflt;
  return 0;
}

/* series names in first-seen order */
static int series_index(const cli_svg_panel *p, const char *name, const char **names, int *n) {
  for (int i = 0; i < *n; i++)
    if (!strcmp(names[i], name)) return i;
  names[*n] = name;
  return (*n)++;
}

static void panel(ug_buf *b, const cli_svg_panel *p, int y0) {
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (int i = 0; i < p->n; i++) {
    double lx = log2((double)p->pt[i].x), ly = log10(p->pt[i].us);
    xmin = fmin(xmin, lx), xmax = fmax(xmax, lx), ymin = fmin(ymin, ly), ymax = fmax(ymax, ly);
  }
  if (p->ub_limit_x > 0) xmax = fmax(xmax, log2((double)p->ub_limit_x) + 1);
  if (!(xmax > xmin)) xmax = xmin + 1;
  ymin = floor(ymin * 4) / 4, ymax = ceil(ymax * 4) / 4;
  if (!(ymax > ymin)) ymax = ymin + 0.25;
  const int w = PANEL_W - LEFT - RIGHT, h = PANEL_H - TOP - BOTTOM;
#define PX(lx) (LEFT + (int)((lx - xmin) / (xmax - xmin) * w))
#define PY(ly) (y0 + TOP + h - (int)((ly - ymin) / (ymax - ymin) * h))
  /* the title in two lines, what was tuned under the shape, so a long
   * variant name stays inside the panel */
  const char *cut = strstr(p->title, ": ");
  if (cut)
    ug_buf_printf(b, "<text x='%d' y='%d' font-size='13' font-weight='bold'>%.*s</text>\n"
                     "<text x='%d' y='%d' font-size='11'>%s</text>\n",
                  LEFT, y0 + 18, (int)(cut - p->title), p->title, LEFT, y0 + 36, cut + 2);
  else ug_buf_printf(b, "<text x='%d' y='%d' font-size='13' font-weight='bold'>%s</text>\n", LEFT, y0 + 18, p->title);
  ug_buf_printf(b, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#444'/>\n", LEFT, y0 + TOP, w, h);
  for (int e = (int)xmin; e <= (int)xmax; e++)
    ug_buf_printf(b, "<text x='%d' y='%d' font-size='10' text-anchor='middle'>%lld</text>\n", PX(e),
                 y0 + TOP + h + 14, (long long)1 << e);
  ug_buf_printf(b, "<text x='%d' y='%d' font-size='11' text-anchor='middle'>%s</text>\n", LEFT + w / 2, y0 + TOP + h + 32,
               p->axis);
  for (double ly = ymin; ly <= ymax + 1e-9; ly += 0.25) {
    ug_buf_printf(b, "<line x1='%d' x2='%d' y1='%d' y2='%d' stroke='#ddd'/>\n", LEFT, LEFT + w, PY(ly), PY(ly));
    ug_buf_printf(b, "<text x='%d' y='%d' font-size='10' text-anchor='end'>%.0f</text>\n", LEFT - 4, PY(ly) + 3,
                 pow(10, ly));
  }
  ug_buf_printf(b, "<text x='14' y='%d' font-size='11' transform='rotate(-90 14 %d)' text-anchor='middle'>median us "
                  "(log)</text>\n", y0 + TOP + h / 2, y0 + TOP + h / 2);
  if (p->ub_limit_x > 0) {
    int x = PX(log2((double)p->ub_limit_x) + 0.5);
    ug_buf_printf(b, "<line x1='%d' x2='%d' y1='%d' y2='%d' stroke='#000' stroke-dasharray='5,4'/>\n", x, x, y0 + TOP,
                 y0 + TOP + h);
    /* left of the line: the plot's right edge is near, and the legend beyond it */
    ug_buf_printf(b, "<text x='%d' y='%d' font-size='10' text-anchor='end' paint-order='stroke' stroke='white' stroke-width='3'>UB limit</text>\n", x - 4, y0 + TOP + 12);
  }
  const char *names[64];
  int ns = 0;
  for (int i = 0; i < p->n && ns < 64; i++) series_index(p, p->pt[i].series, names, &ns);
  for (int s = 0; s < ns; s++) {
    const char *c = COLORS[s % 10];
    ug_buf_printf(b, "<polyline fill='none' stroke='%s' stroke-width='1.5' points='", c);
    for (int i = 0; i < p->n; i++)
      if (!strcmp(p->pt[i].series, names[s]))
        ug_buf_printf(b, "%d,%d ", PX(log2((double)p->pt[i].x)), PY(log10(p->pt[i].us)));
    ug_buf_printf(b, "'/>\n");
    for (int i = 0; i < p->n; i++) {
      const cli_svg_pt *t = &p->pt[i];
      if (strcmp(t->series, names[s])) continue;
      int x = PX(log2((double)t->x)), y = PY(log10(t->us));
      ug_buf_printf(b, "<circle cx='%d' cy='%d' r='3' fill='%s'><title>%s %s=%lld: %.1f us</title></circle>\n", x, y, c,
                   t->series, p->axis, (long long)t->x, t->us);
      if (t->tuned)
        ug_buf_printf(b, "<circle cx='%d' cy='%d' r='8' fill='none' stroke='#000' stroke-width='2'/>\n", x, y);
      if (t->dflt)
        ug_buf_printf(b, "<rect x='%d' y='%d' width='10' height='10' fill='none' stroke='#555'/>\n", x - 5, y - 5);
      /* the label above the point, inside the plot */
      if (t->tuned || t->dflt)
        ug_buf_printf(b, "<text x='%d' y='%d' font-size='10' fill='%s'>%s</text>\n", x + 9, y - 9 < y0 + TOP + 10 ? y + 18 : y - 9,
                      t->tuned ? "#000" : "#555", t->tuned && t->dflt ? "tuned = default" : t->tuned ? "tuned" : "default");
    }
    if (16 * (s + 1) <= h) { /* as many legend lines as the panel's height holds */
      int ly = y0 + TOP + 6 + 16 * s;
      ug_buf_printf(b, "<line x1='%d' x2='%d' y1='%d' y2='%d' stroke='%s' stroke-width='2'/>", LEFT + w + 12,
                   LEFT + w + 32, ly, ly, c);
      ug_buf_printf(b, "<text x='%d' y='%d' font-size='10'>%s</text>\n", LEFT + w + 36, ly + 4, names[s]);
    }
  }
#undef PX
#undef PY
}

int cli_svg_write(const cli_svg *s, const char *path, char *err, size_t nerr) {
  ug_buf b = {0};
  int height = s->n * PANEL_H + 10;
  ug_buf_printf(&b, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif'>\n",
                PANEL_W, height);
  ug_buf_printf(&b, "<rect width='100%%' height='100%%' fill='white'/>\n");
  for (int i = 0; i < s->n; i++) panel(&b, &s->p[i], i * PANEL_H);
  ug_buf_printf(&b, "</svg>\n");
  int rc = -1;
  ug_diag d;
  if (!ug_buf_ok(&b)) snprintf(err, nerr, "out of memory");
  else if (ug_write_atomic(path, ug_buf_str(&b), strlen(ug_buf_str(&b)), &d) < 0) ug_diag_format(&d, err, nerr);
  else rc = 0;
  ug_buf_free(&b);
  return rc;
}

void cli_svg_free(cli_svg *s) {
  for (int i = 0; i < s->n; i++) free(s->p[i].pt);
  free(s->p);
  memset(s, 0, sizeof *s);
}
