"""Command line: ``python -m engine {run,runs,show,cancel,compare,...} --help``.

This process never imports TensorFlow: runs execute in worker processes and
the CLI only reads the store.  Exit codes: 0 ok, 1 the run failed or was
cancelled, 2 invalid input (one line on stderr naming field, value and fix).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import typing
from dataclasses import fields
from typing import Optional

from engine.config import FIELD_HELP, ConfigError, RunConfig

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


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage dump), exit code 2."""

    def error(self, message):
        self.exit(2, f"error: {message}; see {self.prog} --help\n")


def add_config_args(p: argparse.ArgumentParser) -> None:
    """One flag per RunConfig field (--batch-size for batch_size, ...), help from FIELD_HELP."""
    g = p.add_argument_group("run settings (defaults in brackets)")
    for f in fields(RunConfig):
        flag = "--" + f.name.replace("_", "-")
        default = getattr(DEFAULTS, f.name)
        helptext = f"{FIELD_HELP[f.name]} [{default}]"
        t = _field_type(f)
        if t is bool:
            g.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=helptext)
        elif t is tuple and f.name == "synthetic_shape":
            g.add_argument(flag, type=_shape, default=None, metavar="H,W,C", help=helptext)
        elif t is tuple:
            g.add_argument(flag, type=_int_list, default=None, metavar="L,L,...", help=helptext)
        else:
            g.add_argument(flag, type=t, default=None, metavar=f.name.upper(), help=helptext)


def config_from_args(args) -> RunConfig:
    """RunConfig from --config FILE (if given) overridden by explicit flags.
    Raises ConfigError."""
    base = {}
    if getattr(args, "config", None):
        try:
            with open(args.config) as fh:
                base = json.load(fh)
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


def _fmt(v, digits=4):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}g}" if abs(v) < 1e4 else f"{v:,.0f}"
    return str(v)


def _progress_line(run_id: int):
    from engine.compare import progress
    from engine.store import Store

    last = {"t": 0.0}
    tty = sys.stderr.isatty()

    def on_poll(run):
        now = time.monotonic()
        if not tty and now - last["t"] < 2.0:
            return
        last["t"] = now
        store = Store()
        try:
            p = progress(store, run_id)
        finally:
            store.close()
        if run["status"] == "queued":
            line = f"[run {run_id}] queued"
        elif not p["total_steps"]:
            line = f"[run {run_id}] setting up (devices, data, model)"
        else:
            left = f"{p['time_left_sec']:.0f} s left" if p["time_left_sec"] is not None else "warm-up"
            sps = f"{p['samples_per_sec']:,.0f} samples/s" if p["samples_per_sec"] else "- samples/s"
            line = (f"[run {run_id}] epoch {p['epoch']}/{p['epochs']} step {p['step']}/{p['total_steps']}"
                    f" | {sps} | loss {_fmt(p['loss'])} | {left}")
        sys.stderr.write(("\r" + line.ljust(100)) if tty else line + "\n")
        sys.stderr.flush()

    return on_poll


def _follow(run_id: int, quiet: bool) -> dict:
    """Wait for a run with a progress line; Ctrl-C cancels it."""
    from engine import runner

    on_poll = None if quiet else _progress_line(run_id)
    try:
        run = runner.wait(run_id, on_poll=on_poll)
    except KeyboardInterrupt:
        sys.stderr.write(f"\ncancelling run {run_id} ...\n")
        runner.cancel_active()
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
    return s


