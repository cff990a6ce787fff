"""The recorded mnist5k comparison that ships for Replay (no TF here).

A baseline (RunConfig's defaults on mnist5k) and the hand-made preset
(engine.config.presets), measured as a comparison of interleaved pairs on one machine to the
data set's default target and exported with the comparison as a run bundle
(engine.bundle) to RECORDED_BUNDLE. The Replay page plays it with one click at any
time, so a talk can show a half-minute run, and its interval, on a machine that trains
nothing on stage.

Record it again with ``python -m engine.jobs.recorded_demo [PATH]`` (5 pairs, about
3 min on a 2-core CPU); docs/datasets.md gives the figures of the shipped one.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Optional

from engine.store import Store

RECORDED_BUNDLE = Path(__file__).with_name("recorded") / "mnist5k-baseline-vs-preset.zip"


def configs(seed: int = 0) -> tuple:
    """(baseline, preset) RunConfigs of the recording: the preset (engine.config.presets) and
    its like-for-like baseline (engine.config.baseline_config: RunConfig's defaults on
    mnist5k), both measured to the default target (engine.data.meta.DEFAULT_TARGETS)."""
    from engine.config import baseline_config
    from engine.config.presets import preset

    made = preset("mnist5k", seed=seed)
    return baseline_config(made), made


def record(dest: os.PathLike = RECORDED_BUNDLE, seed: int = 0, pairs: int = 5, timeout_s: float = 900) -> dict:
    """Run the preset against its baseline as a comparison of `pairs` interleaved pairs
    (engine.jobs.comparison; each run ends at the target: engine.config.comparison_config) in a
    fresh store (a temporary SPEEDLAB_HOME) and export every run, with the comparison, to
    `dest`: Replay then shows the comparison's interval, not one pair. Returns the manifest.

    Raises: RuntimeError when the comparison does not complete every pair; bundle errors as theirs.
    """
    from engine import bundle
    from engine.config import comparison_config
    from engine.jobs import comparison

    _, made = configs(seed)
    old = os.environ.get("SPEEDLAB_HOME")
    os.environ["SPEEDLAB_HOME"] = tempfile.mkdtemp(prefix="speedlab-recorded-")
    try:
        cid = comparison.start(comparison_config(made), pairs=pairs)
        comp = comparison.wait(cid, timeout_s=timeout_s)
        done = (comp.get("result") or {}).get("pairs", 0)
        if comp["status"] != "completed" or done < pairs:
            raise RuntimeError(f"comparison {cid} ended {comp['status']} with {done} of {pairs} pairs complete")
        ids = [p[k] for p in comp["plan"] for k in ("baseline_id", "run_id")]
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        store = Store()
        try:
            return bundle.export_runs(store, ids, dest)
        finally:
            store.close()
    finally:
        if old is None:
            os.environ.pop("SPEEDLAB_HOME", None)
        else:
            os.environ["SPEEDLAB_HOME"] = old


def import_recorded(store: Store, src: Optional[os.PathLike] = None) -> list[tuple[int, int]]:
    """Import the shipped recording into `store` (engine.bundle.import_bundle).
    Returns [(original id, new id)]. Raises: engine.bundle.BundleError (one line:
    already imported, or the file is missing or broken)."""
    from engine import bundle

    src = Path(src or RECORDED_BUNDLE)
    if not src.is_file():
        raise bundle.BundleError(f"{src} is missing; record it with python -m engine.jobs.recorded_demo")
    return bundle.import_bundle(store, src)


def recorded_ids(store: Store, src: Optional[os.PathLike] = None) -> list[int]:
    """Ids in `store` of the runs imported from the shipped recording (their origin names its
    bundle file), oldest first; [] when it was not imported."""
    name = Path(src or RECORDED_BUNDLE).name
    return sorted(r["id"] for r in store.list_runs() if (r.get("origin") or {}).get("bundle") == name)


def open_recorded(store: Store, src: Optional[os.PathLike] = None) -> tuple[int, int]:
    """(baseline id, run id) here of the recording's pair to replay: its comparison's last
    complete pair (or its baseline and run), imported first unless it is already in `store`,
    so that one click plays it at any time. Raises: engine.bundle.BundleError as
    `import_recorded`, or when the bundle holds no pair."""
    from engine import bundle
    from engine.store import comparisons as cstore
    from engine.report import replay

    ids = recorded_ids(store, src)
    if not ids:
        import_recorded(store, src)
        ids = recorded_ids(store, src)
    runs = [store.get_run(i) for i in ids]
    groups = {r["group_id"] for r in runs if r.get("group_id")}
    comps = [c for c in (cstore.by_group(store, g) for g in groups) if c]
    pair = replay.comparison_pair(comps, runs) or replay.default_pair(sorted(runs, key=lambda r: -r["id"]))
    if pair is None:
        raise bundle.BundleError(f"{Path(src or RECORDED_BUNDLE).name} holds no baseline and run to replay")
    return pair


if __name__ == "__main__":
    m = record(Path(sys.argv[1]) if len(sys.argv) > 1 else RECORDED_BUNDLE)
    print(f"recorded runs {m['runs']} to {sys.argv[1] if len(sys.argv) > 1 else RECORDED_BUNDLE}")
