"""What the commands print: strict JSON (`print_json`), numbers (`fmt`), a run's summary
rows (`result_json`, `print_summary`, `mfu_rows`), speedups and where the time went
(`speedup_rows`, `time_table`), the one line for an unknown run (`get_run`) and for a busy
machine (`refuse_if_busy`)."""
from __future__ import annotations

import sys
from typing import Optional

from engine.report.headline import MISSING, ratio_text


def print_json(obj, **kw) -> None:
    """Print `obj` as strict JSON (engine.base.jsonsafe: non-finite numbers as null, named
    in 'non_finite'): the one way every --json output is written."""
    from engine.base.jsonsafe import dumps

    print(dumps(obj, **kw))


def fmt(v, digits=4):
    """A number for the terminal: thousands separators, 4 significant digits, '-' for missing."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}g}" if abs(v) < 1e4 else f"{v:,.0f}"
    return str(v)


def result_json(run: dict) -> dict:
    """The final JSON line of `run`: the summary plus id, status and error."""
    s = dict(run.get("summary") or {})
    s.update(run_id=run["id"], status=run["status"], error=run.get("error"))
    for key in ("samples_per_sec", "warmup_sec", "wall_sec", "replicas", "replicas_simulated",
                "final_loss", "final_val_accuracy"):
        s.setdefault(key, None)
    cfg = run["config"]
    s.setdefault("precision", cfg["precision"])
    s.setdefault("steps_per_execution", cfg["steps_per_execution"])
    s.setdefault("jit_compile", cfg["jit_compile"])
    # A run stopped before its summary (a JAX trial killed while compiling) read "tensorflow".
    s.setdefault("backend", cfg.get("backend") or "tensorflow")
    s.setdefault("techniques", techniques_line(cfg))
    s.setdefault("effective_batch_size", cfg.get("batch_size", 0) * (cfg.get("gradient_accumulation_steps") or 1))
    from engine.report.bound_by import bound_by
    from engine.report.mfu import MFU_KEYS

    for key in MFU_KEYS:
        s.setdefault(key, None)
    verdict = bound_by(s) if run["status"] in ("completed", "cancelled", "failed") else None
    s["bound_by"] = verdict["line"] if verdict else None
    s["bound_by_kind"] = verdict["kind"] if verdict else None
    return s


def techniques_line(cfg: dict) -> Optional[str]:
    """The record-setting techniques a stored config uses (engine.training.techniques), one
    line, e.g. 'Muon (conv filters reshaped to 2-D) · weight EMA 0.99'; None when none."""
    from engine.config import words

    return " · ".join(words.techniques(cfg, long=True)) or None


def print_summary(s: dict) -> None:
    """Print a run's summary (result_json plus optional 'comparison') as aligned rows."""
    from engine.report.target import missed_text

    rows = [
        ("run", s["run_id"]),
        ("status", s["status"] + (f" ({s['metrics_incomplete']:,} metric rows lost: metrics incomplete)"
                                  if s.get("metrics_incomplete") else "")),
        ("steady throughput", f"{fmt(s.get('samples_per_sec'))} samples/s (median per execution)"),
        ("warm-up", f"{fmt(s.get('warmup_sec'))} s (traced executions: tracing, compilation)"),
        ("wall time", f"{fmt(s.get('wall_sec'))} s"),
        *mfu_rows(s),
        ("backend", s.get("backend") or "tensorflow"),
        ("replicas", fmt(s.get("replicas")) + (" (simulated logical devices)" if s.get("replicas_simulated") else "")),
        # compute/variable dtypes come from the worker's setup: absent for a run stopped before it
        ("precision", f"{s.get('precision')}" + (f" (compute {s['compute_dtype']}, variables {s.get('variable_dtype')})"
                                                 if s.get("compute_dtype") else "")
         + (f", loss scale {s['loss_scale']:g}" if s.get("loss_scale") else "")),
        *([("optimizer update", "fused: one TensorFlow kernel per variable")] if s.get("fused_optimizer") else []),
        *([("techniques", s["techniques"])] if s.get("techniques") else []),
        ("final loss", fmt(s.get("final_loss"))),
        *([("updates", f"{s['updates_applied']:,} applied, {s['skipped_updates']:,} skipped of {s.get('steps'):,} "
                       "batches (non-finite gradients under float16 loss scaling)")]
          if s.get("skipped_updates") else []),
        ("final val accuracy", fmt(s.get("final_val_accuracy"))),
        # The held-out test set: nothing stops, selects or tunes on it (docs/comparisons.md).
        ("test accuracy", f"{fmt(s['test_accuracy'])} on "
                          + (f"{s['test_samples']:,} held-out samples" if s.get("test_samples") else "held-out data")
                          + ", with the weights it stopped with" if s.get("test_accuracy") is not None
         else f"- ({s['test_note']})" if s.get("test_note") else "-"),
    ]
    target = s.get("target_accuracy")
    if target is not None:
        tta = s.get("time_to_target_sec")
        rows.append((f"time to {target:g} val acc",
                     f"{tta:.2f} s from the start of training" if tta is not None
                     else missed_text(s.get("status"), s.get("epochs_run") or 0)))
    if s.get("end_to_end_samples_per_sec") is not None:
        rows.insert(3, ("end-to-end samples/s", f"{fmt(s['end_to_end_samples_per_sec'])} "
                                                "(training samples / wall time of training)"))
    if s.get("model_path"):
        rows.append(("saved model", f"{s['model_path']} (load it: import engine.training.saved, "
                                    "then keras.models.load_model(path))"))
    if s.get("comparison"):
        rows += speedup_rows(s["comparison"])
    if s.get("backend_comparison"):
        c = s["backend_comparison"]
        tta = c.get("time_to_accuracy_speedup")
        rows.append(("backend speedup", f"{c['backend']} vs {c['other_backend']} (run {c['baseline_id']}, same "
                                        f"configuration): {ratio_text(c.get('steady_speedup'))} steady, "
                                        f"{ratio_text(c.get('end_to_end_speedup'))} end-to-end"
                                        + (f", {ratio_text(tta)} time to accuracy" if tta else "")))
    if s.get("error"):
        rows.append(("error", s["error"]))
    width = max([20, *(len(k) for k, _ in rows)])  # e.g. "time to 0.995 val acc" is 21
    for k, v in rows:
        print(f"{k:>{width}}  {v}")