def cmd_run(args) -> int:
    from engine import runner
    from engine.store import Store

    cfg = config_from_args(args)
    from engine.config import check_runnable

    if cfg.dataset != "synthetic" and any(getattr(args, k, None) is not None for k in
                                          ("synthetic_shape", "synthetic_classes", "synthetic_samples")):
        print(f"warning: --synthetic-* settings only apply to --dataset synthetic (not {cfg.dataset})",
              file=sys.stderr)
    for w in check_runnable(cfg):
        print(f"warning: {w}", file=sys.stderr)
    if args.baseline:
        bid, rid, reused = runner.launch_with_baseline(cfg)
        if not args.quiet:
            print(f"baseline: run {bid}" + (" (reused)" if reused else ""), file=sys.stderr)
        if bid != rid and not reused:
            base = _follow(bid, args.quiet)
            if base["status"] != "completed":
                runner.cancel(rid)
    else:
        (rid,) = runner.submit([cfg])
        bid = None
    run = _follow(rid, args.quiet)
    out = result_json(run)
    if bid is not None and bid != rid:
        from engine.compare import compare

        store = Store()
        try:
            out["comparison"] = compare(store, bid, rid)
        finally:
            store.close()
    if args.json:
        print(json.dumps(out))
    else:
        _print_summary(out)
    return 0 if run["status"] == "completed" else 1


def _print_summary(s: dict) -> None:
    rows = [
        ("run", s["run_id"]), ("status", s["status"]),
        ("steady throughput", f"{_fmt(s.get('samples_per_sec'))} samples/s (median per execution)"),
        ("warm-up", f"{_fmt(s.get('warmup_sec'))} s (first execution: tracing, compilation)"),
        ("wall time", f"{_fmt(s.get('wall_sec'))} s"),
        ("replicas", f"{s.get('replicas')}" + (" (simulated logical devices)" if s.get("replicas_simulated") else "")),
        ("precision", f"{s.get('precision')} (compute {s.get('compute_dtype')}, variables {s.get('variable_dtype')})"
         + (f", loss scale {s['loss_scale']:g}" if s.get("loss_scale") else "")),
        ("final loss", _fmt(s.get("final_loss"))),
        ("final val accuracy", _fmt(s.get("final_val_accuracy"))),
    ]
    if s.get("time_to_target_sec") is not None:
        rows.append(("time to target", f"{s['time_to_target_sec']:.2f} s"))
    if s.get("comparison"):
        c = s["comparison"]
        rows.append(("speedup vs baseline", f"{_fmt(c['throughput_speedup'], 3)}x throughput (run {c['baseline_id']})"))
    if s.get("error"):
        rows.append(("error", s["error"]))
    for k, v in rows:
        print(f"{k:>20}  {v}")


def runs_frame(store):
    """All runs as a pandas DataFrame (one row each, newest first)."""
    import pandas as pd

    recs = []
    for r in store.list_runs():
        c, s = r["config"], r.get("summary") or {}
        recs.append({
            "id": r["id"], "status": r["status"], "role": r["role"],
            "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["created"])),
            "dataset": c["dataset"], "model": c["model"], "precision": c["precision"],
            "devices": c["devices"], "simulated": s.get("replicas_simulated"),
            "batch": c["batch_size"], "spe": c["steps_per_execution"], "xla": c["jit_compile"],
            "schedule": c.get("schedule"), "epochs": c["epochs"],
            "samples_per_sec": s.get("samples_per_sec"), "warmup_sec": s.get("warmup_sec"),
            "wall_sec": s.get("wall_sec"), "val_accuracy": s.get("final_val_accuracy"),
            "time_to_target_sec": s.get("time_to_target_sec"), "error": r.get("error"),
        })
    return pd.DataFrame.from_records(recs, columns=[
        "id", "status", "role", "created", "dataset", "model", "precision", "devices", "simulated",
        "batch", "spe", "xla", "schedule", "epochs", "samples_per_sec", "warmup_sec", "wall_sec",
        "val_accuracy", "time_to_target_sec", "error"])


def cmd_runs(args) -> int:
    from engine import runner
    from engine.store import Store

    store = Store()
    try:
        runner.reconcile(store)
        df = runs_frame(store)
    finally:
        store.close()
    if args.json:
        print(df.to_json(orient="records"))
    elif df.empty:
        print("no runs yet: python -m engine run --help")
    else:
        print(df.drop(columns=["error"]).to_string(index=False, float_format=lambda v: f"{v:,.4g}"))
    return 0


def _get_run(store, run_id: int) -> Optional[dict]:
    run = store.get_run(run_id)
    if run is None:
        print(f"error: run_id: {run_id} does not exist; see python -m engine runs", file=sys.stderr)
    return run


