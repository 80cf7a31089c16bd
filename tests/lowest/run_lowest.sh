#!/usr/bin/env bash
# Run the tests that need no browser once more, with the LOWEST version of every requirement the
# package declares (its dependencies and its optional extras), in .venvs/lowest (git-ignored):
#
#   bash tests/lowest/run_lowest.sh [pytest arguments]
#
# uv resolves the declared requirements with `--resolution lowest-direct` (the lowest version of
# each declared requirement, the newest of what those need in turn); the test tools are then
# installed at their newest versions within those pins. PYTHON picks the interpreter (default:
# `python`); uv comes from PyPI into it when missing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
venv="${ANVIA_LOWEST_VENV:-$root/.venvs/lowest}"
python="${PYTHON:-python}"
extras=(openai anthropic postgres otel mcp)
# The dev extra's requirements of the kernel side (the widget's kernel, its widgets library, the
# headless notebook runner): their declared lower bounds are pinned to their lowest too.
kernel_side='ipykernel|ipywidgets|nbclient|nbformat'
# What the tests import beside the package (the dev extra without the linters, the browser
# tools and the benchmarks' pydantic-ai, which asks for a newer pydantic than the package does).
tools=(pytest pytest-asyncio pytest-timeout hypothesis httpx pandas ipykernel ipywidgets
  jupyter_client nbclient nbformat opentelemetry-sdk hatchling mcp-server-time)

if ! "$python" -m uv --version >/dev/null 2>&1; then
  "$python" -m pip install --quiet --disable-pip-version-check --progress-bar off uv
fi
uv=("$python" -m uv)

"${uv[@]}" venv --quiet --seed --allow-existing --python "$python" "$venv"
extra_flags=()
for extra in "${extras[@]}"; do extra_flags+=(--extra "$extra"); done
# Those dev requirements as pyproject.toml declares them, one a line.
grep -oE "^ *\"($kernel_side)[<>=~!].*\"" pyproject.toml | tr -d ' ",' >"$venv/kernel-side.in"
"${uv[@]}" pip compile --quiet --no-header pyproject.toml "$venv/kernel-side.in" \
  "${extra_flags[@]}" --resolution lowest-direct --python "$venv/bin/python" \
  -o "$venv/resolved.txt"
# The declared requirements only (uv notes "via anvia-notebook" or "via -r .../kernel-side.in"
# under them) become constraints.
awk '/^[A-Za-z0-9]/ { pkg = $1 } /anvia-notebook \(pyproject\.toml\)|kernel-side\.in/ { print pkg }' \
  "$venv/resolved.txt" | sort -u >"$venv/lowest.txt"
for name in ${kernel_side//|/ }; do
  grep -q "^$name==" "$venv/lowest.txt" || { echo "no lowest version found for $name" >&2; exit 1; }
done
echo "Lowest declared versions:"
sed 's/^/  /' "$venv/lowest.txt"

joined=$(IFS=,; echo "${extras[*]}")
"${uv[@]}" pip install --quiet --python "$venv/bin/python" -c "$venv/lowest.txt" \
  -e ".[$joined]" "${tools[@]}"
# Check that the install kept every pin (a tool could have pulled a requirement up).
"$venv/bin/python" - "$venv/lowest.txt" <<'PY'
import sys
from importlib.metadata import version

for line in open(sys.argv[1]):
    name, _, wanted = line.strip().partition("==")
    name = name.split("[")[0]
    assert version(name) == wanted, f"{name} is {version(name)}, not the lowest {wanted}"
PY

# The browser tests are left out: they run with the newest packages and with Colab's. So is the
# check that the committed wire schema is current: its exact text is what the newest pydantic
# writes (an older one words the same schema differently); the main run checks it.
# The kernel tests' "ipykernel6" kernels are this environment's own (its ipykernel is the lowest,
# 6.17.1); their "ipykernel7" variants need ipykernel 7 and run in the main run.
ANVIA_IPYKERNEL6_PYTHON="$venv/bin/python" "$venv/bin/python" -m pytest -m "not e2e" \
  --ignore=tests/e2e -p no:cacheprovider -k "not ipykernel7" \
  --deselect tests/notebook/test_wire_schema.py::test_committed_schema_is_the_models_schema "$@"
