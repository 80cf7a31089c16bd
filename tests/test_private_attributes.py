"""No module of ``anvia_notebook`` reaches into another module's private attributes.

A name with one leading underscore (``_name``; not a dunder such as ``__dict__``) belongs to the
module that defines it. The rule, checked with ``ast`` on the source of every module of the
package (the tests under ``tests/`` are not checked: they may touch what they like):

* ``x._name``, read, written or deleted, is allowed only when ``x`` is ``self``, ``cls`` or
  ``super()``, or when this same module defines ``_name``. A module defines ``_name`` when it
  has it at module level (an assignment, a ``def`` or a ``class``; an import defines nothing),
  in one of its class bodies (a method, a nested class, a class attribute, a pydantic private
  attribute), or when it assigns ``self._name``/``cls._name`` (also with ``setattr`` or
  ``object.__setattr__``). So a class may read ``other._name`` of another instance of a class
  of its module, and no other module may.
* ``getattr(x, "_name")``, ``setattr``, ``hasattr`` and ``delattr`` with a constant name, and
  ``vars(x)["_name"]``, ``x.__dict__["_name"]`` and ``x.__pydantic_private__["_name"]`` count
  as ``x._name``.
* So does a string constant used as a key (a dict key, a subscript, the first argument of
  ``get``, ``pop`` or ``setdefault``) that is exactly a private name which another module of
  the package defines and this one does not (``{"_own": ...}`` handed to a model as its private
  values, ``private.get("_history")``): reaching in by name is reaching in.
* ``from module import _name`` counts when ``_name`` is not a module. Private *modules*
  (``_loop``, ``store._sqlite``, ``notebook._session``) are how the package lays out its
  internals: importing them, or the public names they hold, is fine. A private *name* defined
  in another module is not, with no exception for modules of the same package: where another
  module needs it, it gets a name without the underscore, documented as package-internal.
* IPython's display protocol (``_repr_html_``, ``_repr_mimebundle_``, ``_ipython_display_``:
  a leading *and* a trailing underscore) is public by that protocol's convention.

What another module needs gets a public (or documented package-internal) method or property
where the data lives. The few private names we must touch but do not own (the standard
library's, ipykernel's, pyzmq's, ipywidgets') are listed in ``FOREIGN_PRIVATES``, each with the
reason; every entry must still be needed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import anvia_notebook

PACKAGE = Path(anvia_notebook.__file__).parent

#: (module of the package, private name it touches) -> why it must. Names we do not own: none of
#: these is defined in the package.
FOREIGN_PRIVATES: dict[tuple[str, str], str] = {
    ("anvia_notebook.notebook._blocking", "_getframe"): (
        "sys._getframe is CPython's documented way to walk the calling frames (to see whether "
        "IPython's run_cell_async awaits the caller); inspect.stack would read every file"
    ),
    ("anvia_notebook.notebook._pump_shell", "_manager"): (
        "ipykernel 7's ShellChannelThread.manager is a property that asserts it runs on the "
        "main thread; a blocked subshell's thread reads the attribute behind it"
    ),
    ("anvia_notebook.notebook._pump_shell", "_parent_ident"): (
        "ipykernel keeps the shell's parent identities there with no getter: the pump saves "
        "and restores them around a comm handler, as ipykernel itself does"
    ),
    ("anvia_notebook.notebook._pump_shell", "_recv_callback"): (
        "pyzmq's ZMQStream has no getter for its receive callback: the pump swaps in its own "
        "while a cell blocks and puts ipykernel's back afterwards"
    ),
    ("anvia_notebook.notebook._pump_shell", "_recv_copy"): (
        "pyzmq's ZMQStream copy flag, with no getter: the frames handed back to ipykernel's "
        "callback must be what it was registered to receive"
    ),
    ("anvia_notebook.notebook._widget", "_model_module_version"): (
        "ipywidgets' trait naming a custom widget's front-end version (documented for widget "
        "authors despite the underscore): anywidget's own range is read to widen it"
    ),
}

OWNERS = ("self", "cls")
#: The objects whose private values are read by a constant name.
NAMESPACES = ("__dict__", "__pydantic_private__")
ATTRIBUTE_FUNCTIONS = ("getattr", "setattr", "hasattr", "delattr")
DISPLAY_PROTOCOL = re.compile(r"^_(repr_\w+|ipython_\w+)_$")


@dataclass(frozen=True)
class Reach:
    """One place where a module touches a private name it does not define."""

    module: str
    line: int
    name: str
    text: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line}: {self.text}"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and not DISPLAY_PROTOCOL.match(name)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _constant_name(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _is_owner(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in OWNERS
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
        return [node.target]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [node.optional_vars]
    return []


def _flatten(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [leaf for element in target.elts for leaf in _flatten(element)]
    if isinstance(target, ast.Starred):
        return _flatten(target.value)
    return [target]


def defined_names(tree: ast.Module) -> set[str]:
    """The private names a module defines (see the module's docstring)."""
    defined: set[str] = set()

    def body_names(body: list[ast.stmt]) -> None:
        for statement in body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(statement.name)
            for target in _targets(statement):
                defined.update(t.id for t in _flatten(target) if isinstance(t, ast.Name))
            if isinstance(statement, (ast.If, ast.Try, ast.With)):
                for block in ("body", "orelse", "finalbody"):
                    body_names(getattr(statement, block, []))
                for handler in getattr(statement, "handlers", []):
                    body_names(handler.body)

    body_names(tree.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            body_names(node.body)
        for target in _targets(node):
            for leaf in _flatten(target):
                if isinstance(leaf, ast.Attribute) and _is_owner(leaf.value):
                    defined.add(leaf.attr)
        if isinstance(node, ast.Call) and len(node.args) >= 2:
            name = _constant_name(node.args[1])
            setter = ast.unparse(node.func) in ("setattr", "object.__setattr__")
            if setter and name and _is_owner(node.args[0]):
                defined.add(name)
    return {name for name in defined if _private(name)}


def _keys(tree: ast.AST) -> list[ast.expr]:
    """The expressions that name an entry: dict keys, subscripts, and the first argument of
    ``get``, ``pop`` and ``setdefault``."""
    keys: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys.extend(key for key in node.keys if key is not None)
        elif isinstance(node, ast.Subscript):
            keys.append(node.slice)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and node.args
        ):
            keys.append(node.args[0])
    return keys


def reaches(
    module: str,
    source: str,
    *,
    package_parts: list[str],
    others: set[str],
    is_module: Iterable[str] | None = None,
) -> list[Reach]:
    """The reaches of one module's ``source`` into private names it does not define.

    ``package_parts``: the package a relative import starts from; ``others``: the private names
    the package's other modules define; ``is_module``: the dotted names of the package's
    modules (a private module may be imported)."""
    tree = ast.parse(source)
    defined = defined_names(tree)
    modules = set(is_module or ())
    found: list[Reach] = []

    def reach(node: ast.AST, owner: ast.expr | None, name: str | None) -> None:
        if name is None or not _private(name) or name in defined:
            return
        if owner is not None and _is_owner(owner):
            return
        found.append(Reach(module, getattr(node, "lineno", 0), name, ast.unparse(node)))

    counted: set[int] = set()  # constants already counted as part of a form above
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            reach(node, node.value, node.attr)
        elif isinstance(node, ast.Call) and len(node.args) >= 2:
            if ast.unparse(node.func) in ATTRIBUTE_FUNCTIONS:
                counted.add(id(node.args[1]))
                reach(node, node.args[0], _constant_name(node.args[1]))
        elif isinstance(node, ast.Subscript):
            value, inner = node.value, None
            if isinstance(value, ast.Call) and ast.unparse(value.func) == "vars" and value.args:
                inner = value.args[0]
            elif isinstance(value, ast.Attribute) and value.attr in NAMESPACES:
                inner = value.value
            if inner is not None:
                counted.add(id(node.slice))
                reach(node, inner, _constant_name(node.slice))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - node.level + 1]
                source_module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source_module = node.module or ""
            for alias in node.names:
                if _private(alias.name) and f"{source_module}.{alias.name}" not in modules:
                    text = f"from {source_module} import {alias.name}"
                    found.append(Reach(module, node.lineno, alias.name, text))
    for node in _keys(tree):
        name = _constant_name(node)
        if id(node) in counted or name is None:
            continue
        if name in others and name not in defined:
            found.append(Reach(module, getattr(node, "lineno", 0), name, repr(name)))
    return sorted(found, key=lambda r: r.line)


