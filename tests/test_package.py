"""The public surface: exports, version, lazy imports, the runtime never importing Jupyter."""

from __future__ import annotations

import subprocess
import sys

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
