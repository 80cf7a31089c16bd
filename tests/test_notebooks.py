"""Every tutorial notebook runs headless (nbclient) with the scripted operator and offline model."""

from __future__ import annotations

import copy
import json
import os
import pathlib
import re
import subprocess

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def outputs_text(notebook) -> str:
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if "text" in output:
                parts.append(output["text"])
            for kind in ("text/plain", "text/html"):
                if kind in output.get("data", {}):
                    parts.append(output["data"][kind])
    return "\n".join(parts)


def test_the_tutorials_are_numbered_in_order_and_each_is_checked():
    assert len(NOTEBOOKS) >= 8
    assert [p.name[:2] for p in NOTEBOOKS] == [f"{i:02d}" for i in range(1, len(NOTEBOOKS) + 1)]
    assert sorted(EXPECTED) == [p.name for p in NOTEBOOKS]


EXPECTED = {
    "01_quickstart.ipynb": [
        "Order **A1001** is *shipped*",
        "looking up A1001",
        "calls get_order_status with {'order_id': 'A1001'}",  # stream() events, worded
        "answer: Order **A1001**",
    ],
    "02_tool_approval.ipynb": [
        "refund `rf_a1001` was issued",
        "Refunds over $10 need a manager.",
        "Review refund of $25.00 for order A1001.",
    ],
    "03_hook_approval.ipynb": [
        "Order A1002 is cancelled.",
        "call cancel_order",
        "approvals in the audited run: ['approved']",  # composing kept the approval hook
    ],
    "04_ask_question.ipynb": ["Escalation `esc_t-42` is ready", '"questionId": "priority"'],
    "05_stop_and_timeouts.ipynb": [
        "cancelled: Changed my mind.",
        "stop requested: True",
        "The export did not happen: nobody decided in time",
    ],
    "06_human_input_outside.ipynb": [
        "priority **high** via phone",
        "Pending question",
        "Answered question_",
        "already answered",
    ],
    "07_studio.ipynb": [
        "[('support', 'Where is order A1001?')]",
        "You: Where is order A1001?",  # the session opened again shows its transcript
    ],
    "08_restart_and_resume.ipynb": [
        "refund `rf_a1001` was issued",
        "refund A1001 25.0\n",
        "interrupted",
    ],
    "09_inspect_a_run.ipynb": [
        "status='success', turns=2, tool_calls=1)",
        "'cached_tokens': 768",
        "tools: ['get_order_status', 'issue_refund']",
        "issue_refund status: rejected",
        "| decided by: handler | at: ",  # who decided, and when
        "2 model calls, 1 tool call, 932 tokens in / 71 out",  # a trace shown as a table
        "stored trace: True",
        "invoke_agent Support agent",
        "execute_tool issue_refund",
        "event tool_approval_result: {'anvia.approval.id'",
    ],
    "10_evaluate_an_agent.ipynb": [
        "5/5 cases, pass rate 60%; mean contains 0.60, short_enough 1.00, llm_judge 0.62",
        "No reviewer is present in an evaluation",  # the refund was rejected, nobody waited
        "0 newly failing, 1 newly passing; pass rate 60% -&gt; 80%",
        "['refund'] []",
        'class="anvia-eval-report"',  # the saved notebook keeps the report's static table
    ],
    "11_sub_agents.ipynb": [
        "According to the analyst: The west grew fastest (west: +12%",
        "asked by lead \u203a analyst \u203a run_sql",
        "analyst success   under the lead's run",
        "  analyst (in ask_analyst): tool_approval_request",
        "more than this tool allows (2). Answer without it.",
    ],
    "12_mcp_tools_behind_approvals.ipynb": [
        "read_note: Read one note. (runs without approval)",
        "delete_note: Delete one note for good. (needs your approval)",
        "Waiting for you: delete_note from the MCP server 'notes' (declares: not read-only, "
        "destructive)",
        "Done: Deleted 'groceries'.",
        "read_note({'name': 'groceries'}): success, no approval needed",
        "delete_note({'name': 'groceries'}): success, approved",
        "Closed.",
    ],
    "13_steer_and_typed_results.ipynb": [
        "steered: True",
        "You (during the run): Also split it by region.",  # where the agent read it
        "['user', 'assistant', 'tool', 'user', 'assistant', 'tool', 'assistant']",
        "after the end: False",
        "answered: Q3 sales: total: $2.8M.\ndelivered: And by region, please.",  # before it ended
        "has already ended (success); a message can no longer be sent to it.",
        "region='west' sales_musd=1.2 growth_pct=12.0\nfastest growth: west",
        "0   west         1.2        12.0",  # to_pandas()
        "Summary(best_region='west', total_musd=2.8)",
        'result.0.growth_pct: Input should be a valid number, unable to parse string as a number (got "about twelve")',
        "refused: The final_result arguments are not valid as they are",
        "[RegionSales(region='west', sales_musd=1.2, growth_pct=12.0)]",
        "Contact(name='Maria', office='east', quarter='Q3')",
    ],
}

