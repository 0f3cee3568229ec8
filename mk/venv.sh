#!/bin/sh
# Makes the virtual environment the Python package is tested and
# benchmarked in: sh mk/venv.sh DIR. It installs mk/python-requirements.txt
# with pip, and does nothing when DIR already holds exactly those
# requirements (the copy it keeps in DIR/requirements.txt).
set -eu
dir=$1
req=mk/python-requirements.txt
if [ -x "$dir/bin/python" ] && cmp -s "$req" "$dir/requirements.txt"; then exit 0; fi
host=$(command -v python3) || { echo "ubgen: no python3 to make $dir with" >&2; exit 1; }
echo "ubgen: making the Python environment $dir (torch, transformers, pytest, numpy, matplotlib, peft)"
rm -rf "$dir"
"$host" -m venv "$dir" || { echo "ubgen: $host -m venv failed: on Debian, apt-get install python3-venv" >&2; exit 1; }
"$dir/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
cp "$req" "$dir/requirements.txt"
