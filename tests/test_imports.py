"""engine/'s layers: no import cycles, and lower stages never import higher ones."""
from pathlib import Path

from engine.imports import find_cycle, graph

# Stage -> the stages it must never import (README "Architecture").
FORBIDDEN = {
    "engine.data": ("engine.training", "engine.jobs", "engine.report", "engine.cli", "engine.hardware"),
    "engine.training": ("engine.jobs", "engine.cli"),
    "engine.report": ("engine.training", "engine.jobs", "engine.cli"),
    "engine.hardware": ("engine.training", "engine.jobs", "engine.report", "engine.cli", "engine.data"),
    "engine.jobs": ("engine.cli",),
    "engine.config": ("engine.training", "engine.jobs", "engine.report", "engine.cli"),
    "engine.store": ("engine.config", "engine.data", "engine.training", "engine.jobs", "engine.report",
                     "engine.cli", "engine.hardware"),
}


def test_no_import_cycles():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


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


def test_layers():
    bad = []
    for mod, deps in graph().items():
        for stage, never in FORBIDDEN.items():
            if mod == stage or mod.startswith(stage + "."):
                bad += [f"{mod} imports {d}" for d in deps for n in never if d == n or d.startswith(n + ".")]
        bad += [f"{mod} imports the CLI ({d})" for d in deps
                if d.startswith("engine.cli") and not mod.startswith("engine.cli") and mod != "engine.__main__"]
    assert not bad, "\n".join(sorted(set(bad)))
