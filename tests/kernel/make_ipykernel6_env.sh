#!/usr/bin/env bash
# Make the ipykernel 6.17.1 virtualenv (Colab's pin) that tests/kernel runs a second kernel in.
#
#   bash tests/kernel/make_ipykernel6_env.sh        # -> .venvs/ipykernel6 (git-ignored)
#
# ANVIA_IPYKERNEL6_VENV picks another folder, PYTHON another interpreter (default: the `python` on
# PATH). The tests find the environment here, or through ANVIA_IPYKERNEL6_PYTHON (a Python that
# has these packages).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
exec bash "$root/tests/kernel/make_kernel_env.sh" 6.17.1 "${ANVIA_IPYKERNEL6_VENV:-$root/.venvs/ipykernel6}"
