"""Mutation testing of the safety-critical modules, with mutmut 3.

Usage (from anywhere; needs ``pip install "mutmut>=3.8,<4"``, Linux or macOS):

    python scripts/mutation.py                      # every module, resuming where it stopped
    python scripts/mutation.py --module interactions --module approvals
    python scripts/mutation.py --survivors          # test the survivors again, after new tests
    python scripts/mutation.py --sample 25          # 25 random mutants, run afresh (a quick check)
    python scripts/mutation.py --report             # figures and survivors, running nothing
    python scripts/mutation.py --list               # the modules and what is mutated in each
    python scripts/mutation.py --nice 0             # normal priority (on a busy machine)
    python scripts/mutation.py --jobs 2             # two mutants at once (a free 2-core machine)

It works in ``.mutation/`` at the repository root (git-ignored): the package and the tests linked
in, a ``pyproject.toml`` with a ``[tool.mutmut]`` section, and mutmut's own copy ``mutants/``.
Results are kept there: a second run only tests mutants without a verdict (new or changed code),
so an interrupted run (Ctrl-C) goes on where it stopped. ``--fresh`` starts over.

The verdicts are also written to ``scripts/mutation_verdicts.tsv`` (committed), each with the hash
mutmut gives the code of the mutant's function, so a new checkout (another machine, a clean
clone) starts from them: a mutant whose function is unchanged since its verdict is not run again,
one whose function changed is. ``--fresh`` ignores that file and tests everything again.

The tests run are the fast ones: no browser, no kernel, no test that only drives child processes
(those would not see a mutant anyway), SQLite only (the PostgreSQL variants test the same code
through another database). Each mutant runs only the tests that reach its function.

It prints, per module, how many mutants the tests killed and how many survived, then every
survivor not explained in ``scripts/mutation_equivalents.txt`` (one line per survivor: its id,
then why no test can tell the mutant from the code) with file:line and the mutation. The
percentages are of all the mutants: one still without a verdict (never run, or its run was
interrupted) counts as not killed. The exit status is 1 when an unexplained survivor or a mutant
without a verdict is left, 0 otherwise.

Run it from a clean checkout of a commit (``git worktree add``) when others edit the tree: the
mutants are the files as they are on disk, and the tests run are the ones in ``tests/``.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import random
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutation"
EQUIVALENTS = ROOT / "scripts" / "mutation_equivalents.txt"
PACKAGE = "anvia_notebook"


@dataclass(frozen=True)
class Module:
    """A module to mutate: all of its functions, or only ``only`` / all but ``skip``."""

    name: str
    path: str
    what: str
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()

    def selects(self, function: str) -> bool:
        if self.only:
            return function in self.only
        return function not in self.skip


MODULES = [
    Module(
        "tool_exec",
        "anvia_notebook/_tool_exec.py",
        "the tool executor: hook decisions, approvals, questions, cancellation and interruption",
        # Resume bookkeeping and result hooks are not approval, question or cancel paths.
        skip=(
            "ToolExecutor.__init__",
            "ToolExecutor._progress",
            "ToolExecutor._resumed_result",
            "ToolExecutor._after_result",
        ),
    ),
    Module("approvals", "anvia_notebook/approvals.py", "approval policies and decisions"),
    Module("hooks", "anvia_notebook/hooks.py", "hooks and their decisions"),
    Module("questions", "anvia_notebook/questions.py", "the ask_question tool"),
    Module("question_types", "anvia_notebook/question_types.py", "questions and answer checks"),
    Module("human", "anvia_notebook/human.py", "human inputs (console, callbacks, timeouts)"),
    Module("interactions", "anvia_notebook/interactions.py", "pending approvals and questions"),
    Module(
        "human_input",
        "anvia_notebook/notebook/_human_input.py",
        "the widget's human input",
    ),
    Module(
        "session",
        "anvia_notebook/notebook/_session.py",
        "the widget session's handlers of the page's messages",
        only=(
            "_running_loop",
            "TranscriptSession.call_soon",
            "TranscriptSession.handle_message",
            "TranscriptSession._dispatch",
            "TranscriptSession._on_sync",
            "TranscriptSession._interactions",
            "TranscriptSession._on_approval_decision",
            "TranscriptSession._always_allow",
            "TranscriptSession._on_question_answers",
            "TranscriptSession._on_stop",
        ),
    ),
    Module(
        "protocol",
        "anvia_notebook/notebook/_protocol.py",
        "validation of the messages the page sends",
        only=("ProtocolError.__init__", "_describe", "_request_id", "_parse", "parse_inbound"),
    ),
    Module(
        "store",
        "anvia_notebook/store/_store.py",
        "the run store's decisions: claim, approve, reject, answer, delivery to the run",
        only=(
            "RunStore.approve",
            "RunStore.reject",
            "RunStore.answer",
            "RunStore._decide",
            "RunStore.claim",
            "RunStore.decision",
            "RunStore._deliver",
        ),
    ),
]

# The fast tests: no browser, no kernel, no test that only checks child processes or packaging.
TEST_SELECTION = [
    "tests/",
    "--ignore=tests/e2e",
    "--ignore=tests/kernel",
    "--ignore=tests/test_notebooks.py",
    "--ignore=tests/test_kill_random.py",
    "--ignore=tests/test_resume.py",
    "--ignore=tests/test_packaging.py",
    "--ignore=tests/test_package.py",
    "--ignore=tests/test_quickstart.py",
    "--ignore=tests/test_ci_script.py",  # tests .ci/run's choice of Python, not the package
    "--ignore=tests/test_mutation_script.py",  # tests this script, not the package
    "--ignore=tests/notebook/test_in_kernel.py",
    "--ignore=tests/notebook/test_kernel_restart.py",
    "--ignore=tests/notebook/test_saved_outputs.py",
]
PYTEST_ARGS = [
    "-p",
    "no:randomly",
    "-p",
    "no:cacheprovider",
    "-k",
    "not postgresql",
    # A mutant that makes a run wait forever fails its test after a minute (a kill).
    "-o",
    "timeout=60",
]

# Statements starting on a line that matches are not mutated.
DO_NOT_MUTATE = [r"^\s*logger\.\w+\("]

# mutmut's exit codes, folded into the columns we print.
KILLED, SURVIVED, NO_TESTS, NOT_RUN, OTHER = "killed", "survived", "no tests", "not run", "other"
#: mutmut's exit codes for a mutant that no recorded test reaches.
NO_TESTS_EXIT = (5, 33)


def verdict(exit_code: int | None) -> str:
    """mutmut's exit code of a mutant's test run, as one of our columns.

    ``None``: mutmut has no verdict. It forgets the verdicts of a function whose code changed
    and all of them when the test selection changes, and an interrupted run leaves the rest
    without one; these count as not killed until they are run.
    """
    if exit_code is None:
        return NOT_RUN
    if exit_code in (1, 3):
        return KILLED
    # Timed out: the mutant made the tests spin. mutmut sends SIGXCPU at the CPU limit (or at
    # half of it in wall time) and SIGKILL one CPU second later (-9).
    if exit_code in (-24, 24, 36, 152, 255, -9):
        return KILLED
    if exit_code == 0:
        return SURVIVED
    if exit_code in NO_TESTS_EXIT:
        return NO_TESTS
    return OTHER  # interrupted, skipped, suspicious, crashed: run it again


@dataclass
class Mutant:
    key: str  # mutmut's name, e.g. anvia_notebook.interactions.xǁInteractionsǁopen__mutmut_3
    module: Module
    function: str  # e.g. Interactions.open
    exit_code: int | None
    ident: str = ""  # stable id: module:function:hash of the mutation
    line: int = 0
    before: str = ""
    after: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return verdict(self.exit_code)

    def order(self) -> tuple[str, int]:
        stem, _, number = self.key.rpartition("__mutmut_")
        return stem, int(number)


def function_of(key: str) -> str:
    """``...xǁClassǁmethod__mutmut_3`` -> ``Class.method``; ``...x_func__mutmut_3`` -> ``func``."""
    mangled = key.rpartition(".")[2].partition("__mutmut_")[0]
    if "ǁ" in mangled:
        _, cls, method = mangled.split("ǁ")
        return f"{cls}.{method}"
    return mangled[2:]


# -- the working copy ---------------------------------------------------------------------------


def config_text() -> str:
    def toml_list(items: list[str]) -> str:
        return "[" + ", ".join(json.dumps(item) for item in items) + "]"

    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    return (
        project.rstrip()
        + "\n\n# Added by scripts/mutation.py\n[tool.mutmut]\n"
        + f'source_paths = ["{PACKAGE}"]\n'
        + f"only_mutate = {toml_list([m.path for m in MODULES])}\n"
        + f"pytest_add_cli_args_test_selection = {toml_list(TEST_SELECTION)}\n"
        + f"pytest_add_cli_args = {toml_list(PYTEST_ARGS)}\n"
        # The package's non-Python files do not change what these tests check.
        + "use_git_change_detection = false\n"
        # Log calls are not mutated: what a log line says is not what the code does.
        + f"do_not_mutate_patterns = {toml_list(DO_NOT_MUTATE)}\n"
        # mutmut stops a mutant's tests at a limit made from their recorded duration, which is
        # near zero for most functions: on a loaded machine a slow run would pass for a hang (a
        # false kill). A hang is caught by pytest-timeout (a minute per test, a kill) anyway.
        + "timeout_constant = 10\n"
    )


def ledger_path() -> Path:
    """The committed verdicts (``--fresh`` ignores them)."""
    return ROOT / "scripts" / "mutation_verdicts.tsv"


def _function_name(key: str) -> str:
    """mutmut's name of a mutant's function: ``...xǁCǁmethod__mutmut_3`` -> ``xǁCǁmethod``."""
    return key.rpartition(".")[2].partition("__mutmut_")[0]


def read_ledger() -> dict[str, tuple[str, int]]:
    """Mutant key -> (hash of its function's code when tested, mutmut's exit code)."""
    entries: dict[str, tuple[str, int]] = {}
    path = ledger_path()
    if not path.exists():
        return entries
    for raw in path.read_text(encoding="utf-8").splitlines():
        if not raw or raw.startswith("#"):
            continue
        key, function_hash, code = raw.split("\t")
        entries[key] = (function_hash, int(code))
    return entries


def _metas() -> list[Path]:
    return sorted((WORK / "mutants" / PACKAGE).rglob("*.meta"))


def restore_verdicts() -> int:
    """Give each mutant without a verdict the ledger's, when its function's code is the one that
    verdict was reached on. Returns how many were taken."""
    ledger = read_ledger()
    taken = 0
    for meta in _metas():
        data = json.loads(meta.read_text(encoding="utf-8"))
        hashes = data.get("hash_by_function_name", {})
        codes = data.get("exit_code_by_key", {})
        changed = False
        for key, code in codes.items():
            entry = ledger.get(key)
            if code is None and entry is not None and hashes.get(_function_name(key)) == entry[0]:
                codes[key] = entry[1]
                taken += 1
                changed = True
        if changed:
            meta.write_text(json.dumps(data), encoding="utf-8")
    return taken


def save_verdicts() -> None:
    """Write the verdicts mutmut holds (killed or survived) to the ledger, with the hash of each
    mutant's function; the entries of a function whose code changed (or is gone) are dropped."""
    ledger = read_ledger()
    current: dict[str, dict[str, str]] = {}  # module -> mutmut's function name -> hash
    for meta in _metas():
        data = json.loads(meta.read_text(encoding="utf-8"))
        hashes = data.get("hash_by_function_name", {})
        module = meta.relative_to(WORK / "mutants").as_posix().removesuffix(".py.meta")
        current[module.replace("/", ".")] = hashes
        for key, code in data.get("exit_code_by_key", {}).items():
            function_hash = hashes.get(_function_name(key))
            if function_hash and code is not None and verdict(code) in (KILLED, SURVIVED):
                ledger[key] = (function_hash, code)
    for key, (function_hash, _) in list(ledger.items()):
        hashes = current.get(key.rpartition(".")[0])
        if hashes is not None and hashes.get(_function_name(key)) != function_hash:
            del ledger[key]
    lines = [
        "# Verdicts of scripts/mutation.py: mutant, hash of its function's code, mutmut's exit code"
    ]
    lines += [f"{key}\t{h}\t{code}" for key, (h, code) in sorted(ledger.items())]
    ledger_path().write_text("\n".join(lines) + "\n", encoding="utf-8")