#: A notebook's metadata as JupyterLab 4 writes it when it opens one with the ``python3`` kernel
#: (found by saving the tutorials through a real JupyterLab server). Committed otherwise, a
#: tutorial opens as modified before anything runs. Only ``language_info.version`` (the kernel's
#: Python) differs from one machine to another, so it is checked for its form only.
JUPYTERLAB_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {
        "codemirror_mode": {"name": "ipython", "version": 3},
        "file_extension": ".py",
        "mimetype": "text/x-python",
        "name": "python",
        "nbconvert_exporter": "python",
        "pygments_lexer": "ipython3",
    },
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_tutorial_is_committed_as_jupyterlab_saves_it_with_no_outputs(path):
    text = path.read_text(encoding="utf-8")
    notebook = nbformat.reads(text, as_version=4)
    fix = f"{path.name}: open it in JupyterLab, clear all outputs and save it"
    assert (notebook.nbformat, notebook.nbformat_minor) == (4, 5), fix
    metadata = copy.deepcopy(dict(notebook.metadata))
    version = metadata["language_info"].pop("version", None)
    assert isinstance(version, str) and re.fullmatch(r"3\.\d+\.\d+", version), fix
    assert metadata == JUPYTERLAB_METADATA, fix
    ids = [cell.get("id") for cell in notebook.cells]
    assert all(isinstance(i, str) and re.fullmatch(r"[a-zA-Z0-9-_]{1,64}", i) for i in ids), fix
    assert len(set(ids)) == len(ids), fix
    for cell in notebook.cells:
        assert cell.metadata == {}, (fix, cell.id)
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (fix, cell.id)
    assert text == nbformat.writes(notebook) + "\n", fix  # the server's own layout, byte for byte


#: What a tutorial's outputs must never say (wording a notebook user should not see).
FORBIDDEN = [
    "Export finished: Tool approval",  # a timed-out export reported as finished
    "The reviewer said",  # a timeout is nobody's word
    "rejected in Anvia Studio",
    "ToolNotFoundError",
    "$25.0 ",
]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_tutorial_runs_offline(path, monkeypatch, tmp_path):
    monkeypatch.setenv("ANVIA_NOTEBOOK_AUTO", "approve")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    # runs go to the default store, .anvia/runs.sqlite in the notebook's folder
    monkeypatch.delenv("ANVIA_NOTEBOOK_STORE", raising=False)
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    text = outputs_text(notebook)
    for needle in EXPECTED[path.name]:
        assert needle in text, (needle, text[-3000:])
    for needle in FORBIDDEN:
        assert needle not in text, (needle, text[-3000:])
    if path.name == "08_restart_and_resume.ipynb":
        assert text.count("refund A1001 25.0") == 1  # the approved refund ran exactly once
    # a finished run leaves a static HTML copy of its transcript in the saved notebook
    if path.name not in ("07_studio.ipynb", "10_evaluate_an_agent.ipynb"):
        assert 'class="anvia-static-transcript"' in text
    json.dumps(nbformat.writes(notebook))  # the executed notebook still serialises


