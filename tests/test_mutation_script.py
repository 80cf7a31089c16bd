"""The mutation script's bookkeeping (scripts/mutation.py), without running mutmut."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "mutation.py"


@pytest.fixture
def script(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("mutation_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "mutation_script", module)
    spec.loader.exec_module(module)
    root = tmp_path / "repo"
    for folder in ("tests", module.PACKAGE):
        (root / folder).mkdir(parents=True)
    (root / "tests" / "test_a.py").write_text("def test_a(): pass\n")
    (root / module.PACKAGE / "a.py").write_text("X = 1\n")
    monkeypatch.setattr(module, "ROOT", root)
    monkeypatch.setattr(module, "WORK", root / ".mutation")
    mutants = root / ".mutation" / "mutants"
    (mutants / module.PACKAGE).mkdir(parents=True)
    return module, root, mutants


def _meta(mutants, package, codes):
    path = mutants / package / "a.py.meta"
    path.write_text(json.dumps({"exit_code_by_key": codes, "hash_by_function_name": {}}))
    return path


def test_a_change_of_code_or_tests_drops_the_stale_test_map_and_no_tests_verdicts(script):
    module, root, mutants = script
    stats = mutants / "mutmut-stats.json"
    stats.write_text("{}")
    meta = _meta(mutants, module.PACKAGE, {"m1": 33, "m2": 1, "m3": 0, "m4": 5})
    module.forget_stale_test_map()
    assert not stats.exists()  # mutmut records again which tests reach which function
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    assert codes == {"m1": None, "m2": 1, "m3": 0, "m4": None}

    stats.write_text("{}")  # recorded again; nothing changed since
    _meta(mutants, module.PACKAGE, {"m1": 33})
    module.forget_stale_test_map()
    assert stats.exists()
    assert json.loads(meta.read_text())["exit_code_by_key"] == {"m1": 33}

    (root / "tests" / "test_a.py").write_text("def test_a(): assert True\n")  # a test changed
    module.forget_stale_test_map()
    assert not stats.exists()
    stats.write_text("{}")
    (root / module.PACKAGE / "b.py").write_text("Y = 2\n")  # the code changed
    module.forget_stale_test_map()
    assert not stats.exists()


def test_verdicts_are_kept_in_the_ledger_and_reused_only_for_unchanged_functions(script):
    module, root, mutants = script
    (root / "scripts").mkdir()
    meta = mutants / module.PACKAGE / "a.py.meta"
    key = f"{module.PACKAGE}.a.x_f__mutmut_%d"
    meta.write_text(
        json.dumps(
            {
                "exit_code_by_key": {key % 1: 1, key % 2: 0, key % 3: None, key % 4: 33},
                "hash_by_function_name": {"x_f": "h1"},
            }
        )
    )
    module.save_verdicts()
    ledger = module.read_ledger()
    # killed and survived are kept; no verdict and "no tests" are not
    assert ledger == {key % 1: ("h1", 1), key % 2: ("h1", 0)}

    # A new checkout: the same function, no verdicts yet -> they come from the ledger.
    meta.write_text(
        json.dumps(
            {
                "exit_code_by_key": {key % 1: None, key % 2: None, key % 3: None},
                "hash_by_function_name": {"x_f": "h1"},
            }
        )
    )
    assert module.restore_verdicts() == 2
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    assert codes == {key % 1: 1, key % 2: 0, key % 3: None}

    # The function changed: nothing is taken, and saving drops the stale entries.
    meta.write_text(
        json.dumps({"exit_code_by_key": {key % 1: None}, "hash_by_function_name": {"x_f": "h2"}})
    )
    assert module.restore_verdicts() == 0
    assert json.loads(meta.read_text())["exit_code_by_key"] == {key % 1: None}
    module.save_verdicts()
    assert module.read_ledger() == {}

    # A module mutmut has no file for (not made on this machine) keeps its entries.
    other = f"{module.PACKAGE}.b.x_g__mutmut_1"
    with module.ledger_path().open("a") as ledger:
        ledger.write(f"{other}\th9\t1\n")
    module.save_verdicts()
    assert module.read_ledger() == {other: ("h9", 1)}
