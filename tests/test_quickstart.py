"""A new user's first steps. scripts/quickstart.sh: valid bash; on a Python with only ``python3``
and outside a virtual environment it plans to create and use ``.venv`` and opens the quickstart
notebook (dry run). The README's self-contained snippets run as written, offline."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "quickstart.sh"
PAGE = "/lab/tree/notebooks/01_quickstart.ipynb"


def fake_bin(tmp_path: pathlib.Path, python: str | None, node_version: str = "v20.19.0"):
    """A PATH with the few tools the script uses, a ``python3`` and no ``python``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname", "id", "grep"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    if python is not None:
        (bin_dir / "python3").symlink_to(python)
    for tool, output in (("node", node_version), ("npm", "10.0.0")):
        script = bin_dir / tool
        script.write_text(f"#!/bin/sh\necho {output}\n")
        script.chmod(0o755)
    return bin_dir


def quickstart(
    path: pathlib.Path, *args: str, script: pathlib.Path = SCRIPT, **env: str
) -> subprocess.CompletedProcess[str]:
    environ = {"PATH": str(path), "HOME": os.environ.get("HOME", "/tmp"), **env}
    return subprocess.run(
        ["/bin/bash", str(script), *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_script_is_valid_bash():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


@pytest.mark.parametrize("how", [["--check"], []])
def test_with_only_python3_outside_a_venv_it_plans_a_repo_venv_and_the_quickstart_page(
    tmp_path, how
):
    had_venv = (ROOT / ".venv").exists()
    outside = getattr(sys, "_base_executable", sys.executable)  # not a venv's python
    env = {} if how else {"QUICKSTART_DRY_RUN": "1"}
    result = quickstart(fake_bin(tmp_path, outside), *how, "--no-browser", **env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    if not had_venv:
        assert "+ python3 -m venv .venv" in lines
    assert "+ .venv/bin/python -m pip install -e . jupyterlab" in lines
    launch = [line for line in lines if "jupyter lab" in line]
    assert launch[-1].startswith("+ .venv/bin/python -m jupyter lab --ip=127.0.0.1 ")
    assert f"--LabApp.default_url={PAGE}" in launch[-1]
    assert launch[-1].endswith("--no-browser")
    assert f"http://127.0.0.1:PORT{PAGE}" in result.stdout
    assert (ROOT / ".venv").exists() == had_venv  # a dry run changes nothing


def test_it_says_how_to_use_the_environments_python_in_a_new_terminal(tmp_path):
    """`python -m anvia_notebook ...` fails in a plain terminal after the quickstart made .venv:
    the script says to activate it, or to write the interpreter's full path."""
    outside = getattr(sys, "_base_executable", sys.executable)
    result = quickstart(fake_bin(tmp_path, outside), "--check")
    assert result.returncode == 0, result.stderr
    venv = ROOT / ".venv"
    assert f"activate it first: source {venv}/bin/activate" in result.stdout
    assert f"{venv}/bin/python -m anvia_notebook runs" in result.stdout
    lines = result.stdout.splitlines()
    hint = next(i for i, line in enumerate(lines) if "activate it first" in line)
    assert hint > max(i for i, line in enumerate(lines) if "pip install" in line)
    # a check installs nothing, and says so (before: "Installed into .venv.")
    assert "Would install into .venv (this is a check: nothing was installed)." in lines[hint]
    assert "Installed" not in result.stdout


FAKE_PYTHON = """#!/bin/sh
# pip and jupyter as the quickstart sees them; anything else (its probes) is the real Python.
if [ "$1 $2" = "-m pip" ]; then
  echo "Obtaining file:///repo"
  echo "Collecting jupyterlab"
  echo "Requirement already satisfied: anyio in /env/lib"
  echo "  Building editable for anvia_notebook (pyproject.toml): started"
  if [ -n "$FAIL_PIP" ]; then
    echo "ERROR: No matching distribution found for jupyterlab" >&2
    exit 1
  fi
  echo "Successfully installed anvia_notebook-0.1.0 jupyterlab-4.4.0"
  exit 0
fi
case "$1 $2" in
  *sysconfig*) dirname "$0"; exit 0 ;;  # its scripts folder: this fake's, which has no jupyter
esac
if [ "$1 $2" = "-m jupyter" ]; then
  echo "jupyter lab started"
  exit 0
fi
exec REAL "$@"
"""


def fake_environment(tmp_path: pathlib.Path) -> pathlib.Path:
    """A PATH whose `python` answers pip and jupyter like a quiet fake (a conda environment, so
    that nothing is created), with the real Python for the script's probes."""
    bin_dir = fake_bin(tmp_path, None)
    python = bin_dir / "python"
    python.write_text(FAKE_PYTHON.replace("REAL", sys.executable))
    python.chmod(0o755)
    return bin_dir


def test_it_shows_a_line_per_step_and_what_pip_installs(tmp_path):
    """Not a minute of silence: each step is announced, and pip shows a line per package (not
    its "Requirement already satisfied" lines)."""
    result = quickstart(fake_environment(tmp_path), "--no-browser", CONDA_PREFIX=str(tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    steps = [line for line in out.splitlines() if line.startswith("==> [")]
    assert [s.split("] ", 1)[1] for s in steps][-3:] == [
        "Installing anvia_notebook and JupyterLab with pip (about a minute)",
        "Installing pandas and the OpenTelemetry SDK (tutorials 09, 10 and 13)",
        "Starting JupyterLab",
    ]
    assert steps[-1].startswith(f"==> [{len(steps)}/{len(steps)}]")
    assert out.count("Collecting jupyterlab") == 2 and "Successfully installed" in out
    assert "Building editable for anvia_notebook (pyproject.toml): started" in out
    assert "Requirement already satisfied" not in out
    assert out.rstrip().endswith("jupyter lab started")


RECORDING_PYTHON = """#!/bin/sh
# pip and jupyter write the words they are run with to $RECORD (a line each, then ----).
case "$1 $2" in
  "-m pip" | "-m jupyter")
    printf '%s\\n' "$@" ---- >>"$RECORD"
    exit 0
    ;;
  *sysconfig*) dirname "$0"; exit 0 ;;
esac
exec REAL "$@"
"""


def recording_environment(tmp_path: pathlib.Path) -> pathlib.Path:
    """A PATH whose `python` records how pip and jupyter are run (a conda environment)."""
    bin_dir = fake_bin(tmp_path, None)
    python = bin_dir / "python"
    python.write_text(RECORDING_PYTHON.replace("REAL", sys.executable))
    python.chmod(0o755)
    return bin_dir


def recorded(record: pathlib.Path) -> list[list[str]]:
    """The commands a recording `python` was run with, the words of each."""
    words = record.read_text().split("\n")[:-1] if record.exists() else []
    commands, command = [], []
    for word in words:
        if word == "----":
            commands.append(command)
            command = []
        else:
            command.append(word)
    return commands


def test_the_commands_it_prints_run_as_it_runs_them_when_pasted_into_bash(tmp_path):
    """`--check` prints its commands quoted: pasted into bash, each runs with the words the
    script uses (before, `mcp>=2.3,<3` unquoted made bash redirect to and from files)."""
    bin_dir = recording_environment(tmp_path)
    extra = ("--no-browser", "--notebook-dir=my notes", "x>1")
    env = {"CONDA_PREFIX": str(tmp_path)}
    ran = tmp_path / "ran.txt"
    result = quickstart(bin_dir, *extra, RECORD=str(ran), **env)
    assert result.returncode == 0, result.stderr
    run = [[w for w in command if w not in ("--progress-bar", "off")] for command in recorded(ran)]
    assert ["-m", "pip", "install", "pandas", "opentelemetry-sdk>=1.20", "mcp>=2.3,<3"] in run
    assert run[-1][-3:] == list(extra)
    assert "Installed for" in result.stdout and "Would install" not in result.stdout

    check = quickstart(bin_dir, "--check", *extra, **env)
    assert check.returncode == 0, check.stderr
    printed = [line[2:] for line in check.stdout.splitlines() if line.startswith("+ ")]
    assert len(printed) == len(run) == 3
    pasted = tmp_path / "pasted.txt"
    shell = tmp_path / "shell"
    shell.mkdir()
    for line in printed:
        subprocess.run(
            ["/bin/bash", "-c", line],
            cwd=shell,
            env={"PATH": str(bin_dir), "RECORD": str(pasted)},
            check=True,
            capture_output=True,
            timeout=60,
        )
    assert recorded(pasted) == run
    assert list(shell.iterdir()) == []  # nothing written by a stray `>`
    assert "Would install for" in check.stdout and "nothing was installed" in check.stdout


def test_a_failing_pip_stops_it_and_its_error_shows(tmp_path):
    result = quickstart(
        fake_environment(tmp_path), "--no-browser", CONDA_PREFIX=str(tmp_path), FAIL_PIP="1"
    )
    assert result.returncode == 1
    assert "No matching distribution found for jupyterlab" in result.stderr
    assert "jupyter lab started" not in result.stdout


def test_inside_a_virtual_environment_it_installs_there(tmp_path):
    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    bin_dir = fake_bin(tmp_path, None)
    result = quickstart(pathlib.Path(f"{venv / 'bin'}{os.pathsep}{bin_dir}"), "--check")
    assert result.returncode == 0, result.stderr
    assert "-m venv" not in result.stdout
    assert "+ python -m pip install -e . jupyterlab" in result.stdout.splitlines()
    assert f"run it as {venv / 'bin' / 'python'} -m anvia_notebook runs" in result.stdout


@pytest.mark.parametrize(
    ("node", "ok"),
    [
        ("v18.20.0", False),
        ("v20.18.1", False),
        ("v20.19.0", True),
        ("v20.20.2", True),
        ("v21.7.3", False),
        ("v22.1.0", False),
        ("v22.11.0", False),
        ("v22.12.0", True),
        ("v23.0.0", True),
        ("v24.11.1", True),
        ("v30.2.0", True),
        ("nonsense", False),
    ],
)
def test_node_is_checked_against_the_version_the_readme_names(tmp_path, node, ok):
    """In a checkout whose widget bundle is not built yet (a copy of the script in a bare tree)."""
    clone = tmp_path / "clone"
    (clone / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, clone / "scripts" / "quickstart.sh")
    bin_dir = fake_bin(tmp_path, sys.executable, node_version=node)
    result = quickstart(bin_dir, "--check", script=clone / "scripts" / "quickstart.sh")
    assert (result.returncode == 0) is ok, result.stderr
    need = "Node.js 20.19+ (20.x) or 22.12+ with npm is needed"
    if not ok:
        assert need in result.stderr
        assert node.removeprefix("v") in result.stderr
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "Node.js 20.19+ (20.x) or 22.12+" in readme and "^20.19 || >=22.12" in readme
    lock = json.loads((ROOT / "js" / "package-lock.json").read_text())
    vite = lock["packages"]["node_modules/vite"]
    assert vite["engines"]["node"] == "^20.19.0 || >=22.12.0"  # what the script checks for


def test_without_any_python_it_says_what_is_missing(tmp_path):
    result = quickstart(fake_bin(tmp_path, None), "--check")
    assert result.returncode == 1
    assert "Python 3.10 or newer is needed" in result.stderr


# Runs a README section's code as a notebook cell would (top-level await allowed), then the checks.
SNIPPET_RUNNER = """
import ast, asyncio, sys
code = sys.stdin.read()
compiled = compile(code, "README", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(compiled, {"__name__": "__main__"})
if asyncio.iscoroutine(result):
    asyncio.run(result)
"""


@pytest.mark.parametrize(
    ("section", "checks"),
    [
        (
            "Inspect a run",
            'assert call.name == "get_order_status" and call.status == "success", call\n'
            'assert "shipped" in response.output\n',
        ),
        (
            "Evaluate an agent",
            'assert [c.status for c in report.cases] == ["success", "success"]\n'
            'assert comparison.newly_passing == ["refund"]\n',
        ),
    ],
    ids=["inspect", "evaluate"],
)
def test_a_readme_snippet_runs_as_written_in_a_fresh_process(tmp_path, section, checks):
    readme = (ROOT / "README.md").read_text()
    body = readme.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", body, re.S)
    assert match, section
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}  # offline
    environ.pop("ANVIA_NOTEBOOK_STORE", None)  # stored in this test's folder
    result = subprocess.run(
        [sys.executable, "-c", SNIPPET_RUNNER],
        input=match.group(1) + checks,
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


# What an extra of the package brings that a tutorial uses offline (openai and anthropic are used
# only with an API key, which the quickstart's offline tutorials do not need).
_EXTRA_NEEDS = {"mcp": "mcp", "otel": "opentelemetry-", "openai": None, "anthropic": None}


def test_it_installs_what_every_tutorial_installs_in_colab(tmp_path):
    """A tutorial's Colab cell installs what it needs (an extra such as [mcp], pandas); the
    quickstart, whose JupyterLab opens the same tutorials, installs it too, so that none of them
    stops at an import after the quickstart."""
    result = quickstart(fake_environment(tmp_path), "--check", CONDA_PREFIX=str(tmp_path))
    assert result.returncode == 0, result.stderr
    installed = " ".join(
        line
        for line in result.stdout.splitlines()
        if line.startswith("+ ") and " pip install " in line
    )
    missing = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        source = "".join(json.loads(path.read_text())["cells"][1]["source"])
        # (the Colab branch's line; the other branch names what is missing in a message)
        (pip_line,) = [line for line in source.splitlines() if line.strip().startswith("%pip")]
        needs = []
        extras = re.search(r"anvia_notebook\[([^\]]*)\]", pip_line)
        for extra in extras.group(1).split(",") if extras else []:
            needs.append(_EXTRA_NEEDS[extra.strip()])
        after = pip_line.split('"')[-1].split()  # the packages after the quoted requirement
        needs += [name.split(">")[0].split("=")[0] for name in after]
        gaps = [need for need in needs if need and need not in installed]
        if gaps:
            missing[path.name] = gaps
    assert missing == {}
