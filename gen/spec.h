/* Kernel specs: the data model and the loader (docs/spec-format.md).
 *
 * A spec is one JSON file per kernel. The loader validates everything a
 * template or the runtime will rely on (names are identifiers, numbers are
 * numbers, every expression parses and uses only names it may use), so
 * nothing later has to re-check a spec, and no spec value reaches C text
 * unvalidated. Errors carry file:line:col. */
#ifndef UG_SPEC_H
#define UG_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "expr.h"

enum { UG_NDTYPES = 3 }; /* f32, f16, bf16: the values of ubg_dtype */
enum { UG_MAX_VARIANT_NAME = 128 }; /* characters, without the NUL */
enum { UG_MAX_AXES = 6, UG_MAX_ARGS = 48, UG_MAX_BUFFERS = 16, UG_MAX_STAGES = 8, UG_MAX_RANK = 4, UG_MAX_PARTIALS = 8 };
/* axis values x tiled x dtypes of one pass, before constraints (the shipped specs have under 2000) */
enum { UG_MAX_VARIANTS = 100000 };

/* Element types of tensors and buffers. UG_ELEM_T is the variant's dtype. */
typedef enum { UG_ELEM_T, UG_ELEM_F32, UG_ELEM_F16, UG_ELEM_BF16, UG_ELEM_I64, UG_ELEM_I32, UG_ELEM_U8 } ug_elem;

typedef enum { UG_ARG_TENSOR, UG_ARG_INT, UG_ARG_FLOAT } ug_argkind;
typedef enum { UG_ROLE_IN, UG_ROLE_OUT, UG_ROLE_INOUT } ug_role;

/* What a name in an expression stands for; the environment of a pass holds
 * one int64 per symbol, in this order of kinds. */
typedef enum {
  UG_SYM_AXIS,        /* an integer variant axis (BLOCK_D, ...) */
  UG_SYM_TILED,       /* the tiled axis, 0 or 1 */
  UG_SYM_DTYPE_BYTES, /* bytes of the variant's dtype */
  UG_SYM_INT,         /* an int argument (shape or option) */
  UG_SYM_HAS,         /* has_<tensor>: 1 when an optional tensor is given */
  UG_SYM_DERIVED,     /* a derived value, evaluated at launch */
  UG_SYM_DTYPE,       /* the call's dtype, 0 f32, 1 f16, 2 bf16 (a composite's arguments only) */
  UG_SYM_RUN          /* a composite's run: an integer axis's value (chunk), off and rows of a chunk */
} ug_symkind;

typedef struct {
  char *name;
  ug_symkind kind;
  int ref; /* index into axes / args / derived */
} ug_sym;

typedef struct {
  char *name;
  ug_argkind kind;
  ug_role role;         /* tensors */
  ug_elem elem;         /* tensors */
  bool optional;        /* tensors: may be NULL */
  int rank;             /* tensors */
  ug_expr *shape[UG_MAX_RANK];
  char **may_alias;     /* tensors this one may be exactly equal to */
  int nmay_alias;
  ug_expr *range_lo, *range_hi; /* integer input tensors: every element in [lo, hi), or NULL */
  ug_expr *range_except;        /* ... or equal to this (an ignore_index), or NULL */
  bool has_min, has_max; /* ints and floats */
  int64_t min, max;      /* ints */
  double fmin, fmax;     /* floats */
  int64_t *values;      /* ints: allowed values, or NULL */
  int nvalues;
  char **value_names;   /* ints: names of the values, for messages */
  bool allow_nonfinite; /* floats */
  double dflt;          /* floats and ints used by `ubgen check` when a case omits them */
  bool has_dflt;
  ug_loc at;
} ug_arg;

typedef struct {
  char *name;   /* BLOCK_D */
  char *tag;    /* "d": the variant name part _d<value> */
  int64_t *values;
  int nvalues;
  int tiles;    /* index of the int arg this block size tiles, or -1 */
  ug_expr *dflt; /* default-strategy preference for non-tiling axes, or NULL */
  ug_loc at;
} ug_axis;