def package_reaches() -> list[Reach]:
    """Every reach of every module of the package."""
    files = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
    sources = {module: path.read_text() for module, path in files.items()}
    defined = {module: defined_names(ast.parse(text)) for module, text in sources.items()}
    found: list[Reach] = []
    for module, path in files.items():
        parts = module.split(".")
        others = set().union(*(names for other, names in defined.items() if other != module))
        found.extend(
            reaches(
                module,
                sources[module],
                package_parts=parts if path.name == "__init__.py" else parts[:-1],
                others=others - {m.rsplit(".", 1)[-1] for m in files},
                is_module=files,
            )
        )
    return found


def test_no_module_reaches_into_another_modules_private_attributes():
    found = package_reaches()
    unexplained = [str(r) for r in found if (r.module, r.name) not in FOREIGN_PRIVATES]
    assert unexplained == []
    # Every exception is still needed, and is no name of the package's own.
    used = {(r.module, r.name) for r in found}
    assert sorted(set(FOREIGN_PRIVATES) - used) == []
    own = set().union(*(defined_names(ast.parse(p.read_text())) for p in PACKAGE.rglob("*.py")))
    assert sorted(name for _, name in FOREIGN_PRIVATES if name in own) == []


SAMPLE = """
from . import _loop
from .store import _sqlite, RunStore
from .store import _location
from ._util import _helper as helper

_TABLE = {}


class Owner:
    _shared = 1

    def __init__(self, other):
        self._mine = other._mine  # another instance of a class of this module
        super()._init()
        object.__setattr__(self, "_set", 1)

    def _method(self):
        return self.__dict__, type(self).__name__, cls_free(self)

    def _repr_html_(self):
        return ""


def cls_free(owner):
    owner._method()
    return Owner._shared, _TABLE, _loop.run_loop, getattr(owner, "_set")


def reach_in(run, request, report):
    run._lock.acquire()
    request._lineage = {}
    del run._task
    getattr(run, "_store_failed")(None)
    setattr(run, "_nest", None)
    hasattr(run, "_loop_thread")
    vars(run)["_joining"]
    request.__pydantic_private__["_own"]
    private = {"_history": [], "target": "_own"}
    private.get("_own"), f"{report.name}_history"
    report._repr_html_()
    return private
"""


def test_the_check_finds_every_form_of_reaching_in_and_nothing_else():
    """The check is only as good as what it recognises: each form of reaching into another
    module's private names is found in a sample, and what the rule allows is not."""
    found = reaches(
        "anvia_notebook.sample",
        SAMPLE,
        package_parts=["anvia_notebook"],
        others={"_own", "_history"},
        is_module={"anvia_notebook._loop", "anvia_notebook.store._sqlite"},
    )
    assert [r.text for r in found] == [
        "from anvia_notebook.store import _location",
        "from anvia_notebook._util import _helper",
        "run._lock",
        "request._lineage",
        "run._task",
        "getattr(run, '_store_failed')",
        "setattr(run, '_nest', None)",
        "hasattr(run, '_loop_thread')",
        "vars(run)['_joining']",
        "request.__pydantic_private__['_own']",
        "'_history'",
        "'_own'",
    ]
    assert found[0].line == 4 and str(found[0]) == (
        "anvia_notebook.sample:4: from anvia_notebook.store import _location"
    )
