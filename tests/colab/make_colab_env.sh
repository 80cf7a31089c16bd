#!/usr/bin/env bash
# Make a virtualenv with the packages of Colab's runtime (its published package list): Python
# 3.13 and the pins below, with this package installed on top as the tutorials' install cell does
# (pip keeps the pinned versions). The end-to-end tests run their kernels in it with
#
#   bash tests/colab/make_colab_env.sh          # -> .venvs/colab (git-ignored)
#   ANVIA_E2E_KERNEL_PYTHON=.venvs/colab/bin/python python -m pytest tests/e2e
#
# Idempotent and fast when the environment is already there. ANVIA_COLAB_VENV picks another
# folder; PYTHON313 the Python 3.13 to use (default: `python3.13` on PATH, else pyenv's 3.13).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${ANVIA_COLAB_VENV:-$root/.venvs/colab}"
pins=(ipykernel==6.17.1 ipython==7.34.0 ipywidgets==7.7.1 jupyter_client==7.4.9 tornado==6.5.7
  anywidget==0.9.21 pydantic==2.13.4)
stamp="$venv/.anvia-packages"
# What the tests rely on: the pins, and this checkout's package (not one installed earlier).
wanted="${pins[*]} $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"

check='import sys, importlib.metadata as m
pins = dict(p.split("==") for p in sys.argv[1:])
wrong = {n: m.version(n) for n, v in pins.items() if m.version(n) != v}
assert not wrong, f"installing the package changed pinned versions: {wrong}"
assert sys.version_info[:2] == (3, 13), sys.version'

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] \
  && "$venv/bin/python" -c "$check" "${pins[@]}" 2>/dev/null; then
  echo "Colab environment ready: $venv"
  exit 0
fi

python="${PYTHON313:-}"
if [ -z "$python" ]; then
  if python3.13 -c "" >/dev/null 2>&1; then
    python=python3.13
  elif [ -x "${PYENV_ROOT:-$HOME/.pyenv}/versions/3.13.0/bin/python" ]; then
    python="${PYENV_ROOT:-$HOME/.pyenv}/versions/3.13.0/bin/python"
  else
    python=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13.*/bin/python 2>/dev/null | tail -n 1)
  fi
fi
if [ -z "$python" ]; then
  echo "The Colab environment needs Python 3.13 (Colab's): set PYTHON313 to one." >&2
  exit 1
fi

rm -rf "$venv"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check --progress-bar off)
"${pip[@]}" "${pins[@]}"
# As the install cell does: the package on top, its requirements resolved against the pins.
# (jupyterlab, notebook: the page side, for the browser tests; pandas: Colab ships it, and the
# tutorials that make tables check for it first)
"${pip[@]}" "$root" jupyterlab notebook pandas
"$venv/bin/python" -c "$check" "${pins[@]}"
printf '%s' "$wanted" >"$stamp"
echo "Colab environment made: $venv"
