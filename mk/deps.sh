#!/bin/sh
# Installs the Debian packages ubgen needs, when they are missing.
# As root it runs apt-get; otherwise it prints the line to run and fails.
#   sh mk/deps.sh build   the library and the command (with oneDNN: ubg_flce's GEMMs)
#   sh mk/deps.sh test    also the test framework and venv, for the Python environment
#                         (mk/venv.sh installs torch and the rest from PyPI)
#   sh mk/deps.sh bench   also venv, as for test, and OpenBLAS (bench_flce's baseline)
#   sh mk/deps.sh fuzz    also clang, its libFuzzer/sanitizer runtimes and OpenMP headers
#                         (make test-cc2 compiles the library with clang)
#   sh mk/deps.sh valgrind  the test packages and valgrind (make test-valgrind)
set -eu
need="gcc make pkg-config libjansson-dev libtcc-dev libdnnl-dev"
case "${1:-build}" in
  test) need="$need libcriterion-dev python3-venv" ;;
  bench) need="$need python3-venv libopenblas-dev" ;;
  fuzz) need="$need clang libclang-rt-14-dev libomp-14-dev" ;;
  valgrind) need="$need libcriterion-dev valgrind" ;;
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
