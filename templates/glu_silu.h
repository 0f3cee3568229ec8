/* SwiGLU's activation (Liger's LigerSiLUMulFunction), the "activation" of
 * glu_fwd.c.tmpl and glu_bwd.c.tmpl: SiLU of the gate scaled by gm, the
 * product scaled by dm (gm, dm: the gate_multiplier and down_multiplier
 * arguments).
 *
 *   x = a gm, s = sigmoid(x), act(a) = silu = x s
 *   forward   c = rnd(silu) b
 *             c = rnd(c) dm, only when dm != 1 (torch multiplies the result)
 *   backward  g = rnd(dc dm), only when dm != 1 (torch multiplies first), else dc
 *             da = g (silu (1 - s) + s) b gm    left to right, as Liger's kernel
 *             db = g silu                       silu not rounded
 *
 * Statements over one element or one tile (index i), as macros, so each
 * kernel compiles to the code its own loops would. */
#define GLU_FWD(a, b)                          \
  const float x = (a) * gate_multiplier;       \
  (a) = RND(x * ubg_sigmoid(x)) * (b)
#define GLU_OUT(c, i, m)          \
  if (down_multiplier != 1.0f)    \
    for (i = 0; i < (m); i++) (c)[i] = RND((c)[i]) * down_multiplier
#define GLU_GRAD_IN(dc, i, m)                                 \
  if (down_multiplier != 1.0f) /* as torch rounds it */     \
    for (i = 0; i < (m); i++) (dc)[i] = RND((dc)[i] * down_multiplier)
#define GLU_GRAD(dc, a, b)                                                      \
  const float g = (dc);                                                         \
  const float x = (a) * gate_multiplier, s = ubg_sigmoid(x), silu = x * s;      \
  (a) = g * (silu * (1.0f - s) + s) * (b) * gate_multiplier;                    \
  (b) = g * silu
