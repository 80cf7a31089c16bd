"""The public surface: exports, version, lazy imports, the runtime never importing Jupyter."""

from __future__ import annotations

import subprocess
import sys

import pytest

import anvia_notebook
from anvia_notebook import AgentBuilder
from anvia_notebook.models import DemoModel, ModelResponse, Script, ToolCall, auto_model

from helpers import make_add_tool

SPEC_NAMES = [
    "create_tool",
    "tool",
    "ToolApproval",
    "create_hook",
    "compose_hooks",
    "Hook",
    "AgentBuilder",
    "ask_question",
    "create_question_tool",
    "ApprovalDecision",
    "ToolApprovalRequest",
    "MaxTurnsError",
    "PromptCancelledError",
    "ToolApprovalRequiredError",
    "PromptResponse",
    "Message",
    "HumanInput",
    "ConsoleHumanInput",
    "CallbackHumanInput",
    "Answer",
    "OpenAIModel",
    "AnthropicModel",
    "RunHandle",
    "Studio",
    "ToolContext",
    "RunInfo",
    "ApprovalContext",
]


def test_every_export_resolves_and_spec_names_are_exported():
    for name in anvia_notebook.__all__:
        assert getattr(anvia_notebook, name) is not None, name
    missing = [name for name in SPEC_NAMES if name not in anvia_notebook.__all__]
    assert missing == []


def test_version_is_defined_once():
    from anvia_notebook._version import __version__

    assert anvia_notebook.__version__ == __version__
    with open("pyproject.toml") as handle:
        text = handle.read()
    assert 'path = "anvia_notebook/_version.py"' in text
    assert "\nversion =" not in text


