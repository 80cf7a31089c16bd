#!/usr/bin/env bash
# Install anvia_notebook (with JupyterLab, and pandas, the OpenTelemetry SDK and the MCP SDK that
# tutorials 09, 10, 12 and 13 use), then open the quickstart tutorial,
# notebooks/01_quickstart.ipynb, in JupyterLab on 127.0.0.1. Works offline with the scripted demo
# model.
#
# - Python 3.10 or newer: `python`, else `python3`.
# - Inside a virtual environment (an activated venv, a conda environment) it installs there.
#   Otherwise it creates `.venv` in the repository (once) and installs into it: Debian and Ubuntu
#   mark their system Python "externally managed", so pip refuses to install into it.
# - Node.js 20.19+ (20.x) or 22.12+ with npm builds the widget bundle (vite 8, vitest 4.1 and
#   jsdom 29, installed with it, need `^20.19 || >=22.12`: 21.x and 22.0-22.11 do not work); not
#   needed when anvia_notebook/static/widget.js exists.
#
# Usage: bash scripts/quickstart.sh [--check] [jupyter lab options...]
#   --check (or QUICKSTART_DRY_RUN=1): print the commands it would run and change nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

dry_run=0
case "${QUICKSTART_DRY_RUN:-}" in 1 | true | yes) dry_run=1 ;; esac
if [ "${1:-}" = "--check" ]; then
  dry_run=1
  shift
fi

fail() {
  echo "quickstart: $*" >&2
  exit 1
}