def test_tutorial_08_after_a_kernel_restart_each_cell_imports_what_it_uses(monkeypatch, tmp_path):
    """The cells from "After the restart" on run in a fresh kernel, as after Kernel > Restart;
    the terminal command the tutorial prints works as written, with no `python` on PATH."""
    monkeypatch.setenv("ANVIA_NOTEBOOK_AUTO", "approve")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv("ANVIA_NOTEBOOK_STORE", raising=False)
    notebook = nbformat.read(ROOT / "notebooks" / "08_restart_and_resume.ipynb", as_version=4)
    [restart] = [
        i for i, c in enumerate(notebook.cells) if c.source.startswith("## After the restart")
    ]
    parts = []
    for cells in (notebook.cells[:restart], notebook.cells[restart:]):
        part = nbformat.v4.new_notebook(cells=cells, metadata=notebook.metadata)
        NotebookClient(
            part,
            timeout=120,
            kernel_name="python3",
            resources={"metadata": {"path": str(tmp_path)}},
        ).execute()  # a new kernel each time
        parts.append(part)
    text = outputs_text(parts[1])
    assert text.count("refund A1001 25.0") == 1, text[-3000:]
    [command] = [
        line.removeprefix("In a terminal: ")
        for line in text.splitlines()
        if line.startswith("In a terminal: ")
    ]
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    environ = {k: v for k, v in os.environ.items() if k != "ANVIA_NOTEBOOK_STORE"}
    result = subprocess.run(
        ["/bin/bash", "-c", command],
        cwd=empty,
        env={**environ, "PATH": str(empty), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "refund-desk" in result.stdout and "success" in result.stdout


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_in_colab_the_install_cell_says_what_pip_left_installed(path, monkeypatch, capsys):
    """The first cell's Colab branch, with `%pip` played by a stub: it names the version pip left
    installed, says when the session must restart, and fails clearly when pip installed nothing."""
    import importlib.metadata
    import sys
    import types

    from IPython.core.inputtransformer2 import TransformerManager

    import anvia_notebook  # noqa: F401  (imported before the cell: it says to restart)

    cells = nbformat.read(path, as_version=4).cells
    source = next(c.source for c in cells if c.cell_type == "code")
    code = TransformerManager().transform_cell(source)  # %pip becomes get_ipython().run_line_magic
    pip_lines: list[str] = []

    def run_line_magic(name: str, line: str) -> None:
        pip_lines.append(f"%{name} {line}")

    shell = types.SimpleNamespace(run_line_magic=run_line_magic)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))

    exec(code, {"get_ipython": lambda: shell})
    [pip_line] = pip_lines
    assert pip_line.startswith('%pip install -q "anvia_notebook')
    assert "@ git+https://github.com/anvia-hq/anvia_notebook" in pip_line
    out = capsys.readouterr().out
    installed = importlib.metadata.version("anvia_notebook")
    assert f"Installed anvia_notebook {installed} from GitHub" in out
    assert "Restart session" in out  # anvia_notebook was imported in this process already

    def nothing_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", nothing_installed)
    with pytest.raises(RuntimeError, match="pip could not install anvia_notebook: see its"):
        exec(code, {"get_ipython": lambda: shell})
    assert "Installed" not in capsys.readouterr().out


