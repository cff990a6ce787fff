"""Page-test helpers: runs stored as the worker stores them (no training), the app under
AppTest, and readers for what a page drew (texts, Plotly specs)."""
from __future__ import annotations

import base64
import json
import math
import os
import time
from pathlib import Path

import numpy as np

from streamlit.testing.v1 import AppTest

from engine.config import RunConfig
from engine.report.measure import steady_state
from engine.store import SYSTEM_COLS, Store
from tests.helpers.apptest import app_test


ROOT = Path(__file__).resolve().parents[1]


def fake_run(store: Store, cfg: RunConfig, role="run", group="g1", rate=10_000.0, n_exec=None,
             status="completed", simulated=False, ttt=None, wait=None, val_acc=None) -> int:
    """Store a run as the worker would (plan, metrics, summary), without training.

    One execution per step; the first is a 1 s warm-up; `rate` in samples/s;
    `wait`: share of each execution spent waiting for data (None: not measured,
    as multi-worker runs store it); `val_acc`: validation accuracy per epoch.
    """
    rid = store.create_run(cfg.to_json(), role=role, group_id=group,
                           status="running" if status != "queued" else "queued")
    if status == "queued":
        return rid
    spe = cfg.steps_per_epoch()
    total = spe * cfg.epochs
    n = n_exec or total
    plan = {"steps_per_epoch": spe, "total_steps": max(total, n), "epochs": cfg.epochs,
            "replicas": cfg.devices, "replicas_simulated": simulated,
            "per_replica_batch_size": cfg.per_replica_batch_size, "device_kind": "CPU"}
    store.update_run(rid, plan=plan, environment={"hostname": os.uname().nodename})
    bs, t, rows, durs = cfg.batch_size, 0.0, [], []
    for i in range(n):
        d = 1.0 if i == 0 else bs / rate * (1.0, 0.95, 1.05)[i % 3]  # noisy, median exact
        t += d
        durs.append(d)
        rows.append((i, i * cfg.epochs // n, i + 1, 1, t, d, bs / d, 2.3 * math.exp(-3 * i / n),
                     cfg.learning_rate, int(i == 0), None if wait is None else wait * d))
    accs = val_acc or [0.6 + 0.1 * e for e in range(cfg.epochs)]
    ep = [(e, t * (e + 1) / cfg.epochs, (e + 1) * n // cfg.epochs, 1.0 / (e + 1), 0.5 + 0.1 * e,
           0.9 / (e + 1), accs[e], cfg.learning_rate) for e in range(cfg.epochs)]
    sample = {"cpu_percent": 95.0, "rss_mb": 800.0, "mem_percent": 20.0, "worker": 0}
    sysrows = [tuple({**sample, "t": float(s)}.get(c) for c in SYSTEM_COLS) for s in range(int(t) + 2)]
    store.add_metrics(rid, rows, ep, sysrows)
    summary = {**steady_state(durs, [1] * n, bs), "wall_sec": t, "replicas": cfg.devices,
               "replicas_simulated": simulated, "final_val_accuracy": accs[-1],
               "time_to_target_sec": ttt, "warnings": []}
    if status == "running":
        store.update_run(rid, summary=summary, pid=os.getpid(), pid_started=own_start_time())
    else:
        store.finish_run(rid, status, None if status == "completed" else "cancelled by the user",
                         summary=summary)
    return rid


def own_start_time() -> float:
    import psutil

    return psutil.Process().create_time()


def finished_pair(store: Store, n_exec=None) -> tuple[int, int]:
    """A baseline and a mixed_bfloat16 2-device (simulated) run, 1.5x faster."""
    cfg = RunConfig(epochs=3, precision="mixed_bfloat16", devices=2, target_accuracy=0.7)
    base = RunConfig(epochs=3, target_accuracy=0.7)
    b = fake_run(store, base, "baseline", rate=8000.0, n_exec=n_exec, ttt=2.0)
    r = fake_run(store, cfg, "run", rate=12_000.0, n_exec=n_exec, simulated=True, ttt=1.0)
    return b, r


