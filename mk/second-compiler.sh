#!/bin/sh
# Compiles with a second compiler what users may build with theirs: the
# library's sources (syntax only) and one emitted kernel of each kernel,
# pass, dtype and tiling (the prelude and every template with it), for this
# CPU and for machines without AVX-512 (x86-64-v3) or AVX (x86-64), so that
# a construct only gcc accepts fails here, not on a user's machine; and
# checks first that no source calls a compiler builtin.
# -O0: the front end and the target checks are what differ; the
# optimizer would multiply the time by four.
#   sh mk/second-compiler.sh CC KERNEL_DIR MARCH
set -eu
cc=$1 src=$2 march=$3
libflags="-std=c11 -D_GNU_SOURCE -fPIC -Wall -Wextra -Wshadow -Wno-unused-parameter -fopenmp -DUBG_HAVE_ONEDNN
  -DUBGEN_SOURCE_DIR=\"x\" -DUBGEN_JIT_MARCH=\"native\" -DUBGEN_VERSION=\"0\""
kflags="-std=c11 -O0 -ffp-contract=off -fno-math-errno -fPIC -Wall -Wextra -Wno-unused-function -Wno-psabi -Iruntime"
# no compiler builtins in what users compile: each has a documented
# intrinsic of <immintrin.h>, a C library call or gen/ckd.h
if grep -n '__builtin_' gen/*.[ch] runtime/*.[ch] runtime/include/*.h cli/*.[ch] templates/*; then
  echo "$0: the __builtin_ calls above: use <immintrin.h>'s intrinsics, the C library or gen/ckd.h" >&2
  exit 1
fi
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
n=0
for f in gen/*.c runtime/*.c cli/*.c; do
  $cc $libflags -fsyntax-only "$f"; n=$((n + 1))
done
# oneDNN's other API: runtime/gemm_onednn.c against the 3.x headers that
# PyTorch's wheel ships, where the test environment has them (Debian has 2.x)
dnnl3=$(ls -d .venv/lib/python3*/site-packages/torch/include 2>/dev/null | head -1)
if [ -n "$dnnl3" ] && [ -f "$dnnl3/oneapi/dnnl/dnnl.h" ]; then
  $cc $libflags -I"$dnnl3" -fsyntax-only runtime/gemm_onednn.c; n=$((n + 1))
fi
# kernel names are <kernel>_<pass>_<dtype>_<block sizes>_<n|t>: one per name less its sizes
sample=$(ls "$src"/*.c | grep -v registry | awk -F/ '{ n = $NF; k = n; sub(/_[bdm][0-9].*/, "", k);
  k = k (n ~ /_t\.c$/ ? "t" : "n"); if (!(k in seen)) { seen[k] = 1; print } }')
# one compile a (file, -march) pair, $jobs at a time: xargs fails if any does
jobs=$(nproc 2>/dev/null || echo 2)
for m in $march x86-64-v3 x86-64; do
  for f in $sample; do echo "$m $f"; done
done | xargs -P "$jobs" -L 1 sh -c '"$0" '"$kflags"' -march="$1" -c "$2" -o "'"$out"'/$(basename "$2" .c)-$1.o"' "$cc"
n=$((n + 3 * $(echo "$sample" | wc -l)))
echo "$cc: $n compiles, no error ($(echo "$sample" | wc -l) kernels for $march, x86-64-v3 and x86-64)"
