#!/usr/bin/env bash
# Make the ipykernel 6.17.1 virtualenv (Colab's pin) that tests/kernel runs a second kernel in.
#
#   bash tests/kernel/make_ipykernel6_env.sh        # -> .venvs/ipykernel6 (git-ignored)
#
# Idempotent and fast when the environment is already there. Needs only Python >= 3.10 with the
# venv module and PyPI. ANVIA_IPYKERNEL6_VENV picks another folder, PYTHON another interpreter
# (default: the `python` on PATH, the one that runs the tests). The tests find the environment
# here, or through ANVIA_IPYKERNEL6_PYTHON (a Python that has these packages).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${ANVIA_IPYKERNEL6_VENV:-$root/.venvs/ipykernel6}"
python="${PYTHON:-python}"
# The package's own requirements (read from pyproject.toml) beside the pinned kernel: the kernel
# imports the package from the source tree.
read -r -a requirements <<<"$("$python" - "$root/pyproject.toml" <<'PY'
import re, sys

text = open(sys.argv[1]).read()
block = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)
print(" ".join(re.findall(r'"([^"]+)"', block)))
PY
)"
packages=(ipykernel==6.17.1 ipywidgets "${requirements[@]}")
stamp="$venv/.anvia-packages"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${packages[*]}" ] \
  && "$venv/bin/python" -c "import ipykernel, ipywidgets, anywidget, pydantic" 2>/dev/null; then
  echo "ipykernel 6 environment ready: $venv"
  exit 0
fi

rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --progress-bar off \
  "${packages[@]}"
"$venv/bin/python" -c "import ipykernel; assert ipykernel.__version__ == '6.17.1', ipykernel.__version__"
printf '%s' "${packages[*]}" >"$stamp"
echo "ipykernel 6 environment made: $venv"