def mfu_rows(s: dict) -> list[tuple[str, str]]:
    """'model FLOPs', 'MFU' and 'bound by' rows of a summary with engine.report.mfu's fields."""
    from engine.hardware.peaks import flops_text
    from engine.report.mfu import mfu_line

    rows = []
    if s.get("flops_per_sample"):
        rows.append(("model FLOPs", f"{s['flops_per_sample']:,} per training sample (forward + the gradients "
                                    "a step computes, matmuls only)"
                                    + (f"; {flops_text(s['model_flops_per_sec'])} at the steady rate"
                                       if s.get("model_flops_per_sec") else "")
                                    + ("; XLA's count of the step" if s.get("flops_source") == "xla" else "")))
    if s.get("flops_uncounted"):
        names = ", ".join(map(str, s["flops_uncounted"][:12])) + (" ..." if len(s["flops_uncounted"]) > 12 else "")
        rows.append(("not counted", f"layers with weights the FLOP counter does not know: {names}"
                                    + ("" if s.get("flops_source") == "xla" else " (MFU is a lower bound)")))
    if s.get("flops_per_sample") and s.get("flops_xla_per_sample"):  # a user's model, held against XLA
        rows.append(("FLOPs check", f"{s['flops_per_sample'] / s['flops_xla_per_sample'] - 1:+.1%} from XLA's count "
                                    f"of the step ({s['flops_xla_per_sample']:,})"))
    elif s.get("flops_per_sample") and s.get("flops_note"):
        rows.append(("FLOPs check", s["flops_note"]))
    line = mfu_line(s)
    if s.get("flops_note") and not s.get("flops_per_sample"):
        rows.append(("MFU", f"- ({s['flops_note']})"))
    elif line:
        rows += [("MFU", line), ("peak", s.get("peak_source"))]
    elif s.get("peak_source") and s.get("flops_per_sample"):
        rows.append(("MFU", f"- ({s['peak_source']})"))
    if s.get("bound_by"):
        rows.append(("bound by", s["bound_by"].removeprefix("Bound by ")))
    return rows