typedef struct {
  char *name;
  ug_elem elem;
  ug_expr *count; /* elements */
  ug_loc at;
} ug_buffer;

typedef struct {
  char *name;
  ug_expr *value;
  ug_loc at;
} ug_derived;

typedef struct {
  ug_expr *require;
  char *why;          /* shown when the rule fails; may be NULL */
  bool variant_only;  /* uses only variant axes: filters enumeration */
  ug_loc at;
} ug_rule;

typedef struct {
  char *name;
  ug_expr *grid; /* number of grid items; programs stride over them */
  ug_loc at;
} ug_stage;

typedef struct {
  double atol, rtol;
} ug_tol;

/* One `ubgen check` case: values for int and float args, and the optional
 * tensors left out. */
typedef struct {
  int64_t ints[UG_MAX_ARGS];
  double floats[UG_MAX_ARGS];
  bool set[UG_MAX_ARGS];
  bool omit[UG_MAX_ARGS];
  ug_loc at;
} ug_case;

/* How `ubgen check` fills an input tensor: normal(0, 1) unless told. */
typedef struct {
  int arg;
  double lo, hi; /* uniform(lo, hi) */
  bool integer;  /* uniform integers in [lo, hi] */
} ug_init;

struct ug_kernel;

/* A partial the spec names: its templates' {{> name}} renders file (a
 * family of templates shared by kernels takes what differs so). */
typedef struct {
  char *name;
  char *file;
  ug_loc at; /* of the file name */
} ug_partial;

typedef struct ug_pass {
  struct ug_kernel *kernel;
  char *name;
  char *template_name;
  ug_loc template_at;
  bool dtypes[UG_NDTYPES];
  ug_axis axes[UG_MAX_AXES];
  int naxes;
  bool tiled_values[2]; /* which of tiled=false/true exist */
  bool has_tiled;
  ug_arg args[UG_MAX_ARGS];
  int nargs;
  ug_derived *derived;
  int nderived;
  ug_rule *constraints;
  int nconstraints;
  ug_rule *checks;
  int nchecks;
  ug_stage stages[UG_MAX_STAGES];
  int nstages;
  ug_buffer ub[UG_MAX_BUFFERS];
  int nub;
  ug_buffer ws[UG_MAX_BUFFERS];
  int nws;
  ug_sym *syms;
  int nsyms;
  int sym_of_arg[UG_MAX_ARGS];     /* env slot of an int arg, or of has_<tensor>; -1 */
  int sym_of_axis[UG_MAX_AXES];
  int sym_tiled, sym_dtype_bytes;  /* -1 when absent */
  int sym_dtype;                   /* "dtype": a composite's arguments only; -1 elsewhere */
  int sym_of_derived_base;         /* slot of derived[0] */
  ug_tol tol[UG_NDTYPES];
  ug_case *cases;
  int ncases;
  ug_case *tune_cases; /* "tune": the default shapes of `ubgen tune` */
  int ntune_cases;
  ug_init *inits;
  int ninits;
  bool bitwise; /* every variant gives the same bits (the spec says so) */
  ug_loc at;
} ug_pass;

/* A composite op's axis (spec "composites"): an integer with a default
 * expression over the kernel's shape and bounds, or one of named values
 * (the first the default, unless one of "prefer" can run the call). */
typedef struct {
  char *name;
  ug_expr *dflt;   /* integer axis: its default, over the kernel's shape names (env slot i = shape[i]) */
  char *dflt_src;  /* ... as written, for messages */
  int64_t min, max;
  char **values;   /* named axis: its values; NULL for an integer axis */
  int nvalues;
  int prefer[16]; /* named axis: the values (indices) taken before the first, in order, where their routine runs */
  int nprefer;
} ug_comp_axis;

