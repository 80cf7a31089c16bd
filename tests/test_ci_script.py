""".ci/run's choice of Python, tested in isolation (CI itself is not run here).

``source .ci/run`` only defines ``choose_python``; these tests call it with a PATH of stand-in
interpreters: small Python programs that answer its probes as a given kind of Python would (one
that accepts pip installs, one its distribution marks "externally managed", one too old).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
CI_RUN = ROOT / ".ci" / "run"

FAKE_PYTHON = """\
#!{python}
# A stand-in interpreter for choose_python's probes: {spec}
import json, os, pathlib, sys

spec = json.loads({spec!r})
log = pathlib.Path(spec["log"])
with log.open("a") as out:
    out.write(json.dumps([pathlib.Path(sys.argv[0]).name, *sys.argv[1:]]) + "\\n")
args = sys.argv[1:]
# Without the venv module until the file "installed" names exists (the stand-in apt-get makes it).
has_venv = spec.get("venv_module", True) or os.path.exists(spec.get("installed", ""))
if args[:1] == ["-c"]:
    code = args[1]
    if "version_info" in code:
        sys.exit(0 if spec.get("new_enough", True) else 1)
    if "EXTERNALLY-MANAGED" in code:
        print("managed" if spec.get("managed") else "usable")
        sys.exit(0)
    if "ensurepip" in code:
        sys.exit(0 if has_venv else 1)
if args[:2] == ["-m", "venv"]:
    if not has_venv:
        sys.exit("No module named venv")
    made = pathlib.Path(args[2]) / "bin" / "python"
    made.parent.mkdir(parents=True)
    made.write_text("#!/bin/sh\\necho venv python\\n")
    made.chmod(0o755)
    sys.exit(0)
