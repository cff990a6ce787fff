"""Helpers every CLI subcommand shares: config flags, progress line, result JSON, formatting."""
from __future__ import annotations

import argparse
import json
import sys
import typing
from dataclasses import fields
from typing import Optional

from engine.config import ConfigError, RunConfig

DEFAULTS = RunConfig()


def _field_type(f):
    hint = typing.get_type_hints(RunConfig)[f.name]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if args else hint


def _shape(text: str) -> tuple:
    try:
        return tuple(int(p) for p in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not H,W,C (e.g. 32,32,3)") from None


def _int_list(text: str) -> tuple:
    try:
        return tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of class labels (e.g. 5,6,7,8,9)") from None


class UsageError(SystemExit):
    """What `Parser.error` raises (exit code 2): `line` is its one line, without 'error: '."""

    def __init__(self, line: str):
        super().__init__(2)
        self.line = line


# argparse's type errors, and the fix each gets in the one line.
TYPE_FIXES = {"invalid int value": "use a whole number", "invalid float value": "use a number, e.g. 0.001"}


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage dump), exit code 2."""

    def error(self, message):
        # argparse names the flag and the value; the fix is what to type instead.
        fix = next((f for k, f in TYPE_FIXES.items() if k in message), None)
        line = f"{message}; {fix} (see {self.prog} --help)" if fix else f"{message}; see {self.prog} --help"
        sys.stderr.write(f"error: {line}\n")
        raise UsageError(line)


# Short spellings of some flags (the field's own flag works too): --ema 0.99, --cutmix 1.0, ...
FLAG_ALIASES = {"ema_momentum": "--ema", "cutmix_factor": "--cutmix",
                "gradient_accumulation_steps": "--gradient-accumulation"}


def add_config_args(p: argparse.ArgumentParser) -> None:
    """One flag per RunConfig field (--batch-size for batch_size, ...), its help from the field
    (`metadata["help"]`, engine.config.run_config._setting); FLAG_ALIASES adds a short spelling for some."""
    g = p.add_argument_group("run settings (defaults in brackets)")
    for f in fields(RunConfig):
        flags = ["--" + f.name.replace("_", "-")] + ([FLAG_ALIASES[f.name]] if f.name in FLAG_ALIASES else [])
        default = getattr(DEFAULTS, f.name)
        helptext = f"{f.metadata['help']} [{default}]"
        t = _field_type(f)
        kw = dict(default=None, help=helptext, dest=f.name)
        if t is bool:
            g.add_argument(*flags, action=argparse.BooleanOptionalAction, **kw)
        elif t is tuple and f.name == "synthetic_shape":
            g.add_argument(*flags, type=_shape, metavar="H,W,C", **kw)
        elif t is tuple:
            g.add_argument(*flags, type=_int_list, metavar="L,L,...", **kw)
        else:
            g.add_argument(*flags, type=t, metavar=f.name.upper(), **kw)


def config_from_args(args) -> RunConfig:
    """RunConfig from --config FILE (if given) overridden by explicit flags.
    Raises ConfigError."""
    base = {}
    if getattr(args, "config", None):
        try:
            with open(args.config, encoding="utf-8") as fh:
                base = json.load(fh)
        except UnicodeDecodeError as e:
            raise ConfigError("config", args.config, f"is not UTF-8 text (byte {e.start})",
                              "give a JSON file of settings, saved as UTF-8") from None
        except OSError as e:
            raise ConfigError("config", args.config, f"cannot be read ({e.strerror})",
                              "give the path of a JSON file of settings") from None
        except json.JSONDecodeError as e:
            raise ConfigError("config", args.config, f"is not valid JSON (line {e.lineno}, column {e.colno}: "
                              f"{e.msg})", "fix the file: one JSON object of settings") from None
        if not isinstance(base, dict):
            raise ConfigError("config", args.config, "is not a JSON object", 'write {"batch_size": 256, ...}')
    for f in fields(RunConfig):
        v = getattr(args, f.name, None)
        if v is not None:
            base[f.name] = v
    return RunConfig.from_dict(base)


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


def progress_line(run_id: int):
    """A `runner.wait` poll callback that prints the run's progress: on a terminal one
    line rewritten in place at every poll; elsewhere (a pipe, a file) a new line only when
    the phase seen at this poll differs from the last one printed (queued, setting up,
    warm-up, the epoch reached: short epochs between two polls share a line), so a log
    holds no repeats."""
    from engine.report.progress import progress
    from engine.store import Store

    last = {"phase": None}
    tty = sys.stderr.isatty()

    def on_poll(run):
        store = Store()
        try:
            p = progress(store, run_id)
        finally:
            store.close()
        if run["status"] == "queued":
            phase, line = "queued", f"[run {run_id}] queued"
        elif not p["total_steps"]:
            phase, line = "setting up", f"[run {run_id}] setting up (devices, data, model)"
        else:
            left = f"{p['time_left_sec']:.0f} s left" if p["time_left_sec"] is not None else "warm-up"
            sps = f"{p['samples_per_sec']:,.0f} samples/s" if p["samples_per_sec"] else "- samples/s"
            line = (f"[run {run_id}] epoch {p['epoch']}/{p['epochs']} step {p['step']}/{p['total_steps']}"
                    f" | {sps} | loss {fmt(p['loss'])} | {left}")
            # No steady rate yet is the warm-up (tracing, compiling), whichever epoch it spans.
            phase = "warm-up" if p["time_left_sec"] is None else f"epoch {p['epoch']}"
        if tty:
            sys.stderr.write("\r" + line.ljust(100))
        elif phase != last["phase"]:
            sys.stderr.write(line + "\n")
        else:
            return
        last["phase"] = phase
        sys.stderr.flush()

    return on_poll


# Set when Ctrl-C cancelled what the command waited for: the command then exits 130.
INTERRUPTED = {"by_user": False}


def ignore_more_interrupts(line: str) -> None:
    """After a first Ctrl-C: say `line` once, and let further presses change nothing, so
    that the cancel under way finishes (a second press 0.3 s later printed a 29-line
    chained traceback); the command exits 130 (engine.cli.main)."""
    import signal

    from engine.base.process import STOP_SIGNALS

    for name in STOP_SIGNALS:  # SIGTERM and SIGHUP stop the same way as Ctrl-C, once
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    INTERRUPTED["by_user"] = True
    sys.stderr.write(f"\n{line}\n")
    sys.stderr.flush()


def stop_all_for_signal() -> None:
    """After Ctrl-C, SIGTERM or SIGHUP: stop what the store runs, naming the signal the CLI got
    ("stopped: the CLI got SIGTERM"; engine.jobs.stopping); comparisons keep complete pairs."""
    from engine.base.process import stop_reason
    from engine.jobs import stopping

    stopping.stop_all(stop_reason("CLI"))


def follow(run_id: int, quiet: bool) -> dict:
    """Wait for a run with a progress line; Ctrl-C (any number of presses) cancels it."""
    from engine.jobs import runner

    on_poll = None if quiet else progress_line(run_id)
    try:
        run = runner.wait(run_id, on_poll=on_poll)
    except KeyboardInterrupt:
        ignore_more_interrupts(f"cancelling run {run_id} (interrupted; more presses change nothing) ...")
        stop_all_for_signal()
        run = runner.wait(run_id)
    if not quiet and sys.stderr.isatty():
        sys.stderr.write("\n")
    return run


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
    parts = []
    opt = cfg.get("optimizer")
    if opt == "muon":
        parts.append("Muon (conv filters reshaped to 2-D)" if cfg.get("muon_conv", "reshape") == "reshape"
                     else "Muon (conv kernels get AdamW, as Keras ships it)")
    elif opt in ("schedule_free_adamw", "lamb"):
        parts.append({"schedule_free_adamw": "schedule-free AdamW", "lamb": "LAMB"}[opt])
    if cfg.get("ema_momentum"):
        parts.append(f"weight EMA {cfg['ema_momentum']:g} (validated on the averaged weights)")
    if cfg.get("cutmix_factor"):
        parts.append(f"CutMix {cfg['cutmix_factor']:g}")
    k = cfg.get("gradient_accumulation_steps") or 1
    if k > 1:
        parts.append(f"gradient accumulation {k} (effective batch {cfg.get('batch_size', 0) * k})")
    if cfg.get("tta", "off") != "off":
        parts.append(f"test-time augmentation: {cfg['tta'].replace('_', ' + ')}")
    if cfg.get("progressive_epochs"):
        parts.append(f"progressive resizing: {cfg['progressive_epochs']} epoch(s) at {cfg.get('progressive_scale'):g}x "
                     "the side")
    return " · ".join(parts) or None


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
        ("test accuracy", f"{fmt(s['test_accuracy'])} on {s.get('test_samples')} held-out samples, with the "
                          "weights it stopped with" if s.get("test_accuracy") is not None
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
                                        f"configuration): {_x(c.get('steady_speedup'))} steady, "
                                        f"{_x(c.get('end_to_end_speedup'))} end-to-end"
                                        + (f", {tta:.2f}x time to accuracy" if tta else "")))
    if s.get("error"):
        rows.append(("error", s["error"]))
    width = max([20, *(len(k) for k, _ in rows)])  # e.g. "time to 0.995 val acc" is 21
    for k, v in rows:
        print(f"{k:>{width}}  {v}")


def mfu_rows(s: dict) -> list[tuple[str, str]]:
    """'model FLOPs', 'MFU' and 'bound by' rows of a summary with engine.report.mfu's fields."""
    from engine.hardware.peaks import flops_text
    from engine.report.mfu import headline

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
    line = headline(s)
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