def cmd_show(args) -> int:
    from engine.compare import live_summary
    from engine.store import Store

    store = Store()
    try:
        run = _get_run(store, args.run_id)
        if run is None:
            return 2
        epochs = store.frame("epochs", args.run_id)
        summ = live_summary(store, run)
    finally:
        store.close()
    if args.json:
        print(json.dumps({**run, "summary": summ}, default=str))
        return 0
    print(f"run {run['id']}  {run['status']}  ({run['role']})")
    if run.get("error"):
        print(f"error: {run['error']}")
    print("config:", json.dumps(run["config"], sort_keys=True))
    print("environment:", json.dumps(run.get("environment"), sort_keys=True))
    _print_summary({**result_json(run), **summ, "run_id": run["id"], "status": run["status"]})
    if not epochs.empty:
        print(epochs.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0


def cmd_cancel(args) -> int:
    from engine import runner
    from engine.store import Store

    store = Store()
    try:
        if _get_run(store, args.run_id) is None:
            return 2
    finally:
        store.close()
    print(runner.cancel(args.run_id))
    return 0


def cmd_compare(args) -> int:
    from engine.compare import compare
    from engine.store import Store

    store = Store()
    try:
        for rid in (args.baseline_id, args.run_id):
            if _get_run(store, rid) is None:
                return 2
        c = compare(store, args.baseline_id, args.run_id)
    finally:
        store.close()
    if args.json:
        print(json.dumps(c))
        return 0
    print(f"baseline run {c['baseline_id']}: {_fmt(c['baseline_samples_per_sec'])} samples/s")
    print(f"run {c['run_id']}: {_fmt(c['samples_per_sec'])} samples/s")
    print(f"throughput speedup: {_fmt(c['throughput_speedup'], 3)}x")
    if c["time_to_target_speedup"] is not None:
        print(f"time-to-target speedup: {c['time_to_target_speedup']:.3f}x "
              f"({c['baseline_time_to_target_sec']:.2f} s vs {c['time_to_target_sec']:.2f} s)")
    for line in c["caveats"]:
        print(f"caveat: {line}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m engine",
                                description="SpeedLab engine: measured training runs stored in SQLite "
                                            "($SPEEDLAB_HOME/runs.sqlite, default ./.speedlab).")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="train one configuration in a fresh worker and measure it",
                       description="Train one configuration in a fresh worker process, show progress, "
                                   "store the run, and print its summary (last stdout line with --json).")
    add_config_args(r)
    r.add_argument("--config", metavar="FILE", help="JSON file of settings (flags override it)")
    r.add_argument("--baseline", action="store_true",
                   help="first run (or reuse) the float32 single-device baseline and report the speedup")
    r.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    r.add_argument("--quiet", action="store_true", help="no progress line")
    r.set_defaults(func=cmd_run)
    s = sub.add_parser("runs", help="table of stored runs")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_runs)
    s = sub.add_parser("show", help="one run's config, environment, summary and epochs")
    s.add_argument("run_id", type=int)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_show)
    s = sub.add_parser("cancel", help="cancel a queued or running run (its metrics are kept)")
    s.add_argument("run_id", type=int)
    s.set_defaults(func=cmd_cancel)
    s = sub.add_parser("compare", help="speedup of RUN_ID over BASELINE_ID")
    s.add_argument("baseline_id", type=int)
    s.add_argument("run_id", type=int)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_compare)
    for mod in _plugins():
        mod.add_parser(sub)
    return p


def _plugins():
    """Subcommands that live in their own modules (hardware, bench, lr-find)."""
    import importlib

    mods = []
    for name in ("engine.cli_hardware", "engine.cli_bench", "engine.cli_lr_find", "engine.cli_worker", "engine.cli_demo", "engine.cli_data"):
        try:
            mods.append(importlib.import_module(name))
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
    return mods


def main(argv=None) -> int:
    from engine.runner import ActiveRunError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ActiveRunError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (OSError, json.JSONDecodeError) as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