/* A composite's run (spec "run", docs/spec-format.md): its scratch, and the
 * steps it takes before, per chunk of rows and after. A binding gives a
 * pass's or routine's argument: a tensor (a public argument, from the
 * chunk's first row with [off], a scratch buffer, or null; "cond ? a : b"
 * picks one), an integer expression, or a float (a public float argument
 * or a number). Expressions name the call's ints, has_<tensor>, dtype,
 * dtype_bytes, the integer axes (chunk) and, per chunk, off and rows. */
typedef struct {
  int arg;     /* index in the call's args, or -1 */
  int scratch; /* index in the run's scratch, or -1 (both -1: null) */
  bool at_off; /* NAME[off]: from row off of the call's tensor */
} ug_tref;

typedef enum { UG_BIND_TENSOR, UG_BIND_INT, UG_BIND_FLOAT } ug_bindkind;

typedef struct {
  char *param;
  ug_bindkind kind;
  ug_expr *cond;        /* tensors: cond ? then : other, or NULL for then alone */
  ug_tref then, other;
  ug_expr *value;       /* ints */
  int float_arg;        /* floats: the call's float arg, or -1 for number */
  double number;
  ug_loc at;
} ug_binding;

typedef struct {
  char *pass;       /* a pass of the kernel, launched as ubg_launch does, */
  char *routine;    /* or a routine of the runtime (NULL: the pass), which runs pass if it names one */
  ug_expr *when;    /* the step runs where it is nonzero; NULL: always */
  ug_binding *binds;
  int nbinds;
  int or_axis;      /* "or": where this named axis is not at its first value V0, */
  char *or_routine; /* the routine <or_routine>.<value> runs instead, */
  ug_binding *or_binds; /* with these bindings; or_axis -1: no "or" */
  int nor_binds;
  ug_loc at;
} ug_step;

typedef struct {
  char *name;
  ug_elem elem;
  ug_expr *count; /* elements */
  ug_expr *when;  /* allocated where nonzero (NULL: always); else bound as null */
  bool zero;      /* zeroed before the first step */
  ug_loc at;
} ug_scratch;

enum { UG_RUN_BEFORE, UG_RUN_CHUNK, UG_RUN_AFTER, UG_RUN_PHASES };

typedef struct {
  ug_expr *rows;         /* the rows the chunks cover (bt) */
  int sym_off, sym_rows; /* env slots of off and rows in the call's symbols */
  int sym_axis[8];       /* ... of each axis (a named one holds its value's index) */
  ug_scratch *scratch;
  int nscratch;
  ug_step *steps[UG_RUN_PHASES];
  int nsteps[UG_RUN_PHASES];
} ug_run;

/* An op of the kernel that runs several of its passes (its typed wrapper in
 * the runtime does), with variants of its own: the axes, in name order.
 * Its variant names are axis=value pairs in axis order, joined by ',':
 * "chunk=256,gemm=onednn". */
typedef struct {
  char *name;  /* the pass name its variants are forced under: kernel.name */
  char *about;
  ug_comp_axis *axes;
  int naxes;
  bool tune_dtypes[UG_NDTYPES]; /* "tune": the dtypes `ubgen tune` sweeps without --dtype (all by default) */
  int64_t *tune_shapes;         /* ... and its shapes without --shape: ntune rows of the kernel's shape, in its order */
  int ntune;
  /* "args" and "checks": the op's public arguments in the grammar of a
   * pass's, which the runtime validates a call against as it validates a
   * pass's (no template, stages or variants); NULL when the spec has none */
  ug_pass *call;
  ug_run *run; /* "run" (needs "args"), or NULL */
  /* "tune" beside dtypes and cases, for a composite with "args": */
  bool tune_omit[UG_MAX_ARGS]; /* "omit": optional tensors the timed calls leave out */
  ug_expr *tune_flops;         /* "flops": a call's arithmetic, for the sweep's floor; NULL: its bytes */
  char **tune_tol_value;       /* "tolerance": {value: {atol, rtol}}, per value of a named axis whose */
  ug_tol *tune_tol;            /* candidates differ from the default's bits (a library's GEMMs); */
  bool *tune_tol_scaled;       /* "scaled": atol times the largest |value| */
  int ntune_tol;               /* others must give the default candidate's bits */
} ug_composite;

