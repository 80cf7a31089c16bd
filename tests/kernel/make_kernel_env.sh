#!/usr/bin/env bash
# Make a virtualenv with one pinned ipykernel, for tests that run a second (or third) kernel.
#
#   bash tests/kernel/make_kernel_env.sh VERSION FOLDER
#   bash tests/kernel/make_kernel_env.sh 7.3.0 .venvs/ipykernel73   # 7.0-7.3: Python 3.10's newest
#
# Idempotent and fast when the environment is already there. Needs only Python >= 3.10 with the
# venv module and PyPI. PYTHON picks another interpreter (default: the `python` on PATH, the one
# that runs the tests). The kernel imports the package from the source tree, so the environment
# holds the package's own requirements beside the pinned kernel. make_ipykernel6_env.sh makes
# Colab's (6.17.1); ANVIA_IPYKERNEL6_PYTHON and ANVIA_IPYKERNEL7_PYTHON point the tests at them.
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: bash tests/kernel/make_kernel_env.sh IPYKERNEL_VERSION FOLDER" >&2
  exit 2
fi
version=$1
venv=$2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python="${PYTHON:-python}"
# The package's own requirements, read from pyproject.toml.
read -r -a requirements <<<"$("$python" - "$root/pyproject.toml" <<'PY'
import re, sys

text = open(sys.argv[1]).read()
block = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)
print(" ".join(re.findall(r'"([^"]+)"', block)))
PY
)"
packages=("ipykernel==$version" ipywidgets "${requirements[@]}")
stamp="$venv/.anvia-packages"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${packages[*]}" ] \
  && "$venv/bin/python" -c "import ipykernel, ipywidgets, anywidget, pydantic" 2>/dev/null; then
  echo "ipykernel $version environment ready: $venv"
  exit 0
fi

rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --progress-bar off \
  "${packages[@]}"
"$venv/bin/python" -c "import ipykernel, sys; assert ipykernel.__version__ == sys.argv[1], ipykernel.__version__" "$version"
printf '%s' "${packages[*]}" >"$stamp"
echo "ipykernel $version environment made: $venv"
