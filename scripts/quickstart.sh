#!/usr/bin/env bash
# Install anvia_notebook (and JupyterLab) into the current Python, then open the quickstart
# tutorial in JupyterLab on 127.0.0.1. Works offline with the scripted demo model.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v npm >/dev/null 2>&1; then
  echo "npm is needed to build the widget bundle: install Node.js 18 or newer first." >&2
  exit 1
fi
python -m pip install -q -e . jupyterlab
extra=()
if [ "$(id -u)" -eq 0 ]; then
  extra+=(--allow-root)  # Jupyter refuses to run as root without it (containers, CI boxes)
fi
exec python -m jupyter lab --ip=127.0.0.1 "${extra[@]}" notebooks/01_quickstart.ipynb "$@"
