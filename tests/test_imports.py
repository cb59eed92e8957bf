"""No import cycles in engine/, hidden ones included, and imports at the top of each module.

An import inside a function still ties two modules together: a cycle that only works because one
side imports late is one a reader follows round and round. So every import counts here, at module
level or inside a function; only those under ``if TYPE_CHECKING:`` (annotations, never run) do not.
Importing ``engine.a.b`` runs ``engine/a/__init__.py`` first, so that is an edge too.

A module says what it needs in its first lines. The exceptions are the heavy optional libraries
(matplotlib, PIL, fontTools, torch, ray), imported inside the functions that use them so that a
build that draws nothing, the other commands and a spec check never pay for them; emoji, whose
import reads a table of every emoji; tqdm, whose bar only a running sweep draws; regex, for
graphemes and a lab's patterns; and the torch side of engine.gpubench, which is torch.
Plug-in discovery (engine/registry.py, the command line) goes through importlib, not an import
statement.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from helpers import syntax_tree

ENGINE = Path(__file__).resolve().parent.parent / "engine"


def module_names() -> dict[str, Path]:
    names = {}
    for path in ENGINE.rglob("*.py"):
        parts = list(path.relative_to(ENGINE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


@functools.cache
def import_statements(path: Path) -> tuple[tuple[ast.Import | ast.ImportFrom, bool], ...]:
    """Each import statement of the file that runs, with whether it is inside a function body:
    those under ``if TYPE_CHECKING:`` (annotations, never run) are left out. One pass a file,
    shared by the tests here."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []
    work: list[tuple[ast.AST, bool]] = [(syntax_tree(path), False)]
    while work:
        node, inside = work.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append((node, inside))
            continue
        # An import is a statement: only the statement lists are walked (bodies, else and
        # finally blocks, except handlers and match cases), not the expressions in them.
        children: list[ast.AST] = [
            child for field in _BLOCKS for child in getattr(node, field, ()) if isinstance(child, ast.AST)
        ]
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            children = list(node.orelse)
        inside = inside or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        work += [(child, inside) for child in children]
    return tuple(sorted(found, key=lambda pair: pair[0].lineno))


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The engine modules ``name`` imports anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
        # Importing engine.a.b runs engine/a/__init__.py first: an edge too, unless that package
        # is one of this module's own, which Python has imported before this module's first line.
        parent = target.rpartition(".")[0]
        while parent:
            if parent in modules and parent != name and not name.startswith(parent + "."):
                found.add(parent)
            parent = parent.rpartition(".")[0]

    for node, _ in import_statements(path):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("engine"):
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            if base.startswith("engine"):
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    add(full if full in modules else base)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_the_cycle_finder_finds_a_hand_made_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_engine_module_imports_its_way_back_to_itself():
    modules = module_names()
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert cycles(graph) == []


# Imported inside the functions that use them (see the module's docstring). emoji too: its
# import reads a table of every emoji, 20 ms that a build pays only for an X draft that is not
# all ASCII; tqdm, 30 ms of every build for a bar only a running sweep or bench draws; and
# regex, 10–15 ms, for graphemes (Bluesky, Mastodon, Threads) and a lab's patterns only; and
# concurrent.futures, 10–35 ms with the logging it imports, for the pool only a sweep starts.
HEAVY = {"matplotlib", "PIL", "fontTools", "torch", "ray", "emoji", "tqdm", "regex", "concurrent"}


def _allowed_late(name: str) -> bool:
    """A module a function may import: a heavy library, or the torch side of engine.gpubench
    (its shapes are plain data and come from the top, as everything else does)."""
    torch_side = name.startswith("engine.gpubench.") and not name.startswith("engine.gpubench.shapes")
    return name.split(".")[0] in HEAVY or torch_side


def late_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each import statement inside a function body of the file, but those
    under ``if TYPE_CHECKING:``."""
    found: list[tuple[int, str]] = []
    for node, inside in import_statements(path):
        if not inside:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        else:
            found.append((node.lineno, "." * node.level + (node.module or "")))
    return found


def test_the_late_import_finder_sees_imports_in_nested_functions_only(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "import os\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import json\n"
        "def f():\n    import re\n    def g():\n        from engine import units\n"
        "    if TYPE_CHECKING:\n        import csv\n"
        "class C:\n    def m(self):\n        import matplotlib.pyplot as plt\n"
    )
    assert late_imports(source) == [(6, "re"), (8, "engine"), (13, "matplotlib.pyplot")]
    assert _allowed_late("matplotlib.pyplot") and _allowed_late("engine.gpubench.runner")
    assert not _allowed_late("engine.gpubench.shapes") and not _allowed_late("re")


def test_engine_modules_import_at_the_top_but_the_heavy_libraries():
    offenders = []
    for path in sorted(ENGINE.rglob("*.py")):
        where = path.relative_to(ENGINE.parent).as_posix()
        for line, name in late_imports(path):
            if _allowed_late(name):
                continue
            offenders.append(f"{where}:{line} imports {name} inside a function")
    assert offenders == []


# DESIGN.md's layers, from the bottom: the math and the lab's run may not import what is built
# on them (the sections, the day's spec, rendering, the commands).
LOWER = (
    "engine.kvcache",
    "engine.workload",
    "engine.batching",
    "engine.queueing",
    "engine.sweep",
    "engine.lab",
)
UPPER = (
    "engine.experiments",
    "engine.sections",
    "engine.spec",
    "engine.inputs",
    "engine.charts",
    "engine.render",
    "engine.platforms",
    "engine.pipeline",
    "engine.scaffold",
    "engine.commands",
    "engine.cli",
    "engine.preview",
)


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_the_lower_layers_import_nothing_built_on_them():
    modules = module_names()
    upward = {
        name: sorted(target for target in imports_of(name, path, modules) if _within(target, UPPER))
        for name, path in modules.items()
        if _within(name, LOWER)
    }
    assert {name: found for name, found in upward.items() if found} == {}
