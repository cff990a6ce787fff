"""Train page, Launch: queue the configuration as interleaved pairs with its
baseline (or one run), or say in one line what holds the machine.
"""
from __future__ import annotations

import streamlit as st

from engine.hardware import fingerprint
from engine.base import plain
from engine.config import ConfigError, RunConfig
from engine.jobs import background, runner
from engine.autopilot import search as autopilot
from engine.charts import style as chart_style
from engine.store import Store
from views.components.common import autopilot_run

PAGE_BUDGET_S = 900.0  # a comparison launched here adds no pair that would end after 15 min


def active_message(run: dict) -> str:
    return (f"Run #{run['id']} ({chart_style.run_label(run)}) is {run['status']}: one run at a time keeps "
            "measurements clean. Wait for it to finish or press Stop.")


def stored_tuned(cfg: RunConfig | None) -> dict | None:
    """The tuned baseline stored for `cfg`'s data set, model, global batch and optimizer
    (engine.store.tuned_baselines, `python -m engine tune-baseline`), or None; one indexed read."""
    from engine.store import tuned_baselines

    return None if cfg is None else tuned_baselines.lookup(cfg, fingerprint.row_here)


def tuned_help(row: dict | None) -> str:
    """The tuned-baseline toggle's help: what it compares against, or how to get one."""
    if row is None:
        return ("No tuned baseline is stored for this data set, model, global batch and optimizer. "
                "`python -m engine tune-baseline --dataset D --model M` tunes the float32 baseline's "
                "schedule, peak learning rate and label smoothing on 4 tuning seeds and stores the fastest "
                "that reaches the target on at least 3.")
    from engine.jobs.noise import age_text
    from engine.store.tuned_baselines import describe

    return (f"The pairs' baseline is the tuned one (float32, 1 device, {describe(row)}, stored "
            f"{age_text(row.get('created'))}) instead of Keras's defaults: the speedup is then what your "
            "settings add over a baseline whose schedule and learning rate were tuned.")


SLOW_CONFIRM = "Launch anyway (slow on this machine)"


def slow_line(cfg: RunConfig | None, out) -> bool:
    """Beside Launch: the one line when `cfg`'s precision is one this CPU emulates
    (engine.config.preflight.slow_precision: live CPU flags, the cached probe's slowdown) and
    the box that allows it; returns whether launching it is allowed (True when not slow)."""
    from engine.config.preflight import slow_precision

    line = None if cfg is None else slow_precision(cfg)
    if not line:
        return True
    out.warning(plain.md(line), icon=":material/speed:")
    return out.checkbox(SLOW_CONFIRM, value=False, key="allow_slow")


def launch(cfg: RunConfig, with_baseline: bool, out, reuse: bool = False, baseline_kind: str = "default",
           allow_slow: bool = False) -> None:
    """Queue `cfg` through engine.jobs.launch.launch (the one launch decision, shared with
    `python -m engine run`): a comparison of interleaved pairs with its baseline
    (`baseline_kind` 'tuned': the stored tuned baseline; each run stops at the target; no
    pair that would end after PAGE_BUDGET_S), one pair against a stored baseline (`reuse`),
    or `cfg` alone; write one line to `out`, or why the machine is busy."""
    from engine.jobs.launch import Busy, SlowHere
    from engine.jobs.launch import launch as queue

    try:
        done = queue(cfg, baseline=baseline_kind if with_baseline else None, reuse=reuse, own_baseline="run",
                     budget_s=PAGE_BUDGET_S, allow_slow=allow_slow)
    except SlowHere as e:  # the second click: tick the box beside Launch
        out.warning(f"Not launched: {plain.md(e.reason)}. Tick **{SLOW_CONFIRM}** beside Launch to launch it.",
                    icon=":material/speed:")
        return
    except Busy as e:  # another run, the autopilot, a benchmark, an LR range test or the demo
        own = e.run is not None and not autopilot_run(e.run)  # a run of this page's: name it
        out.warning(active_message(e.run) if own else f"Not launched: {e}", icon=":material/hourglass_top:")
        return
    except runner.ActiveRunError as e:  # another tab launched in between
        out.warning(active_message(e.run), icon=":material/hourglass_top:")
        return
    except ConfigError as e:
        out.error(plain.md(str(e)))
        return
    except Exception as e:  # noqa: BLE001
        out.error(f"Could not launch: {type(e).__name__}: {plain.md(str(e))}")
        return
    bid, rid = done.baseline_id, done.run_id
    if done.note:  # e.g. a stored baseline of another machine, not reused
        out.info(plain.md(done.note), icon=":material/fingerprint:")
    if done.what == "comparison":
        from engine.store import comparisons as cstore

        with Store() as store:
            plan = cstore.get(store, done.comparison_id)["plan"]
        bid, rid = plan[0]["baseline_id"], plan[0]["run_id"]
        msg = (f"Queued comparison #{done.comparison_id}: up to {len(plan)} interleaved pairs of "
               + ("the tuned baseline" if baseline_kind == "tuned" else "baseline") + " and run "
               f"(first: baseline #{bid}, run #{rid}), until the 95% interval is within ±10% "
               f"or {PAGE_BUDGET_S / 60:.0f} min"
               + ("; each run stops at the target accuracy" if done.config.stop_at_target else ""))
    elif done.what == "pair" and bid == rid:
        msg = f"Queued run #{rid}: it is its own baseline (float32, 1 device, no options on)"
    elif done.what == "pair" and done.reused:
        msg = f"Reusing stored baseline #{bid} (as asked); queued run #{rid}: one pair, no interval"
    elif done.what == "pair":
        msg = f"Queued baseline #{bid}, then run #{rid}"
    else:
        msg = f"Queued run #{rid} (no baseline)"
    # Shown by the live view while one of the launched runs is still queued, then gone.
    st.session_state["launched"] = {"msg": msg, "ids": [rid] if not with_baseline else [bid, rid]}


def machine_busy() -> str | None:
    """One line while another job holds the machine (the autopilot, the quick benchmark, an
    LR range test, the transfer demo), else None; the Train page's own runs show below it."""
    p = autopilot.read_progress()
    if p and p["state"] in background.ACTIVE_STATES:
        return (f"The autopilot is searching ({p.get('elapsed', 0):.0f} s so far): its runs show on the "
                "**Autopilot** page, and Launch waits until it ends (or stop it there).")
    line = background.busy()
    if line and not line.startswith("run #"):  # said before Launch is pressed, not only after
        return f"Launch waits: {line}."
    return None
