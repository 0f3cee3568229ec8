#!/bin/sh
# Installs the Debian packages ubgen needs, when they are missing.
# As root it runs apt-get; otherwise it prints the line to run and fails.
#   sh mk/deps.sh build   the library and the command (with OpenBLAS: ubg_flce's tunable GEMMs)
#   sh mk/deps.sh test    also the test frameworks, OpenBLAS (ubg_flce's optional GEMMs) and
#                         Debian's python3-torch for the Python package
#   sh mk/deps.sh bench   also OpenBLAS (bench_flce's baseline)
#   sh mk/deps.sh fuzz    also clang and its libFuzzer/sanitizer runtimes
#   sh mk/deps.sh valgrind  the test packages and valgrind (make test-valgrind)
set -eu
need="gcc make pkg-config libjansson-dev libtcc-dev libopenblas-dev"
case "${1:-build}" in
  test) need="$need libcriterion-dev libopenblas-dev python3-torch python3-pytest python3-numpy" ;;
  bench) need="$need libopenblas-dev python3-torch python3-numpy python3-matplotlib" ;;
  fuzz) need="$need clang libclang-rt-14-dev" ;;
  valgrind) need="$need libcriterion-dev libopenblas-dev valgrind" ;;
esac
missing=""
for p in $need; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "ubgen: installing$missing"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
else
  echo "ubgen: missing packages:$missing" >&2
  echo "ubgen: run: sudo apt-get install -y$missing" >&2
  exit 1
fi
