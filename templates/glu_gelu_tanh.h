/* GEGLU's activation (Liger's LigerGELUMulFunction), the "activation" of
 * glu_fwd.c.tmpl and glu_bwd.c.tmpl: GELU's tanh approximation.
 *
 *   z = sqrt(2/pi) (a + 0.044715 a^3),  s = (1 + tanh z) / 2 = sigmoid(2 z)
 *   act(a) = gelu = a s
 *   act'(a) = s + 2 a s (1 - s) sqrt(2/pi) (1 + 3 0.044715 a^2)
 *             the derivative of gelu: (1 + tanh z) / 2 + a (1 - tanh^2 z) dz/da / 2
 *   forward   c = rnd(gelu) b
 *   backward  da = rnd(dc b) act'(a),  db = dc rnd(gelu)    as Liger's kernel
 *
 * (1 + tanh z) / 2 is computed as sigmoid(2 z): one exponential, the same
 * value to f32 precision. Statements over one element or one tile (index
 * i), as macros, so each kernel compiles to the code its own loops would. */
#define SQRT_2_OVER_PI 0.7978845608028654f
#define GELU_C 0.044715f

#define GLU_FWD(a, b)                                                               \
  const float x = (a);                                                              \
  const float s = ubg_sigmoid(2.0f * SQRT_2_OVER_PI * (x + GELU_C * (x * x * x)));  \
  (a) = RND(x * s) * (b)
#define GLU_OUT(c, i, m) /* nothing follows the product */
#define GLU_GRAD_IN(dc, i, m) /* dc as it is */
#define GLU_GRAD(dc, a, b)                                                                            \
  const float x = (a), x2 = x * x;                                                                    \
  const float s = ubg_sigmoid(2.0f * SQRT_2_OVER_PI * (x + GELU_C * (x2 * x)));                       \
  const float dgelu = s + 2.0f * x * s * (1.0f - s) * SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_C * x2);   \
  (a) = RND((dc) * (b)) * dgelu;                                                                      \
  (b) = (dc) * RND(x * s)