#: What each tutorial uses besides the package (the module, and what pip installs it from).
TUTORIAL_NEEDS = {
    "09_inspect_a_run": {"opentelemetry.sdk": "opentelemetry-sdk", "pandas": "pandas"},
    "10_evaluate_an_agent": {"pandas": "pandas"},
    "12_mcp_tools_behind_approvals": {"mcp.server.mcpserver": '"mcp>=2.3,<3"'},
    "13_steer_and_typed_results": {"pandas": "pandas"},
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_tutorial_that_makes_a_table_checks_for_pandas_first(path):
    """Tutorial 13 makes a table (``to_pandas()``) but its first cell did not check for pandas:
    without it, it failed half-way, where 09 and 10 stop at once saying what to install."""
    cells = nbformat.read(path, as_version=4).cells
    code = "\n".join(c.source for c in cells if c.cell_type == "code")
    if "to_pandas(" in code or "import pandas" in code:
        assert "pandas" in TUTORIAL_NEEDS.get(path.stem, {})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_outside_colab_the_install_cell_names_what_is_missing(path, monkeypatch, capsys):
    """The first cell's other branch: with all it needs installed it says so; with some of it
    missing it stops, with the one ``%pip install`` line of what is missing (and only that)."""
    import importlib.util

    from IPython.core.inputtransformer2 import TransformerManager

    cells = nbformat.read(path, as_version=4).cells
    source = next(c.source for c in cells if c.cell_type == "code")
    code = TransformerManager().transform_cell(source)
    exec(code, {"get_ipython": lambda: None})
    assert "Not in Colab: using the anvia_notebook installed" in capsys.readouterr().out

    needs = {"anvia_notebook": None, **TUTORIAL_NEEDS.get(path.stem, {})}
    real_find_spec = importlib.util.find_spec
    for gone in needs:

        def find_spec(name: str, package: str | None = None, gone: str = gone) -> object:
            if name != gone:
                return real_find_spec(name, package)
            if "." in name:  # as when the package it is part of is missing
                raise ModuleNotFoundError(f"No module named {name.split('.')[0]!r}")
            return None

        monkeypatch.setattr(importlib.util, "find_spec", find_spec)
        with pytest.raises(ModuleNotFoundError) as raised:
            exec(code, {"get_ipython": lambda: None})
        [pip_line] = [line for line in str(raised.value).splitlines() if "%pip" in line]
        wanted = needs[gone] or '"anvia_notebook @ git+https://github.com/anvia-hq/anvia_notebook"'
        assert pip_line.strip() == f"%pip install {wanted}"


def test_tutorial_10_keeps_its_judge_offline_where_a_key_is_set_but_the_notebook_is_offline(
    monkeypatch, capsys
):
    """``ANVIA_NOTEBOOK_OFFLINE=1`` (what the quickstart's JupyterLab runs with) keeps the
    tutorials on the scripted model whatever key is set; tutorial 10's "real judge" cell looked at
    the keys only, so it graded with a real model there, calling (and billing) the provider."""
    import ast
    import asyncio
    import types

    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")
    monkeypatch.setenv("ANVIA_NOTEBOOK_OFFLINE", "1")
    cells = nbformat.read(ROOT / "notebooks" / "10_evaluate_an_agent.ipynb", as_version=4).cells
    [source] = [c.source for c in cells if c.cell_type == "code" and "real_judge" in c.source]

    async def evaluate(*args: object, **kwargs: object) -> None:
        raise AssertionError("an evaluation with a real judge")

    def llm_judge(model: object, rubric: str) -> object:
        raise AssertionError(f"a real judge: {model!r}")

    stub = types.SimpleNamespace(evaluate=evaluate, llm_judge=llm_judge, contains=lambda **_: None)
    code = compile(source, "cell", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    names = {"evals": stub, "agent": None, "cases": [], "display": print}
    result = eval(code, names)  # the tutorial's own cell
    if asyncio.iscoroutine(result):
        asyncio.run(result)
    assert "to grade with a real model" in capsys.readouterr().out


def python_in_a_folder_with_a_space(tmp_path: pathlib.Path) -> pathlib.Path:
    """This Python, reached through a path with a space in it, as the `.venv` of a repository
    cloned into a folder such as ``Data Science/`` is."""
    import shutil
    import sys

    home = tmp_path / "Data Science" / "env"
    (home / "bin").mkdir(parents=True)
    python = home / "bin" / "python"
    python.symlink_to(sys.executable)
    if sys.prefix != sys.base_prefix:  # a virtual environment: its configuration and packages too
        shutil.copy(pathlib.Path(sys.prefix) / "pyvenv.cfg", home / "pyvenv.cfg")
        (home / "lib").symlink_to(pathlib.Path(sys.prefix) / "lib")
    found = subprocess.run(
        [str(python), "-c", "import sys, ipykernel; print(sys.executable)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert found == str(python), found
    return python


def test_tutorial_06_runs_its_commands_with_a_python_whose_path_has_a_space(monkeypatch, tmp_path):
    """Tutorial 06 ran its terminal commands as ``!{sys.executable} -m anvia_notebook ...``: with
    the kernel's Python in a folder whose name has a space, the shell split its path, so the
    question was never answered and the run waited until its human input timed out."""
    python = python_in_a_folder_with_a_space(tmp_path)
    kernels = tmp_path / "jupyter" / "kernels" / "spaced"
    kernels.mkdir(parents=True)
    spec = {
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (in a folder with a space)",
        "language": "python",
    }
    (kernels / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("ANVIA_NOTEBOOK_AUTO", "approve")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv("ANVIA_NOTEBOOK_STORE", raising=False)
    notebook = nbformat.read(ROOT / "notebooks" / "06_human_input_outside.ipynb", as_version=4)
    folder = tmp_path / "work"
    folder.mkdir()
    NotebookClient(
        notebook, timeout=60, kernel_name="spaced", resources={"metadata": {"path": str(folder)}}
    ).execute()
    text = outputs_text(notebook)
    for needle in EXPECTED["06_human_input_outside.ipynb"]:
        assert needle in text, (needle, text[-3000:])