typedef struct ug_kernel {
  char *name;
  ug_loc name_at; /* of the "kernel" value */
  char *path;   /* as given to the loader, for messages */
  char *dir;    /* directory of the spec, first place to look for templates */
  char *text;   /* the JSON text, embedded in AOT registries */
  size_t text_len;
  uint64_t hash; /* FNV-1a of text: AOT variants serve only the spec they came from */
  double safety_margin; /* 0: none set by the spec */
  char **shape; /* shape names (int args every pass has) */
  int nshape;
  ug_pass *passes;
  int npasses;
  char *description;
  char *reference_name; /* "reference": the C file of its double-precision references, or NULL */
  ug_loc reference_at;
  ug_partial partials[UG_MAX_PARTIALS]; /* "partials": names its templates' {{> name}} tags give files */
  int npartials;
  ug_composite *composites; /* "composites" */
  int ncomposites;
} ug_kernel;

/* Parses and validates one spec. name is used in messages (a path, or the
 * embedded file name); dir is where its templates are looked up first
 * (may be NULL). */
ug_kernel *ug_spec_parse(const char *name, const char *dir, const char *text, size_t len, ug_diag *d);
ug_kernel *ug_spec_load_file(const char *path, ug_diag *d);
/* false for a JSON object with neither "ubgen_spec" nor "kernel": another
 * tool's file (a tuning DB, a package.json), not a broken spec */
bool ug_json_is_spec(const char *text, size_t len);
/* ug_spec_load_file for a *.json found in a spec directory: NULL with
 * *skipped for a file that is not a spec (ug_json_is_spec) */
ug_kernel *ug_spec_load_dir_file(const char *path, bool *skipped, ug_diag *d);
void ug_spec_free(ug_kernel *k);

const ug_pass *ug_spec_pass(const ug_kernel *k, const char *pass);
const ug_composite *ug_spec_composite(const ug_kernel *k, const char *name);
/* an integer axis's default for shape (values in the order of k->shape):
 * 0, or -1 on overflow (*out untouched) */
int ug_comp_default(const ug_comp_axis *a, const int64_t *shape, int64_t *out);
/* A variant name of c: axis=value pairs in axis order joined by ','; an
 * integer in plain decimal (no sign, no leading zero) within [min, max], a
 * named value one of the axis's. A name that gives the first axis is whole:
 * the axes it leaves out are at their defaults, which it does not write (so
 * every variant has one spelling). One without the first axis forces the
 * axes it gives only. values[i] (an integer, or a named value's index) and
 * given[i] for each axis: 0, or -1 when name is not one. */
int ug_comp_parse(const ug_composite *c, const char *name, int64_t *values, bool *given);
int ug_pass_arg(const ug_pass *p, const char *name); /* index or -1 */
int ug_pass_sym(const ug_pass *p, const char *name); /* env slot or -1 */

const char *ug_dtype_name(int dtype);  /* "f32", "f16", "bf16" */
int ug_dtype_parse(const char *s);     /* -1 when unknown */
int ug_dtype_bytes(int dtype);      /* 4, 2, 2; 0 when unknown */
const char *ug_elem_name(ug_elem e);
/* "T", "f32", ... as an element type: 0, or -1 for no such name */
int ug_elem_parse(const char *s, ug_elem *e);
/* the element type e stands for in a variant of dtype: UG_ELEM_T is the
 * dtype's own (UG_ELEM_F32, ...), and stays UG_ELEM_T for no dtype */
ug_elem ug_elem_of(ug_elem e, int dtype);
/* the dtype a float element type is in a variant of dtype (UG_ELEM_T: dtype); -1 for an integer one */
int ug_elem_dtype(ug_elem e, int dtype);
size_t ug_elem_bytes(ug_elem e, int dtype);
const char *ug_elem_ctype(ug_elem e, int dtype); /* C type name in kernels */

uint64_t ug_fnv1a(const void *data, size_t n);
bool ug_is_ident(const char *s);

#endif