def prepare(fresh: bool) -> None:
    """The working copy: links to the package and the tests, the configuration, the mutants."""
    if fresh and WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(exist_ok=True)
    for name in (PACKAGE, "tests"):
        link = WORK / name
        if not link.is_symlink():
            if link.exists():
                shutil.rmtree(link)
            link.symlink_to(Path("..") / name, target_is_directory=True)
    config = WORK / "pyproject.toml"
    text = config_text()
    if not config.exists() or config.read_text(encoding="utf-8") != text:
        config.write_text(text, encoding="utf-8")
        # Make the mutants again: mutmut keeps the verdicts of the functions whose mutants
        # are the same and forgets the others.
        for module in MODULES:
            (WORK / "mutants" / module.path).unlink(missing_ok=True)
    refresh_copies()
    forget_stale_test_map()
    # Make the mutants (mutmut only rewrites the files that changed) without running anything.
    generate = textwrap.dedent(
        """
        import os
        from mutmut.__main__ import create_mutants
        from mutmut.mutation.trampoline import set_mutant_under_test
        from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths

        set_mutant_under_test("mutant_generation")
        os.makedirs("mutants", exist_ok=True)
        copy_src_dir()
        copy_also_copy_files()
        setup_source_paths()
        create_mutants(1)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", generate], cwd=WORK, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit("mutation: making the mutants failed")


def forget_stale_test_map() -> None:
    """Drop mutmut's record of which tests reach which function when the code or the tests
    changed since it was made, so that mutmut makes it again on its next run.

    mutmut tests a mutant only with the tests it recorded as reaching the mutant's function, and
    records that once. After a change the record is stale: a test added since is never run
    against older functions, and the functions of a renamed module have no tests on record, so
    their mutants would survive (or count as having no tests) without being tried. Verdicts of
    "no tests" are forgotten with it; other survivors are tried again with ``--survivors``.
    """
    digest = hashlib.sha256()
    for folder in ("tests", PACKAGE):
        for path in sorted((ROOT / folder).rglob("*.py")):
            digest.update(path.relative_to(ROOT).as_posix().encode())
            digest.update(path.read_bytes())
    fingerprint = WORK / "code-and-tests.sha256"
    value = digest.hexdigest()
    if fingerprint.exists() and fingerprint.read_text(encoding="utf-8") == value:
        return
    (WORK / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    for meta in (WORK / "mutants" / PACKAGE).rglob("*.meta"):
        data = json.loads(meta.read_text(encoding="utf-8"))
        codes = data.get("exit_code_by_key", {})
        stale = [key for key, code in codes.items() if code in NO_TESTS_EXIT]
        if stale:
            codes.update(dict.fromkeys(stale))
            meta.write_text(json.dumps(data), encoding="utf-8")
    fingerprint.write_text(value, encoding="utf-8")


def refresh_copies() -> None:
    """Drop the stale files of mutmut's copy, so the mutants are tested with today's code.

    mutmut copies the tests over its old copy (a test file deleted since would still run) and
    copies each file of the package it does not mutate only once (a file changed since would
    be tested in its old version); both are copied again when missing.
    """
    mutants = WORK / "mutants"
    shutil.rmtree(mutants / "tests", ignore_errors=True)
    mutated = {m.path for m in MODULES}
    for copy in sorted((mutants / PACKAGE).rglob("*")):
        relative = copy.relative_to(mutants).as_posix()
        if copy.is_dir() or relative in mutated or copy.suffix in (".meta", ".spans"):
            continue
        source = ROOT / relative
        if not source.is_file() or source.read_bytes() != copy.read_bytes():
            copy.unlink()


def load_mutants(modules: list[Module]) -> list[Mutant]:
    mutants = []
    for module in modules:
        meta = WORK / "mutants" / (module.path + ".meta")
        if not meta.exists():
            continue
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        for key, code in codes.items():
            function = function_of(key)
            if module.selects(function):
                mutants.append(Mutant(key, module, function, code))
    return mutants


def run_mutmut(keys: list[str], niceness: int = 10, jobs: int = 1) -> int:
    """Test these mutants, ``jobs`` at a time (one by default), at a low priority (results are
    saved as they come).

    On a machine busy with other work a high ``niceness`` starves the tests: each test has a
    minute before it counts as failed, so a starved run would count mutants as killed that no
    test caught. ``--nice 0`` runs at the normal priority."""
    command = ["mutmut", "run", "--max-children", str(max(1, jobs)), *keys]
    mutmut = shutil.which("mutmut") or str(Path(sys.executable).parent / "mutmut")
    command[0] = mutmut
    if niceness and shutil.which("nice"):
        command = ["nice", "-n", str(niceness), *command]
    return subprocess.run(command, cwd=WORK, check=False).returncode


# -- describing mutants ---------------------------------------------------------------------------


def function_starts(path: Path) -> dict[str, int]:
    """The line of each function's and method's ``def``."""
    starts: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                starts[f"{prefix}{child.name}"] = child.lineno

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return starts


def from_def(lines: list[str], span: list[int], name: str) -> list[str]:
    """A generated function's lines in the mutated file, from its ``def`` line."""
    first, last = span
    chunk = lines[first - 1 : last]
    for index, line in enumerate(chunk):
        if f"def {name}(" in line:
            return chunk[index:]
    return chunk


def describe(mutants: list[Mutant]) -> None:
    """Fill in each mutant's stable id, source line and the mutation (old and new text).

    The id is the module, the function and a hash of the mutation (the old and new text), so it
    stays the same when other code changes; a second identical mutation in the same function
    gets a suffix (``.2``).
    """
    files: dict[str, tuple[list[str], dict[str, list[int]], dict[str, int]]] = {}
    seen: Counter[str] = Counter()
    for mutant in sorted(mutants, key=lambda m: (m.module.path, m.order())):
        path = mutant.module.path
        if path not in files:
            mutated = (WORK / "mutants" / path).read_text(encoding="utf-8").splitlines()
            index = json.loads((WORK / "mutants" / (path + ".spans")).read_text("utf-8"))
            files[path] = (mutated, index["spans"], function_starts(ROOT / path))
        mutated, spans, starts = files[path]
        name = mutant.key.rpartition(".")[2]
        stem = name.partition("__mutmut_")[0]

        orig = from_def(mutated, spans[stem + "__mutmut_orig"], stem + "__mutmut_orig")
        changed = from_def(mutated, spans[name], name)
        changed[0] = changed[0].replace(name, stem + "__mutmut_orig")
        removed: list[str] = []
        added: list[str] = []
        offset = None
        matcher = difflib.SequenceMatcher(a=orig, b=changed, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            offset = i1 if offset is None else offset
            removed += orig[i1:i2]
            added += changed[j1:j2]
        mutant.before = " / ".join(line.strip() for line in removed)
        mutant.after = " / ".join(line.strip() for line in added)
        mutant.line = starts.get(mutant.function, 1) + (offset or 0)
        digest = hashlib.sha1(f"{mutant.before}\n{mutant.after}".encode()).hexdigest()[:8]
        base = f"{mutant.module.name}:{mutant.function}:{digest}"
        seen[base] += 1
        mutant.ident = base if seen[base] == 1 else f"{base}.{seen[base]}"


def read_equivalents() -> dict[str, str]:
    reasons: dict[str, str] = {}
    if not EQUIVALENTS.exists():
        return reasons
    for raw in EQUIVALENTS.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        ident, _, reason = line.partition(" ")
        reasons[ident] = reason.strip()
    return reasons


# -- the report -----------------------------------------------------------------------------------


def report(mutants: list[Mutant], modules: list[Module], sample: bool) -> int:
    equivalents = read_equivalents()
    unexplained = [
        m for m in mutants if m.verdict in (SURVIVED, NO_TESTS) and m.ident not in equivalents
    ]
    header = (
        f"{'module':<15}{'mutants':>8}{'killed':>8}{'survived':>9}{'equivalent':>11}"
        f"{'no tests':>9}{'not run':>8}{'killed %':>9}{'+ equivalent':>13}"
    )
    print()
    print("Sampled mutants" if sample else "Mutation testing of the safety-critical modules")
    print(header)
    totals: Counter[str] = Counter()
    for module in [*modules, None]:
        if module is None:
            counts, name = totals, "total"
        else:
            mine = [m for m in mutants if m.module is module]
            if not mine:
                continue
            counts = Counter(m.verdict for m in mine)
            counts["mutants"] = len(mine)
            counts["equivalent"] = sum(
                m.verdict in (SURVIVED, NO_TESTS) and m.ident in equivalents for m in mine
            )
            totals.update(counts)
            name = module.name
        # Of all the mutants: one without a verdict is not counted as killed.
        total = counts["mutants"]
        killed = f"{100 * counts[KILLED] / total:.1f}%" if total else "-"
        explained = (
            f"{100 * (counts[KILLED] + counts['equivalent']) / total:.1f}%" if total else "-"
        )
        print(
            f"{name:<15}{counts['mutants']:>8}{counts[KILLED]:>8}{counts[SURVIVED]:>9}"
            f"{counts['equivalent']:>11}{counts[NO_TESTS]:>9}{counts[NOT_RUN] + counts[OTHER]:>8}"
            f"{killed:>9}{explained:>13}"
        )
    stale = sorted(set(equivalents) - {m.ident for m in mutants if m.ident})
    if stale and not sample and len(modules) == len(MODULES):
        print(f"\n{len(stale)} line(s) of {EQUIVALENTS.name} match no surviving mutant any more:")
        for ident in stale:
            print(f"  {ident}")
    if unexplained:
        print(f"\n{len(unexplained)} survivor(s) not explained in {EQUIVALENTS.name}:")
        for m in sorted(unexplained, key=lambda m: (m.module.path, m.line)):
            status = "" if m.verdict == SURVIVED else f"  [{m.verdict}]"
            print(f"  {m.module.path}:{m.line}  {m.ident}{status}")
            print(f"      {m.before or '(nothing)'}")
            print(f"   -> {m.after or '(removed)'}")
    not_run = [m for m in mutants if m.verdict in (NOT_RUN, OTHER)]
    if not_run:
        print(
            f"\n{len(not_run)} mutant(s) without a verdict (never run, interrupted or crashed): "
            "run the script again to test them."
        )
    return 1 if unexplained or not_run else 0


def write_json(path: Path, mutants: list[Mutant]) -> None:
    rows = [
        {
            "id": m.ident or None,
            "mutmut": m.key,
            "module": m.module.name,
            "function": m.function,
            "verdict": m.verdict,
            "line": m.line or None,
            "before": m.before or None,
            "after": m.after or None,
        }
        for m in mutants
    ]
    path.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    names = [m.name for m in MODULES]
    parser.add_argument("--module", action="append", choices=names, help="repeatable")
    parser.add_argument("--sample", type=int, metavar="N", help="run N random mutants afresh")
    parser.add_argument("--seed", type=int, help="for --sample (default: random)")
    parser.add_argument(
        "--report", action="store_true", help="print the last results; make and run nothing"
    )
    parser.add_argument(
        "--survivors", action="store_true", help="also test the survivors again (after new tests)"
    )
    parser.add_argument("--fresh", action="store_true", help="forget every earlier result")
    parser.add_argument("--list", action="store_true", help="the modules and what is mutated")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write every verdict")
    parser.add_argument(
        "--nice", type=int, default=10, metavar="N", help="priority of the test runs (default 10)"
    )
    parser.add_argument(
        "--jobs", type=int, default=1, metavar="N", help="mutants tested at once (default 1)"
    )
    args = parser.parse_args(argv)

    modules = [m for m in MODULES if not args.module or m.name in args.module]
    if args.list:
        for module in modules:
            scope = "all"
            if module.only:
                scope = "only " + ", ".join(module.only)
            elif module.skip:
                scope = "all but " + ", ".join(module.skip)
            print(f"{module.name:<15}{module.path}: {module.what}\n{'':<15}functions: {scope}")
        return 0
    try:
        import mutmut
    except ImportError:
        raise SystemExit(
            'mutation: needs mutmut 3.8 or newer: pip install "mutmut>=3.8,<4"'
        ) from None
    if sys.platform == "win32":
        raise SystemExit("mutation: mutmut needs fork(): run it on Linux or macOS")

    if not args.report:
        prepare(args.fresh)
        if not args.fresh:
            taken = restore_verdicts()
            if taken:
                print(f"{taken} verdict(s) taken from {ledger_path().name} (unchanged functions)")
    elif not (WORK / "mutants").is_dir():
        raise SystemExit("mutation: no results yet; run it without --report first")
    mutants = load_mutants(modules)
    if not mutants:
        raise SystemExit("mutation: no mutants were made")
    describe(mutants)
    sample = args.sample is not None
    if sample:
        rng = random.Random(args.seed)
        mutants = rng.sample(mutants, min(args.sample, len(mutants)))
        todo = [m.key for m in mutants]  # named mutants are run again even with a verdict
    else:
        again = (NOT_RUN, OTHER, SURVIVED, NO_TESTS) if args.survivors else (NOT_RUN, OTHER)
        todo = [m.key for m in mutants if m.verdict in again]
    if todo and not args.report:
        print(
            f"mutmut {getattr(mutmut, '__version__', '')}: testing {len(todo)} of "
            f"{len(mutants)} mutants in {len(modules)} module(s), one at a time",
            flush=True,
        )
        code = run_mutmut(todo, args.nice, args.jobs)
        if code not in (0, 1):
            print(f"mutation: mutmut stopped (exit status {code})", file=sys.stderr)
        save_verdicts()
        codes = {m.key: m.exit_code for m in load_mutants(modules)}
        for mutant in mutants:
            mutant.exit_code = codes.get(mutant.key, mutant.exit_code)
    status = report(mutants, modules, sample)
    if args.json:
        write_json(args.json, mutants)
    return status


if __name__ == "__main__":
    sys.exit(main())