sys.exit(f"unexpected call: {{args}}")
"""


def fake_python(bin_dir: pathlib.Path, name: str, log: pathlib.Path, **spec: object) -> None:
    path = bin_dir / name
    text = FAKE_PYTHON.format(python=sys.executable, spec=json.dumps({"log": str(log), **spec}))
    path.write_text(text)
    path.chmod(0o755)


def fake_tool(
    bin_dir: pathlib.Path, name: str, log: pathlib.Path, output: str = "", makes: str = ""
) -> None:
    """A command that logs its arguments, prints ``output`` and makes the file ``makes``."""
    path = bin_dir / name
    make = f': >"{makes}"\n' if makes else ""
    path.write_text(f'#!/bin/sh\necho "{name} $*" >>"{log}"\n{make}echo "{output}"\n')
    path.chmod(0o755)


@pytest.fixture
def tree(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    work = tmp_path / "repo"
    work.mkdir()
    return bin_dir, work, tmp_path / "calls.log"


def choose(path: str, work: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """Source .ci/run in ``work`` with PATH ``path``, call choose_python and print its outcome."""
    script = (
        'set -euo pipefail; source "$CI_RUN"; choose_python; '
        'printf "python=%s\\nvenv=%s\\npath=%s\\n" "$python" "${VIRTUAL_ENV:-}" "$PATH"'
    )
    return subprocess.run(
        ["/bin/bash", "-c", script],
        cwd=work,
        env={"PATH": path, "CI_RUN": str(CI_RUN), "HOME": str(work)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def outcome(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()[-3:]
    return dict(line.split("=", 1) for line in lines)


def calls(log: pathlib.Path) -> list[list[str]]:
    if not log.exists():
        return []
    lines = log.read_text().splitlines()
    return [json.loads(line) if line.startswith("[") else line.split() for line in lines]


def test_sourcing_the_script_only_defines_the_function(tree):
    bin_dir, work, log = tree
    fake_python(bin_dir, "python", log)
    script = 'source "$CI_RUN"; type choose_python >/dev/null; echo "still in $PWD"'
    result = subprocess.run(
        ["/bin/bash", "-c", script],
        cwd=work,
        env={"PATH": str(bin_dir), "CI_RUN": str(CI_RUN)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"still in {work}\n"  # no cd, no section, no install
    assert calls(log) == []


def test_this_machines_python_is_used_as_it_is(tree):
    """The interpreter that runs the tests (a pyenv or venv Python) accepts pip: no .venv."""
    _, work, _ = tree
    bin_dir = pathlib.Path(sys.executable).parent
    chosen = outcome(choose(f"{bin_dir}{os.pathsep}{os.environ['PATH']}", work))
    assert chosen["python"] in ("python", "python3")
    assert chosen["venv"] == ""
    assert not (work / ".venv").exists()


def test_python_is_preferred_then_python3(tree):
    bin_dir, work, log = tree
    fake_python(bin_dir, "python3", log)
    assert outcome(choose(str(bin_dir), work))["python"] == "python3"
    fake_python(bin_dir, "python", log)
    assert outcome(choose(str(bin_dir), work))["python"] == "python"


def test_a_python_older_than_3_10_is_passed_over(tree):
    bin_dir, work, log = tree
    fake_python(bin_dir, "python", log, new_enough=False)
    fake_python(bin_dir, "python3", log)
    assert outcome(choose(str(bin_dir), work))["python"] == "python3"


def test_without_a_usable_python_it_says_what_is_needed(tree):
    bin_dir, work, log = tree
    fake_python(bin_dir, "python", log, new_enough=False)
    result = choose(str(bin_dir), work)
    assert result.returncode == 1
    assert "CI needs Python 3.10 or newer, as python or python3." in result.stderr


def test_an_externally_managed_python_gets_a_venv_used_for_everything_after(tree):
    bin_dir, work, log = tree
    fake_python(bin_dir, "python3", log, managed=True)
    chosen = outcome(choose(str(bin_dir), work))
    venv = work / ".venv"
    assert chosen["python"] == str(venv / "bin" / "python")
    assert chosen["venv"] == str(venv)
    assert chosen["path"].split(os.pathsep)[0] == str(venv / "bin")
    assert ["python3", "-m", "venv", ".venv"] in calls(log)
    # Once made, the .venv is used again, not made again.
    log.unlink()
    result = choose(str(bin_dir), work)
    assert outcome(result)["python"] == str(venv / "bin" / "python")
    assert "using the repository's .venv" in result.stdout
    assert not any(call[1:2] == ["-m"] for call in calls(log))


def test_without_the_venv_module_it_installs_python3_venv_with_apt(tree):
    bin_dir, work, log = tree
    installed = work.parent / "python3-venv-installed"
    fake_python(bin_dir, "python3", log, managed=True, venv_module=False, installed=str(installed))
    fake_tool(bin_dir, "apt-get", log, makes=str(installed))
    fake_tool(bin_dir, "id", log, output="0")  # root: no sudo
    chosen = outcome(choose(str(bin_dir), work))
    assert chosen["python"] == str(work / ".venv" / "bin" / "python")
    apt = [call for call in calls(log) if call[0] == "apt-get"]
    assert apt[0] == ["apt-get", "update", "-qq"]
    assert "install" in apt[1] and apt[1][-1] == "python3-venv"
    venv = calls(log).index(["python3", "-m", "venv", ".venv"])
    assert venv > calls(log).index(apt[1])


def test_when_no_venv_can_be_made_it_says_what_to_install(tree):
    bin_dir, work, log = tree
    fake_python(bin_dir, "python3", log, managed=True, venv_module=False)
    result = choose(str(bin_dir), work)  # no apt-get on this PATH
    assert result.returncode == 1
    assert "Could not create .venv with python3" in result.stderr
    assert "on Debian or Ubuntu install python3-venv" in result.stderr
    assert not (work / ".venv").exists()


def probe(code_before: str, python: str = sys.executable) -> str:
    """Run the script's own probe in ``python``, after ``code_before``."""
    text = CI_RUN.read_text()
    match = re.search(r"^_python_probe='(.*?)'$", text, re.S | re.M)
    assert match, "the probe is not in .ci/run"
    code = code_before + "\n" + match.group(1)
    return subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()


def test_the_probe_finds_the_externally_managed_marker_outside_a_venv(tmp_path):
    stdlib = tmp_path / "stdlib"
    stdlib.mkdir()
    redirect = textwrap.dedent(
        f"""\
        import sys, sysconfig
        sysconfig.get_path = lambda name: {str(stdlib)!r}
        sys.prefix = sys.base_prefix
        """
    )
    assert probe(redirect) == "usable"
    (stdlib / "EXTERNALLY-MANAGED").write_text("[externally-managed]\n")
    assert probe(redirect) == "managed"
    in_venv = redirect.replace("sys.prefix = sys.base_prefix", "sys.prefix = '/some/venv'")
    assert probe(in_venv) == "usable"  # pip works in a virtual environment
    assert probe("") == "usable"  # the Python that runs these tests


def test_every_python_command_of_ci_uses_the_chosen_interpreter():
    body = CI_RUN.read_text().split("set -euo pipefail", 1)[1]
    commands = [line.strip() for line in body.splitlines() if not line.strip().startswith("#")]
    bare = [line for line in commands if re.match(r"(\S+=\S+ )*python3? ", line)]
    assert bare == []
    assert '"$python" -m pip install' in body and '"$python" -m pytest' in body
    assert '"$python" benchmarks/browser_bench.py' in body
    assert 'PYTHON="$python" bash tests/kernel/make_ipykernel6_env.sh' in body
    assert body.index("choose_python") < body.index('"$python" --version')
