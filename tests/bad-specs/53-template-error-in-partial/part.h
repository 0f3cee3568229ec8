  /* a partial */
  ubg_i64 k = {{BLOCK_Z}};