# A command as it is run, written so that it can be pasted into a shell: a word with a character
# the shell reads specially (`>`, `<`, a space, a quote...) is quoted.
show() {
  local word line="+"
  for word in "$@"; do
    if [ -z "$word" ] || [[ $word == *[![:alnum:]_./=:,+@%-]* ]]; then
      if [[ $word == *\'* ]]; then
        printf -v word '%q' "$word"
      else
        word="'$word'"
      fi
    fi
    line+=" $word"
  done
  echo "$line"
}

run() {
  show "$@"
  if [ "$dry_run" -eq 0 ]; then
    "$@"
  fi
}

# A line per step, so that a minute of installing is not a minute of silence.
step=0
steps=3
announce() {
  step=$((step + 1))
  echo
  echo "==> [$step/$steps] $*"
}

# pip, showing a line per package it fetches, builds or installs (not its "Requirement already
# satisfied" lines); its errors and warnings (stderr) pass through as they are.
pip_install() {
  show "$python" -m pip install "$@"
  if [ "$dry_run" -eq 0 ]; then
    "$python" -m pip install --progress-bar off "$@" |
      { grep --line-buffered -E '^ *(Obtaining|Collecting|Downloading|Preparing|Building|Installing|Successfully|still running)' || true; }
  fi
}

# -- Python ----------------------------------------------------------------------------------
python=""
for candidate in python python3; do
  if command -v "$candidate" >/dev/null 2>&1 &&
    "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1; then
    python=$candidate
    break
  fi
done
[ -n "$python" ] || fail "Python 3.10 or newer is needed (as python or python3); install it first."

in_env=$("$python" -c 'import sys; print(int(sys.prefix != sys.base_prefix))')
if [ "$in_env" = 0 ] && [ -z "${CONDA_PREFIX:-}" ]; then
  if [ ! -x .venv/bin/python ]; then
    echo "Not in a virtual environment: creating .venv in the repository and installing there."
    run "$python" -m venv .venv ||
      fail "could not create .venv; on Debian or Ubuntu install the venv module first:" \
        "sudo apt install python3-venv"
  else
    echo "Not in a virtual environment: installing into the repository's .venv."
  fi
  python=.venv/bin/python
fi

# -- Node.js (builds the widget bundle) --------------------------------------------------------
if [ ! -f anvia_notebook/static/widget.js ]; then
  need="Node.js 20.19+ (20.x) or 22.12+ with npm is needed to build the widget bundle"
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || fail "$need."
  version=$(node --version)
  version=${version#v}
  major=${version%%.*}
  minor=${version#*.}
  minor=${minor%%.*}
  case "$major,$minor" in
    *[!0-9,]* | ,* | *,) fail "$need; could not read the version of this one ($version)." ;;
  esac
  # vite 8 needs ^20.19 || >=22.12: not 21.x, not 22.0 to 22.11.
  if ! { { [ "$major" -eq 20 ] && [ "$minor" -ge 19 ]; } ||
    { [ "$major" -eq 22 ] && [ "$minor" -ge 12 ]; } || [ "$major" -ge 23 ]; }; then
    fail "$need (vite 8 needs ^20.19 || >=22.12); this one is $version: install Node.js 22.12" \
      "or newer (e.g. the current LTS)."
  fi
fi

# -- install and start -------------------------------------------------------------------------
if [ ! -f anvia_notebook/static/widget.js ]; then
  # Built here rather than inside pip (which hides npm's output for a minute); pip then finds the
  # bundle and does not build it again.
  steps=4
  announce "Building the notebook widget with npm (about half a minute)"
  run npm --prefix js ci --no-audit --no-fund
  run npm --prefix js run build
fi
announce "Installing anvia_notebook and JupyterLab with pip (about a minute)"
pip_install -e . jupyterlab
# What the tutorials use besides the package: pandas (tables in 09, 10 and 13), the OpenTelemetry
# SDK (the spans in 09) and the MCP SDK (the package's mcp extra: tutorial 12's server and tools).
announce "Installing pandas and the OpenTelemetry SDK (tutorials 09, 10 and 13)"
echo "    and the MCP SDK (tutorial 12)"
pip_install pandas "opentelemetry-sdk>=1.20" "mcp>=2.3,<3"

# How to use this environment's Python later, in a terminal of one's own (the command line,
# `python -m anvia_notebook runs`): `python` there may be missing or another one.
installed="Installed" checked=""
if [ "$dry_run" -eq 1 ]; then
  installed="Would install" checked=" (this is a check: nothing was installed)"
fi
if [ "$python" = .venv/bin/python ]; then
  venv=$(printf '%q' "$PWD/.venv")
  echo "$installed into .venv$checked. In a new terminal, activate it first:" \
    "source $venv/bin/activate"
  echo "  (or write its full path instead of python: $venv/bin/python -m anvia_notebook runs)"
else
  full=$(printf '%q' "$(command -v "$python")")
  echo "$installed for $full$checked: in a new terminal, run it as $full -m anvia_notebook runs"
fi

page=/lab/tree/notebooks/01_quickstart.ipynb
args=(-m jupyter lab --ip=127.0.0.1 "--LabApp.default_url=$page")
if [ "$(id -u)" -eq 0 ]; then
  args+=(--allow-root) # Jupyter refuses to run as root without it (containers, CI boxes)
fi
announce "Starting JupyterLab"
echo "JupyterLab opens http://127.0.0.1:PORT$page (the port and token are printed below)."
# The tutorials stay on the scripted offline model even where a provider key is set (start with
# ANVIA_NOTEBOOK_OFFLINE=0 to have them use it: they then call the provider, and bill for it).
export ANVIA_NOTEBOOK_OFFLINE="${ANVIA_NOTEBOOK_OFFLINE:-1}"
if [ "$ANVIA_NOTEBOOK_OFFLINE" = 1 ] && [ -n "${OPENAI_API_KEY:-}${ANTHROPIC_API_KEY:-}" ]; then
  echo "The tutorials use the scripted offline model, not your provider key" \
    "(start with ANVIA_NOTEBOOK_OFFLINE=0 to use it)."
fi
show "$python" "${args[@]}" "$@"
if [ "$dry_run" -eq 1 ]; then
  exit 0
fi
# `jupyter lab` runs the first `jupyter-lab` on PATH, and puts this environment's own last: with
# another JupyterLab on PATH (a conda base, pipx, the system's), that one would start, and its
# kernel would lack this package or import another copy of it. This environment's scripts go first.
bindir=$("$python" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
export PATH="$bindir:$PATH"
exec "$python" "${args[@]}" "$@"
