"""The layer rules of docs/architecture.md, the one list of what may import what.

engine/ has no import cycles; each engine layer imports only the layers its rule allows
(every import counts, also a lazy one inside a function); engine/ never imports Streamlit;
app.py and views/ never import TensorFlow, Keras or JAX, nor any engine module that
imports one of them at import time, nor the worker side (engine.training, the worker
entry points); no page imports another page: what pages share is in views/components/,
which imports no page.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tests.helpers.imports import find_cycle, graph, import_nodes, modules, package_graph

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ("tensorflow", "keras", "jax", "jaxlib")

# docs/architecture.md, "Layer rules": layer -> the layers it may import (its own always).
BASE, STORE = ("engine.base",), ("engine.store",)
DATA, HARDWARE, CONFIG, REPORT = ("engine.data",), ("engine.hardware",), ("engine.config",), ("engine.report",)
BUNDLE, TRAINING, JOBS, CLI = ("engine.bundle",), ("engine.training",), ("engine.jobs",), ("engine.cli",)
CHARTS = ("engine.charts",)  # Plotly figures: the pages and the autopilot's charts, never a worker
# Features: a package each, on top of the jobs; the autopilot uses the LR range test.
LR_FIND, BENCH, AUTOPILOT = ("engine.lr_find",), ("engine.bench",), ("engine.autopilot",)
FEATURES = LR_FIND + BENCH + AUTOPILOT
BELOW_REPORT = BASE + STORE + DATA + HARDWARE + CONFIG
BELOW_FEATURES = BELOW_REPORT + REPORT + CHARTS + BUNDLE + TRAINING + JOBS
RULES: dict[tuple[str, ...], tuple[str, ...]] = {
    BASE: (),
    STORE: BASE,
    DATA: BASE + STORE,
    HARDWARE: BASE + STORE,
    CONFIG: BASE + STORE + DATA + HARDWARE,
    REPORT: BELOW_REPORT,
    CHARTS: BELOW_REPORT + REPORT,
    BUNDLE: BELOW_REPORT + REPORT,
    TRAINING: BELOW_REPORT + REPORT,
    JOBS: BELOW_REPORT + REPORT + BUNDLE + TRAINING,
    LR_FIND: BELOW_FEATURES,
    BENCH: BELOW_FEATURES,
    AUTOPILOT: BELOW_FEATURES + LR_FIND,
    CLI: BELOW_FEATURES + FEATURES,
    ("engine",): BASE + CONFIG,  # the package's __init__
    ("engine.__main__",): CLI,
}
# Worker-side engine modules the UI process must never import, even lazily.
WORKER_SIDE = ("engine.training", "engine.jobs.worker", "engine.bench.worker", "engine.lr_find.worker")
# What more than one page draws: no page there, and it imports no page.
SHARED = "views.components"


# The engine's import graph, read once per test process: several tests below walk it (each file's
# imports are read once too: tests.helpers.imports.import_nodes).
_graph = functools.cache(graph)


def _in(mod: str, prefixes) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in prefixes)


def _layer(mod: str):
    found = [layer for layer in RULES if _in(mod, layer)]
    return max(found, key=lambda layer: max(len(p) for p in layer if _in(mod, (p,)))) if found else None


def test_no_import_cycles():
    cycle = find_cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_package_imports_a_package_that_imports_it_back():
    """Modules of one package may import each other; across packages the arrows go one way
    (engine.jobs -> engine.bundle, never back through another package)."""
    cycle = find_cycle(package_graph(modules_graph=_graph()))
    assert cycle is None, "package loop: " + " -> ".join(cycle)


def test_find_cycle_lists_a_planted_cycle(tmp_path: Path):
    pkg = tmp_path / "engine"
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "data" / "__init__.py").write_text("")
    (pkg / "config.py").write_text("def check():\n    from engine.data import meta\n")
    (pkg / "data" / "meta.py").write_text("from engine.errors import E\n")
    (pkg / "errors.py").write_text("from engine.config import check\n")
    assert find_cycle(graph(pkg)) == ["engine.config", "engine.data.meta", "engine.errors", "engine.config"]
    (pkg / "errors.py").write_text("class E(Exception):\n    pass\n")
    assert find_cycle(graph(pkg)) is None
    # No module cycle, but a package loop: engine.data.meta -> engine.config -> engine.data.
    (pkg / "data" / "meta.py").write_text("def f():\n    from engine.config import check\n")
    (pkg / "config.py").write_text("def check():\n    from engine.data import info\n")
    (pkg / "data" / "info.py").write_text("")
    assert find_cycle(graph(pkg)) is None
    assert find_cycle(package_graph(pkg)) == ["engine.config", "engine.data", "engine.config"]


def test_every_engine_module_has_a_layer_and_imports_only_what_its_layer_may():
    bad = []
    for mod, deps in _graph().items():
        layer = _layer(mod)
        if layer is None:
            bad.append(f"{mod} is in no layer: add it to docs/architecture.md and RULES in tests/test_imports.py")
            continue
        allowed = RULES[layer] + layer
        bad += [f"{mod} imports {d} (layer {layer[0]} may import {', '.join(RULES[layer]) or 'nothing'})"
                for d in deps if not _in(d, allowed)]
    assert not bad, "\n".join(sorted(set(bad)))


def _imports(path: Path, top_level_only: bool) -> set[str]:
    """Every module name `path` imports (absolute imports; `from a import b` gives a and a.b)."""
    out = set()
    for node in import_nodes(path, top_level_only):  # top level: module level, under if / try too
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def _framework_at_import() -> dict[str, str]:
    """Engine modules that import a framework when imported: {module: the chain that does it}."""
    mods = modules()
    top = {name: _imports(path, top_level_only=True) for name, path in mods.items()}
    found: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for name, deps in top.items():
            if name in found:
                continue
            # importing a.b.c runs a/__init__ and a.b/__init__ too
            parents = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
            for d in sorted(deps | parents):
                if d.split(".")[0] in FRAMEWORKS:
                    found[name], changed = d, True
                    break
                if d in found and d != name:
                    found[name], changed = f"{d} -> {found[d]}", True
                    break
    return found


def test_engine_never_imports_streamlit():
    bad = [f"{name} imports {d}" for name, path in modules().items()
           for d in _imports(path, top_level_only=False) if d.split(".")[0] == "streamlit"]
    assert not bad, "\n".join(sorted(bad))


def test_the_ui_never_imports_a_framework_nor_the_worker_side():
    heavy = _framework_at_import()
    assert "engine.training.models" in heavy  # the check sees a module that imports keras at import time
    bad = []
    for path in [ROOT / "app.py", *_view_files()]:
        for d in sorted(_imports(path, top_level_only=False)):
            where = path.relative_to(ROOT)
            if d.split(".")[0] in FRAMEWORKS:
                bad.append(f"{where} imports {d}")
            elif _in(d, WORKER_SIDE):
                bad.append(f"{where} imports the worker side ({d})")
            elif d in heavy:
                bad.append(f"{where} imports {d}, which imports a framework at import time ({heavy[d]})")
    assert not bad, "\n".join(bad)


def _view_files() -> list[Path]:
    return sorted((ROOT / "views").rglob("*.py"))


def _view_module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _page_of(mod: str) -> str | None:
    """The page a views module belongs to (views.train.live -> views.train), None for shared code."""
    parts = mod.split(".")
    if len(parts) < 2 or parts[0] != "views" or _in(mod, (SHARED,)):
        return None
    return ".".join(parts[:2])


def test_no_view_imports_another_view():
    pages = {_page_of(_view_module(p)) for p in _view_files()} - {None}
    assert {"views.train", "views.runs", "views.replay"} <= pages  # the check sees the pages
    bad = []
    for p in _view_files():
        me = _view_module(p)
        for d in _imports(p, top_level_only=False):
            if _in(d, ("views",)) and _page_of(d) in pages and _page_of(d) != _page_of(me):
                bad.append(f"{me} imports {d}: " + ("shared code imports a page" if _page_of(me) is None
                                                     else "a page imports another page; move what they share to views/components/"))
    assert not bad, "\n".join(sorted(bad))


def test_no_view_module_is_over_450_lines():
    """Pages stay thin (docs/architecture.md, "The pages"): a page that grows gets a package."""
    long = {str(p.relative_to(ROOT)): n for p in _view_files() if (n := len(p.read_text().splitlines())) > 450}
    assert not long, long


def test_no_test_file_is_over_600_lines():
    """Tests are laid out like the code (docs/testing.md): a test file that grows is split by
    the module or page it tests, and what several files share goes to tests/helpers/."""
    tests = ROOT / "tests"
    assert (tests / "helpers" / "pages.py").exists()
    long = {p.name: n for p in tests.glob("test_*.py") if (n := len(p.read_text().splitlines())) > 600}
    assert not long, long


# The layer rules' own test keeps the name docs/architecture.md and the developers' guide give it;
# the session guard is the test suite's own (tests/helpers/session_guard.py).
TEST_NAMES_OF_NO_MODULE = {"imports", "session_guard"}


def test_every_test_file_is_named_after_a_module_or_package_it_tests():
    """test_<name>.py or test_<name>_<aspect>.py, where <name> is a module or package of engine/
    or views/, or app (app.py): a newcomer finds the tests of engine/store/doctor.py by name.
    A module and a test that share nothing fail here: rename the test after what it tests."""
    code = [p for p in (ROOT / "engine").rglob("*.py")] + _view_files()
    names = {"app"} | {p.stem.rstrip("_") for p in code} | {p.parent.name for p in code}
    names.discard("__init")
    stray = sorted(stem for p in (ROOT / "tests").glob("test_*.py")
                   if (stem := p.stem[len("test_"):]) not in TEST_NAMES_OF_NO_MODULE
                   and not any(stem == n or stem.startswith(n + "_") for n in names))
    assert not stray, f"test files named after no module of engine/, views/ or app.py: {stray}"