def _x(v) -> str:
    """A ratio as '1.23x' (2 decimals, as every speedup the CLI prints), or '-' when there
    is none (not '-x')."""
    return "-" if v is None else f"{v:.2f}x"


def speedup_rows(c: dict) -> list[tuple[str, str]]:
    """The three speedups of an engine.report.pair.compare() result as (name, text) rows."""
    target = c.get("target_accuracy")
    if c.get("time_to_accuracy_speedup") is not None:
        tta = (f"{c['time_to_accuracy_speedup']:.2f}x  ({c['baseline_time_to_accuracy_sec']:.2f} s -> "
               f"{c['time_to_accuracy_sec']:.2f} s to {target:g} val accuracy)")
    elif target is None:
        tta = "no target accuracy (set --target-accuracy)"
    else:
        notes = [f"baseline {c['baseline_time_to_accuracy_note']}" if c.get("baseline_time_to_accuracy_note") else None,
                 f"run {c['time_to_accuracy_note']}" if c.get("time_to_accuracy_note") else None]
        tta = "-  (" + "; ".join(n for n in notes if n) + f"; target {target:g} val accuracy)"
    rows = [
        ("time to accuracy", tta),
        ("end-to-end", f"{_x(c.get('end_to_end_speedup'))}  (training samples / wall time of training: "
                       f"{fmt(c.get('baseline_end_to_end_samples_per_sec'))} -> {fmt(c.get('end_to_end_samples_per_sec'))} samples/s)"),
        ("steady", f"{_x(c.get('steady_speedup'))}  (median samples/s per execution after warm-up: "
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
