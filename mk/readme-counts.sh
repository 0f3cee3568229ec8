#!/bin/sh
# Writes README.md's counts from the build and the tree, so they are never
# typed by hand: the built-in kernels (the variants `ubgen list` says fit the
# default 192 KiB budget, which `make` emits and compiles) and the malformed
# specs of tests/bad-specs. tests/test_cli.c fails when README disagrees.
#   sh mk/readme-counts.sh [UBGEN]     (default build/bin/ubgen)
set -eu
ubgen=${1:-build/bin/ubgen}
cd "$(dirname "$0")/.."
# "1917 variants, 1597 fit the budget"
kernels=$("$ubgen" list --ub 196608 | tail -n 1 | sed -n 's/^[0-9]* variants, \([0-9]*\) fit the budget$/\1/p')
[ -n "$kernels" ] || { echo "readme-counts: no count from $ubgen list" >&2; exit 1; }
bad=$(find tests/bad-specs -mindepth 1 -maxdepth 1 -type d | wc -l)
# thousands with a comma, as the README writes them
comma() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }
sed -i -e "s/[0-9][0-9,]* built-in kernels/$(comma "$kernels") built-in kernels/g" \
       -e "s/[0-9][0-9,]* malformed specs/$(comma "$bad") malformed specs/g" README.md
echo "README.md: $(comma "$kernels") built-in kernels, $bad malformed specs"