def test_import_does_not_load_providers_or_jupyter():
    code = (
        "import sys, anvia_notebook, anvia_notebook.models;"
        "bad = [m for m in ('openai', 'anthropic', 'ipykernel', 'IPython', 'ipywidgets', 'anywidget',"
        " 'comm', 'traitlets') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_import_defers_the_work_a_first_use_needs():
    """``import anvia_notebook`` loads nothing but the package (each name is imported on first
    use); importing the runtime's names builds no pydantic validator and loads neither the run
    store nor the offline models (see benchmarks/runtime_overhead.py for the time it takes); all
    of it happens on first use, where the objects still work."""
    code = (
        "import sys, pydantic, anvia_notebook\n"
        "first = ','.join(sorted(m for m in sys.modules if m.startswith('anvia_notebook')))\n"
        "runtime = [n for m, names in anvia_notebook._EXPORTS.items()\n"
        "           if m.split('.')[0] not in ('store', 'models', 'notebook') for n in names]\n"
        "exec(f'from anvia_notebook import {\", \".join(runtime)}')\n"
        "models = [cls for name, module in list(sys.modules.items())\n"
        "          if name.startswith('anvia_notebook') for cls in vars(module).values()\n"
        "          if isinstance(cls, type) and issubclass(cls, pydantic.BaseModel)]\n"
        "built = sorted({m.__name__ for m in models if m.__pydantic_complete__})\n"
        "loaded = sorted(m for m in ('anvia_notebook.store', 'anvia_notebook.models.demo',\n"
        "                 'anvia_notebook.models.testing') if m in sys.modules)\n"
        "from anvia_notebook import AgentBuilder, ask_question, runs\n"
        "from anvia_notebook.models import QueueModel\n"
        "anvia_notebook.set_store(None)\n"
        "agent = AgentBuilder('a', QueueModel(['hi'])).tool(ask_question).build()\n"
        "assert agent.prompt('hello').send_sync().output == 'hi'\n"
        "assert ask_question.definition().parameters['required'] == ['questions']\n"
        "print(first, len(models), built, loaded, callable(runs))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, count, rest = out.stdout.strip().split(" ", 2)
    assert first == "anvia_notebook,anvia_notebook._version"
    assert int(count) > 30  # the runtime's models were seen
    assert rest == "[] [] True"
    code = (
        "import anvia_notebook as an\n"
        "print(an.store.RunStore is an.RunStore, an.models.testing.QueueModel.__name__,\n"
        "      an.errors.AnviaError is an.AnviaError, 'Agent' in dir(an))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # modules reached as attributes too, as when the package imported them at once
    assert out.stdout.split() == ["True", "QueueModel", "True", "True"]


def test_every_export_is_mapped_to_its_module_once():
    """The lazy package's table names every export of ``__all__`` (but the version and the
    subpackages), each once, and each is the object its module defines."""
    import importlib

    names = [n for names in anvia_notebook._EXPORTS.values() for n in names]
    assert len(names) == len(set(names))
    assert set(names) == set(anvia_notebook.__all__) - {"__version__", "evals", "mcp"}
    for module, exported in anvia_notebook._EXPORTS.items():
        if module.startswith("models."):
            continue  # the providers' SDKs are optional
        source = importlib.import_module(f"anvia_notebook.{module}")
        for name in exported:
            assert getattr(anvia_notebook, name) is getattr(source, name), name
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        anvia_notebook.NoSuchName  # noqa: B018


def test_the_steer_command_loads_neither_pydantic_nor_the_runtime(tmp_path):
    """``python -m anvia_notebook steer`` opens the store's connection and writes one row: it
    starts in a fraction of the time the runtime's imports take (benchmarks/steer_bench.py)."""
    from anvia_notebook import RunStore

    RunStore(tmp_path / "runs.sqlite").close()
    code = (
        "import sys\n"
        "from anvia_notebook.__main__ import main\n"
        f"code = main(['--store', {str(tmp_path / 'runs.sqlite')!r}, 'steer', 'run_x', 'hi'])\n"
        "heavy = ('pydantic', 'asyncio', 'anvia_notebook.messages', 'anvia_notebook._loop',\n"
        "         'anvia_notebook.store._store', 'anvia_notebook.records')\n"
        "print(code, sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split(" ", 1) == ["1", "[]\n"]  # (no run run_x: refused, exit status 1)
    assert "No stored run 'run_x'" in out.stderr


def test_opentelemetry_is_not_imported_while_instrumentation_is_off():
    code = (
        "import sys, anvia_notebook\n"
        "from anvia_notebook import AgentBuilder, instrument\n"
        "from anvia_notebook.models import QueueModel\n"
        "anvia_notebook.set_store(None)\n"
        "instrument(False)\n"
        "agent = AgentBuilder('a', QueueModel(['hi'])).build()\n"
        "assert agent.prompt('hello').send_sync().trace.turns\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'opentelemetry'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_runtime_modules_never_import_jupyter():
    import pathlib
    import re

    jupyter_import = re.compile(
        r"^\s*(import|from)\s+(ipykernel|IPython|ipywidgets|anywidget|traitlets|comm)\b", re.M
    )
    root = pathlib.Path(anvia_notebook.__file__).parent
    for path in [*root.glob("*.py"), *root.glob("models/*.py")]:
        assert not jupyter_import.search(path.read_text()), path.name


def test_demo_model_plays_scripts_and_uses_tool_results():
    model = DemoModel(
        [
            Script(
                r"\badd\b",
                [
                    ModelResponse(
                        text="Adding.",
                        tool_calls=[ToolCall(id="c1", name="add", arguments={"x": 2, "y": 3})],
                    ),
                    lambda ctx: f"The sum is {ctx.result('add')}.",
                ],
            )
        ],
        delay=0,
    )
    agent = AgentBuilder("demo", model).tool(make_add_tool()).build()
    assert agent.prompt("please add these").send_sync().output == "The sum is 5."
    assert "offline demo model" in agent.prompt("something else").send_sync().output


def test_auto_model_is_the_demo_without_keys(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    demo = DemoModel()
    assert auto_model(demo) is demo


@pytest.mark.parametrize("key", ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"])
def test_auto_model_stays_offline_when_told_and_names_the_key_when_its_sdk_is_missing(
    monkeypatch, key
):
    """With a provider key set, the offline tour and tutorials used the provider with no way
    to keep them offline, and without its SDK failed with an install hint that did not say a
    key had chosen it."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv(key, "sk-test")
    demo = DemoModel()
    monkeypatch.setenv("ANVIA_NOTEBOOK_OFFLINE", "1")
    assert auto_model(demo) is demo
    monkeypatch.setenv("ANVIA_NOTEBOOK_OFFLINE", "0")
    assert auto_model(demo) is not demo  # (the provider's model)
    package = "openai" if key == "OPENAI_API_KEY" else "anthropic"
    monkeypatch.setitem(sys.modules, package, None)  # (as if not installed: import fails)
    with pytest.raises(ImportError) as caught:
        auto_model(demo)
    said = str(caught.value)
    assert f'pip install "anvia_notebook[{package}]"' in said
    assert f"{key} is set" in said and "ANVIA_NOTEBOOK_OFFLINE=1" in said


def _import_graph() -> dict[str, set[str]]:
    """Which modules of the package import which: at any depth of the code (an import inside a
    function counts), ``importlib.import_module("...")`` too, TYPE_CHECKING aside."""
    import ast
    from pathlib import Path

    package = Path(anvia_notebook.__file__).parent
    files = sorted(package.rglob("*.py"))

    def name_of(path: Path) -> str:
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    modules = {name_of(path): path for path in files}
    graph: dict[str, set[str]] = {}

    class Imports(ast.NodeVisitor):
        def __init__(self, package_parts: list[str]) -> None:
            self.package_parts = package_parts
            self.found: set[str] = set()

        def visit_If(self, node: ast.If) -> None:
            if "TYPE_CHECKING" in ast.unparse(node.test):
                for child in node.orelse:
                    self.visit(child)
            else:
                self.generic_visit(node)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.level:
                base = self.package_parts[: len(self.package_parts) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                self.found.add(sub if sub in modules else target)

        def visit_Import(self, node: ast.Import) -> None:
            self.found.update(alias.name for alias in node.names)

        def visit_Call(self, node: ast.Call) -> None:
            name = ast.unparse(node.func)
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if name.endswith("import_module") and args and isinstance(args[0], str):
                text = args[0]
                level = len(text) - len(text.lstrip("."))
                if level:
                    base = self.package_parts[: len(self.package_parts) - level + 1]
                    text = ".".join([*base, text.lstrip(".")])
                self.found.add(text)
            self.generic_visit(node)

    for module, path in modules.items():
        parts = module.split(".")
        visitor = Imports(parts if path.name == "__init__.py" else parts[:-1])
        visitor.visit(ast.parse(path.read_text()))
        found = visitor.found
        graph[module] = {m for m in found if m in modules and m != module}
    return graph


def test_modules_import_each_other_without_cycles():
    """No import cycle anywhere in the package, lazy imports and ``importlib`` included (the
    runtime reaches the notebook layer through ``request._notebook_runner()`` only, and the
    notebook layer never imports back what imports it)."""
    graph = _import_graph()
    assert "anvia_notebook._loop" in graph["anvia_notebook.run"]  # the graph sees imports
    seam = graph["anvia_notebook.request"]
    assert "anvia_notebook.notebook._runner" in seam  # ... and importlib's

    def path_back(start: str) -> list[str] | None:
        stack = [(start, [start])]
        seen: set[str] = set()
        while stack:
            module, path = stack.pop()
            for target in graph[module]:
                if target == start:
                    return [*path, target]
                if target not in seen:
                    seen.add(target)
                    stack.append((target, [*path, target]))
        return None

    cycles = [cycle for module in graph if (cycle := path_back(module)) is not None]
    assert cycles == []


def test_every_error_of_the_package_is_an_anvia_error_and_keeps_its_builtin_base():
    from anvia_notebook import (
        AnviaError,
        HumanInputTimeout,
        HumanInputUnavailable,
        RunNotFoundError,
        ToolArgumentsError,
        ToolNotFoundError,
    )
    from anvia_notebook.models import ModelError

    builtin_bases = {
        HumanInputTimeout: TimeoutError,
        HumanInputUnavailable: NotImplementedError,
        ToolArgumentsError: ValueError,
        RunNotFoundError: KeyError,
        ToolNotFoundError: LookupError,
    }
    for error_type, builtin in builtin_bases.items():
        assert issubclass(error_type, AnviaError) and issubclass(error_type, builtin)
    assert issubclass(ModelError, AnviaError)
    timeout = HumanInputTimeout(2.5)
    assert timeout.timeout == 2.5 and "2.5 s" in str(timeout)
    exported = [getattr(anvia_notebook, name) for name in anvia_notebook.__all__]
    errors = [e for e in exported if isinstance(e, type) and issubclass(e, BaseException)]
    assert errors and all(issubclass(e, AnviaError) for e in errors)


def test_every_module_of_the_notebook_layer_is_private():
    """Only ``anvia_notebook.notebook`` itself is public there: its modules start with ``_``
    and what a user needs of them is re-exported by its ``__init__`` (and the package's)."""
    import importlib
    from pathlib import Path

    import anvia_notebook.notebook as notebook

    folder = Path(notebook.__file__).parent
    entries = [p for p in folder.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()]
    modules = sorted(p.stem if p.suffix == ".py" else p.name for p in entries)
    assert {"__init__", "_handle", "_studio", "_human_input"} <= set(modules)
    assert [m for m in modules if m != "__init__" and not m.startswith("_")] == []
    for name in notebook.__all__:
        public = getattr(notebook, name)
        assert public is getattr(importlib.import_module(public.__module__), name)
        assert public.__module__.rsplit(".", 1)[1].startswith("_")
        if name in anvia_notebook.__all__:
            assert getattr(anvia_notebook, name) is public
    assert {"RunHandle", "Studio"} <= set(notebook.__all__) & set(anvia_notebook.__all__)


def test_mcp_module_imports_no_mcp_sdk_until_a_server_is_used():
    """``from anvia_notebook import mcp`` and describing servers load nothing of the ``mcp``
    SDK (an optional extra); connecting does."""
    code = (
        "import sys\n"
        "from anvia_notebook import AgentBuilder, mcp\n"
        "from anvia_notebook.models import QueueModel\n"
        "server = mcp.stdio('s', 'python', ['-c', 'pass'])\n"
        "AgentBuilder('a', QueueModel([])).mcp([server]).build()\n"
        "print(','.join(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
