/* libFuzzer target: the template renderer (gen/render.c). Input: template
 * text, rendered against a fixed value tree like a kernel's (ints,
 * booleans, identifiers, a list of maps, a map). Partials are looked up in
 * an empty directory list, so {{> x}} fails cleanly. Must render or fail
 * with a located message; never crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"

static ug_value *tree;

static void build_tree(void) {
  tree = ug_map_new();
  ug_map_int(tree, "BLOCK_D", 256);
  ug_map_int(tree, "dtype_bytes", 2);
  ug_map_bool(tree, "tiled", true);
  ug_map_bool(tree, "is_f32", false);
  ug_map_ident(tree, "dtype", "bf16");
  ug_map_ident(tree, "name", "rms_norm_fwd_bf16_d256_m1_t");
  ug_value *args = ug_map_list(tree, "args");
  for (int i = 0; i < 3; i++) {
    ug_value *a = ug_list_push_map(args);
    ug_map_int(a, "slot", i);
    ug_map_ident(a, "arg", i == 0 ? "x" : i == 1 ? "w" : "y");
    ug_map_bool(a, "optional", i == 1);
  }
  ug_value *ub = ug_map_map(tree, "ub");
  ug_map_int(ub, "x_off", 0);
  ug_map_int(ub, "x_bytes", 1024);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!tree) build_tree();
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  ug_tmpl_path path = {NULL, 0, NULL, 0};
  ug_diag d;
  memset(&d, 0, sizeof d);
  char *out = ug_render_text("fuzz.c.tmpl", text, &path, tree, &d);
  if (!out && !d.text[0]) abort();
  free(out);
  free(text);
  return 0;
}
