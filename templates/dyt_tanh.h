{{! DyT's tanh, pasted into dyt_fwd.c.tmpl and dyt_bwd.c.tmpl. }}
/* tanh(z) = 2 sigmoid(2z) - 1: one exponential through ubg_sigmoid's
 * fmaf steps, which gcc vectorizes (libm's tanhf is a call per element)
 * and tcc gives the same bits of. Within 3e-7 of tanh everywhere (twice
 * the sigmoid's 2.5 ulp at 1/2), which near z = 0 is coarser than tanhf's
 * relative precision but far inside Liger's DyT tolerance (1e-5 f32);
 * +-1 exactly where the sigmoid saturates, and NaN for NaN. */
UBG_INLINE float dyt_tanh(float z) { return 2.0f * ubg_sigmoid(2.0f * z) - 1.0f; }
