"""The engine's own import graph, read with `ast` (nothing is imported).

Used by tests/test_imports.py to keep the layers honest: every ``import`` of
an ``engine`` module counts, also the ones inside functions (a lazy import is
still a dependency). No TensorFlow, no engine imports.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2] / "engine"


def module_name(path: Path, root: Path = ROOT) -> str:
    """'engine.jobs.runner' for <root>/jobs/runner.py; a package's __init__ is the package."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module under `root` by dotted name."""
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


@functools.cache
def _tree(text: str, filename: str) -> ast.Module:
    return ast.parse(text, filename)


@functools.cache
def _import_nodes(text: str, filename: str, top_level_only: bool) -> tuple:
    body = _tree(text, filename).body
    if top_level_only:
        body = [stmt for stmt in body if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    return tuple(n for stmt in body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom)))


def import_nodes(path: Path, top_level_only: bool = False) -> tuple:
    """Every ``import`` and ``from ... import`` statement of `path`: also inside functions, or with
    `top_level_only` those run at import time (module level, under if / try too, not in a def or
    class). Parsed and walked once per text in this process: tests/test_imports.py reads every
    file in several tests (a parse and walk of engine/ is about 1 CPU-s)."""
    return _import_nodes(path.read_text(), str(path), top_level_only)


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The engine modules `path` imports (``from engine.x import y`` counts as
    engine.x.y when that is a module, else engine.x)."""
    out = set()
    for node in import_nodes(path):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                if sub in known:
                    out.add(sub)
                elif node.module in known:
                    out.add(node.module)
    return out


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """{module: engine modules it imports}, packages' __init__ edges left out
    when a module imports its own package (Python runs it first, no cycle)."""
    mods = modules(root)
    known = set(mods)
    g = {}
    for name, path in mods.items():
        deps = imports_of(path, known) - {name}
        g[name] = {d for d in deps if not name.startswith(d + ".")}
    return g


def package_graph(root: Path = ROOT, modules_graph: Optional[dict[str, set[str]]] = None) -> dict[str, set[str]]:
    """`graph` (`modules_graph` when given, else read from `root`) with each module folded into
    its engine package ('engine.jobs.runner' -> 'engine.jobs'; 'engine' and 'engine.__main__'
    stay): {package: packages it imports}."""
    def pkg(m: str) -> str:
        return ".".join(m.split(".")[:2])

    out: dict[str, set[str]] = {}
    for name, deps in (modules_graph if modules_graph is not None else graph(root)).items():
        out.setdefault(pkg(name), set()).update(pkg(d) for d in deps if pkg(d) != pkg(name))
    return out


def find_cycle(g: dict[str, set[str]]) -> Optional[list[str]]:
    """One import cycle as [a, b, ..., a], or None (depth-first search)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> Optional[list[str]]:
        state[n] = 1
        stack.append(n)
        for d in sorted(g.get(n, ())):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(g):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None
