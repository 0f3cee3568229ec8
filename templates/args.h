{{! Unpacks the argument slots into named locals: tensors as typed pointers,
    ints as ubg_i64, floats as float; then derived values and workspace
    buffers. Every name is marked used, so a kernel that ignores one compiles
    without warnings. The UB buffers are ub.h's and ub_buffer.h's. }}
  const ubg_slot *ubg_a = (const ubg_slot *)ubg_args_;
{{#args}}
{{#is_tensor}}
  {{#is_in}}const {{/is_in}}{{ctype}} *{{name}} = ({{#is_in}}const {{/is_in}}{{ctype}} *)ubg_a[{{index}}].p;
{{/is_tensor}}
{{#is_int}}
  const ubg_i64 {{name}} = ubg_a[{{index}}].i;
{{/is_int}}
{{#is_float}}
  const float {{name}} = (float)ubg_a[{{index}}].f;
{{/is_float}}
  (void){{name}};
{{/args}}
{{#derived}}
  const ubg_i64 {{name}} = ubg_a[{{index}}].i;
  (void){{name}};
{{/derived}}
{{#workspace}}
  {{ctype}} *{{name}} = ({{ctype}} *)ubg_a[{{index}}].p;
  (void){{name}};
{{/workspace}}
  (void)stage; (void)pid; (void)nprog; (void)ub;