def get_run(store, run_id: int) -> Optional[dict]:
    """The run, or None after printing the one-line error for an unknown or trashed id."""
    run = store.get_run(run_id)  # a damaged row raises DamagedRunError: one line, exit 2 (main)
    if run is None:
        print(f"error: run_id: {run_id} does not exist; see python -m engine runs", file=sys.stderr)
    elif run.get("trashed"):
        print(f"error: run_id: {run_id} is in the trash; restore it with python -m engine trash --restore {run_id}",
              file=sys.stderr)
        return None
    return run


def refuse_if_busy(skip: tuple = ()) -> Optional[str]:
    """The one refusal of a command that would measure on a busy machine (a run queued or
    running, a background job: engine.jobs.background.busy, which `skip`s the caller's own job
    files). Prints 'error: not started: <why>' on stderr and returns 'not started: <why>' (the
    caller exits 2); None when the machine is free."""
    from engine.jobs import background

    why = background.busy(skip=skip)
    if not why:
        return None
    print(f"error: not started: {why}", file=sys.stderr)
    return f"not started: {why}"


def speedup_rows(c: dict) -> list[tuple[str, str]]:
    """The three speedups of an engine.report.pair.compare() result as (name, text) rows."""
    target = c.get("target_accuracy")
    if c.get("time_to_accuracy_speedup") is not None:
        tta = (f"{ratio_text(c['time_to_accuracy_speedup'])}  ({c['baseline_time_to_accuracy_sec']:.2f} s -> "
               f"{c['time_to_accuracy_sec']:.2f} s to {target:g} val accuracy)")
    elif target is None:
        tta = "no target accuracy (set --target-accuracy)"
    else:
        notes = [f"baseline {c['baseline_time_to_accuracy_note']}" if c.get("baseline_time_to_accuracy_note") else None,
                 f"run {c['time_to_accuracy_note']}" if c.get("time_to_accuracy_note") else None]
        tta = f"{MISSING}  (" + "; ".join(n for n in notes if n) + f"; target {target:g} val accuracy)"
    rows = [
        ("time to accuracy", tta),
        ("end-to-end", f"{ratio_text(c.get('end_to_end_speedup'))}  (training samples / wall time of training: "
                       f"{fmt(c.get('baseline_end_to_end_samples_per_sec'))} -> {fmt(c.get('end_to_end_samples_per_sec'))} samples/s)"),
        ("steady", f"{ratio_text(c.get('steady_speedup'))}  (median samples/s per execution after warm-up: "
                   f"{fmt(c.get('baseline_samples_per_sec'))} -> {fmt(c.get('samples_per_sec'))})"),
    ]
    for key in ("notice", "setup_notice"):
        if c.get(key):
            rows.append(("note", c[key]))
    return rows


def time_table(columns: list[tuple[str, Optional[dict]]]) -> str:
    """Where the time went, one column per run: `columns` = [(name, breakdown)]
    with engine.report.pair.breakdown() dicts (None: no timeline). Seconds."""
    from engine.report.pair import PART_NAMES

    keys = ("waiting", "setup", "warmup", "train", "data_wait", "validation", "other", "wall")
    names = {**PART_NAMES, "train": "training (compute)", "wall": "wall time with waiting"}
    lines = [f"{'where the time went (s)':>24}" + "".join(f"{n:>14}" for n, _ in columns)]
    for k in keys:
        cells = ["-" if b is None or b.get(k) is None else f"{b[k]:.2f}" for _, b in columns]
        lines.append(f"{names[k]:>24}" + "".join(f"{c:>14}" for c in cells))
    return "\n".join(lines)