def two_pair_comparison(store: Store, group: str, first_run: str) -> tuple[int, list[int]]:
    """A running comparison of 2 planned pairs (AB, BA; target 0.7) as the queue stores it:
    pair 1's baseline completed (10,000 samples/s) and its run `first_run` ('running': this
    process stands in for its worker; 'completed'; or 'queued'), at 20,000 samples/s; pair 2
    queued; no result counted yet. Returns (comparison id, [b0, r0, b1, r1])."""
    from engine.store import comparisons as cstore

    base = RunConfig(epochs=3, target_accuracy=0.7)
    run = RunConfig(epochs=3, target_accuracy=0.7, precision="mixed_bfloat16")
    b0 = fake_run(store, base, "baseline", group=group)
    r0 = fake_run(store, run, "run", group=group, status=first_run, rate=20_000.0)
    r1 = fake_run(store, run, "run", group=group, status="queued")
    b1 = fake_run(store, base, "baseline", group=group, status="queued")
    for rid in (b0, r0) if first_run != "queued" else (b0,):  # as the queue does when it starts them
        store.update_run(rid, started=time.time() - 30)
    plan = [{"pair": 0, "seed": 0, "order": "AB", "baseline_id": b0, "run_id": r0},
            {"pair": 1, "seed": 1, "order": "BA", "baseline_id": b1, "run_id": r1}]
    cid = cstore.create(store, "ab", group, {"pairs": 2, "max_pairs": 2, "target_half_width": 0.1,
                                             "budget_s": None, "min_pairs": 2}, plan, os.uname().nodename)
    return cid, [b0, r0, b1, r1]


def app(page: str | None = None) -> AppTest:
    at = app_test()
    if page:
        at.switch_page(page)
    return at.run()


def plotly_specs(at: AppTest) -> dict[str, dict]:
    """{widget key: figure JSON} of every Plotly chart on the page."""
    out = {}
    for el in at.get("plotly_chart"):
        key = el.proto.id.rsplit("-", 1)[-1]
        out[key] = json.loads(el.proto.spec)
    return out


def values(v) -> list:
    """A trace's data array: Plotly sends NumPy arrays as base64 typed arrays."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v or [])


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def no_errors(at: AppTest) -> None:
    """No exception, and no section caught one (pages show those as '<what> failed: ...')."""
    assert not at.exception, [e.value for e in at.exception]
    caught = [e.value for e in at.error if " failed: " in e.value]
    assert not caught, caught


def lr_sweep(n=80, suggested=3e-3) -> dict:
    """An LR range test result as engine.lr_find.range_test.run saves it."""
    from engine.lr_find import range_test as lr_find

    lrs = [1e-6 * (1e6 ** (i / 99)) for i in range(n)]
    loss = [2.3 - 1.8 / (1 + math.exp(-(math.log10(x) + 3) * 3)) for x in lrs]
    res = {"lr": lrs, "loss": loss, "smoothed": loss, "stopped": "diverged", "config": RunConfig().to_dict(),
           "suggestion": lr_find.suggest(lrs, loss), "created": 2e9}
    res["suggestion"]["suggested"] = suggested
    lr_find.save(res)
    return res


def npz_bytes(**arrays) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def registry(store_home: Path) -> list[str]:
    """Everything under the registry folder, hidden temporary folders included."""
    d = store_home / "datasets"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def demo_pair(store: Store) -> tuple[int, int, int]:
    """The stored outcome of `python -m engine demo-transfer`, written directly:
    pretraining (digits 0-4), then fine-tuned and from-scratch runs on 5-9."""
    from engine.jobs import demo as transfer

    cfgs = transfer.demo_configs(epochs=4, pretrain_epochs=3)
    pid = fake_run(store, cfgs["pretrain"], group="pre")
    fid = fake_run(store, cfgs["finetune"].replace(init_from=pid), group="demo", ttt=3.36,
                   val_acc=[0.29, 0.9, 0.96, 0.978], wait=0.02)
    sid = fake_run(store, cfgs["scratch"], group="demo", ttt=1.75, val_acc=[0.85, 0.96, 0.98, 0.994], wait=0.02)
    return pid, fid, sid


def charts_mod():
    from engine.charts import style as chart_style

    return chart_style
