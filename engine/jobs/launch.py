"""Launching: one decision between a run, one pair against a stored baseline and a
comparison of interleaved pairs, after one busy check. The Train page (views/train/launch.py)
and `python -m engine run` (engine/cli/run.py) both call `launch`; the autopilot, the demo and
the benchmark queue their own runs through engine.jobs.runner. No TF in this process.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from engine.base.errors import ConfigError
from engine.config import RunConfig, baseline_config, comparison_config


class Busy(RuntimeError):
    """The machine is measuring something else (engine.jobs.background.busy); `str(err)` is one
    line, and `run` the run queued or running then (a dict as the store gives it), if any."""

    def __init__(self, line: str, run: Optional[dict] = None):
        super().__init__(line)
        self.run = run


class SlowHere(RuntimeError):
    """The configuration trains in a precision this machine's CPU emulates (engine.config.preflight.
    slow_precision): not launched unless allowed. `str(err)` and `reason` are the one line why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Launched:
    """What `launch` queued. `what`: 'run' (cfg alone), 'pair' (a baseline run, queued or
    reused, then cfg; `baseline_id == run_id` when cfg is its own baseline) or 'comparison'
    (interleaved pairs: `comparison_id`, `kind` 'ab' or 'aa', `config` the configuration
    measured, which stops at the target)."""

    what: str
    run_id: Optional[int] = None
    baseline_id: Optional[int] = None
    reused: bool = False
    comparison_id: Optional[int] = None
    kind: Optional[str] = None
    config: Optional[RunConfig] = None
    note: Optional[str] = None  # one line, e.g. why a stored baseline of another machine was not reused


def _unknown_machine_note(baseline_id: int) -> Optional[str]:
    """The label of a reused baseline stored before machine fingerprints (only reused when
    opted in: SPEEDLAB_USE_UNKNOWN_MACHINE=1), else None."""
    from engine.hardware import fingerprint
    from engine.store import Store

    store = Store()
    try:
        env = (store.get_run(baseline_id) or {}).get("environment")
    finally:
        store.close()
    if fingerprint.of(env):
        return None
    return (f"reusing stored baseline run {baseline_id}: {fingerprint.UNKNOWN} (stored before machine fingerprints, "
            f"used as this machine's because {fingerprint.UNKNOWN_SETTING}=1)")


def launch(cfg: RunConfig, baseline: Optional[str] = None, reuse: bool = False, own_baseline: str = "run",
           all_epochs: bool = False, allow_slow: bool = False, **pairs) -> Launched:
    """Queue `cfg` and say what was queued.

    Args:
        baseline: None (cfg alone), 'default' (its float32 single-device baseline at cfg's
            own learning rate) or 'tuned' (that baseline with the stored tuned schedule and rate,
            engine.store.tuned_baselines).
        reuse: with a baseline, one pair against a baseline run already stored on this
            machine (queued fresh when there is none) instead of interleaved pairs.
        own_baseline: when cfg is its own default baseline: 'run' queues it once (the Train
            page), 'aa' measures it against itself in pairs (the CLI, an A/A comparison).
        all_epochs: a comparison's runs train every epoch instead of stopping at the target
            (engine.config.comparison_config).
        allow_slow: launch a precision this CPU emulates (engine.config.preflight.slow_precision,
            from the live CPU flags and the cached probe); without it, SlowHere.
        **pairs: engine.jobs.comparison.start's settings (pairs, max_pairs,
            target_half_width, budget_s, margin).

    Raises: SlowHere (one line) for a precision this CPU emulates unless `allow_slow`; Busy (one line) while a run, the autopilot, the quick benchmark, an LR range test
    or the transfer demo holds the machine; ConfigError for reuse with a tuned baseline or no
    stored tuned baseline; engine.jobs.runner.ActiveRunError when a run was queued in between.
    """
    from engine.config.preflight import slow_precision
    from engine.jobs import background, comparison, runner

    slow = None if allow_slow else slow_precision(cfg)
    if slow:
        raise SlowHere(slow)
    why = background.busy()
    if why:
        raise Busy(why, runner.current_run())
    if baseline not in (None, "default", "tuned"):
        raise ConfigError("baseline", baseline, "is not a baseline kind", "use default or tuned")
    if baseline == "tuned" and reuse:
        raise ConfigError("reuse_baseline", True, "cannot be used with --baseline tuned",
                          "drop --reuse-baseline: a tuned baseline is measured in fresh pairs")
    own = baseline_config(cfg) == cfg
    if baseline and not reuse and (not own or baseline == "tuned" or own_baseline == "aa"):
        kind = "aa" if own and baseline != "tuned" else "ab"
        measured = comparison_config(cfg, all_epochs=all_epochs)
        cid = comparison.start(measured, kind=kind, baseline_kind=baseline, **pairs)
        return Launched("comparison", comparison_id=cid, kind=kind, config=measured)
    if baseline:
        note = None
        if reuse:
            from engine.store import Store

            store = Store()
            try:
                note = runner.baseline_elsewhere(store, cfg)
            finally:
                store.close()
        bid, rid, reused = runner.launch_with_baseline(cfg, reuse=reuse)
        if reused:
            note = _unknown_machine_note(bid)
        return Launched("pair", run_id=rid, baseline_id=bid, reused=reused, note=note)
    (rid,) = runner.submit([cfg])
    return Launched("run", run_id=rid)
