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
# What the tests import beside the package (the dev extra without the linters, the browser
# tools and the benchmarks' pydantic-ai, which asks for a newer pydantic than the package does).
tools=(pytest pytest-asyncio pytest-timeout hypothesis httpx pandas ipykernel jupyter_client
  nbclient nbformat opentelemetry-sdk hatchling mcp-server-time)

if ! "$python" -m uv --version >/dev/null 2>&1; then
  "$python" -m pip install --quiet --disable-pip-version-check --progress-bar off uv
fi
uv=("$python" -m uv)

"${uv[@]}" venv --quiet --seed --allow-existing --python "$python" "$venv"
extra_flags=()
for extra in "${extras[@]}"; do extra_flags+=(--extra "$extra"); done
"${uv[@]}" pip compile --quiet --no-header pyproject.toml "${extra_flags[@]}" \
  --resolution lowest-direct --python "$venv/bin/python" -o "$venv/resolved.txt"
# The declared requirements only (uv notes "via anvia-notebook" under them) become constraints.
awk '/^[A-Za-z0-9]/ { pkg = $1 } /anvia-notebook \(pyproject\.toml\)/ { print pkg }' \
  "$venv/resolved.txt" >"$venv/lowest.txt"
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
"$venv/bin/python" -m pytest -m "not e2e" --ignore=tests/e2e -p no:cacheprovider \
  --deselect tests/notebook/test_wire_schema.py::test_committed_schema_is_the_models_schema "$@"
