{{! One UB buffer of the spec, rendered in a section over it (ub.m_tile,
    say): ub.h declares them all at the kernel's top; a template that wants
    a buffer in scope only inside a block (where gcc then keeps its pointer
    alive only) puts that section around this partial there. }}
  {{ctype}} *UBG_RESTRICT {{name}} = ({{ctype}} *)(ub + {{offset}}); /* [{{count}}] {{ctype}} */
  (void){{name}};
