"""``python -m engine bench --quick``: the quick speedup benchmark (engine.bench.quick)."""
from __future__ import annotations

import json
import sys
import time

from engine.config import words
from engine.cli.printing import print_json, refuse_if_busy
from engine.report.headline import ratio_text


def add_parser(sub) -> None:
    from engine.bench.quick import QUICK_ESTIMATE_S

    p = sub.add_parser("bench", help="quick speedup benchmark of the options on this machine",
                       description="Short runs on synthetic data (precision x steps per execution x XLA "
                                   "x replicas, x backend where JAX is installed too), each against a float32 single-device baseline measured in "
                                   f"the same invocation. About {QUICK_ESTIMATE_S:.0f} s on an idle 2-core CPU with --quick "
                                   "(JAX installed). --dataset mnist5k is its longer sibling: the same matrix "
                                   "with the cnn on the bundled real MNIST 28x28.")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", default=True, help="small matrix (default)")
    size.add_argument("--full", action="store_true",
                      help="larger matrix: ResNet-style model on 32x32x3, float16 and simulated replicas too")
    p.add_argument("--dataset", choices=("synthetic", "mnist5k"), default="synthetic",
                   help="synthetic images (the quick check), or mnist5k: the same matrix on the bundled "
                        "real MNIST 28x28 with the cnn, its longer sibling (about 4 min on an idle 2-core CPU, "
                        "estimated; docs/datasets.md) [synthetic]")
    p.add_argument("--repeats", type=int, default=2, choices=range(1, 11), metavar="N",
                   help="measurements per cell, interleaved (1-10) [2]")
    p.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    p.add_argument("--progress-file", metavar="FILE",
                   help="keep FILE (JSON, replaced atomically) up to date: state, cells done/total, "
                        "the cell being measured, error (the dashboard reads it)")
    p.add_argument("--matrix", metavar="FILE",
                   help="measure a custom matrix instead: JSON {'workload': {model, synthetic_shape, "
                        "batch_size, steps, epochs}, 'cells': [{precision, steps_per_execution, "
                        "jit_compile, devices}, ...]}, the first cell being the baseline")
    p.set_defaults(func=main)


def check_progress_file(path, example: str = "progress.json") -> None:
    """Check a user-given progress file before anything runs: not a folder or a special
    file, in an existing folder this process can write (tried with a temporary file,
    removed at once; checking permission bits says yes to root even on /proc). A missing
    folder is not created: a typo in it would otherwise go unnoticed.

    Raises: ConfigError (one line: the path, why, and an example `example` file path).
    """
    import os
    import tempfile
    from pathlib import Path

    from engine.base.errors import ConfigError

    p = Path(path)
    if p.is_dir():
        raise ConfigError("progress_file", str(path), "is a directory", f"give a file path, e.g. {p / example}")
    eg = Path(tempfile.gettempdir()) / example
    fix = f"give a file path in a folder you can write, e.g. {eg}"
    if p.exists() and not p.is_file():
        raise ConfigError("progress_file", str(path), "is not a regular file", fix)
    folder = p.parent
    if not folder.is_dir():
        raise ConfigError("progress_file", str(path), f"is in a folder that does not exist ({folder})",
                          f"create the folder first, or give a file path in an existing one, e.g. {eg}")
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{p.name}.check")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ConfigError("progress_file", str(path),
                          f"cannot be written ({folder}: {e.strerror or type(e).__name__})", fix) from None


def progress_writer(path):
    """A function(**fields) that rewrites the progress file `path` (atomically)
    with the job's state so far; a no-op without a path. Keeps 'started' and
    'log' from a file that engine.bench.quick.start_background wrote for this job."""
    import os
    import time
    from pathlib import Path

    if not path:
        return lambda **fields: None
    from engine.jobs import background
    from engine.base.process import start_time

    prior = background.read_json(Path(path)) or {}
    state = {"state": "running", "pid": os.getpid(), "pid_started": start_time(),
             "started": time.time(), "done": 0, "total": None, "current": None, "last": None,
             "error": None}
    if prior.get("state") == "starting":
        state.update({k: prior[k] for k in ("started", "log", "full", "repeats") if k in prior})

    def write(**fields):
        state.update(fields, updated=time.time())
        if state["state"] not in background.ACTIVE_STATES:
            state.setdefault("finished", time.time())
        background.write_json(Path(path), state)

    return write


def format_table(result: dict) -> str:
    """Speedup table: one row per cell, best marked with '*'."""
    from engine.bench import quick as bench

    lines = [f"{'backend':<11} {'precision':<15} {'spe':>4} {'xla':>5} {'dev':>4} {'samples/s':>11} "
             f"{'speedup':>8} {'95% interval':>13}  verdict"]
    best = result.get("best")
    for c in result["cells"]:
        dev = f"{c['devices']}{'s' if c['simulated'] else ''}"
        sp = ratio_text(c["speedup"])
        ci = c.get("speedup_ci95")
        spread = f"{ci[0]:.2f}-{ci[1]:.2f}" if ci else "-"
        verdict = c.get("verdict") or ("baseline" if c is result["cells"][0] else "-")
        mark = " *" if best and bench.cell_key(c) == bench.cell_key(best) else ""
        rate = f"{c['samples_per_sec']:,.0f}" if c["samples_per_sec"] else "-"
        lines.append(f"{c.get('backend', 'tensorflow'):<11} {c['precision']:<15} {c['steps_per_execution']:>4} "
                     f"{str(c['jit_compile']):>5} "
                     f"{dev:>4} {rate:>11} {sp:>8} {spread:>13}  {verdict}{mark}")
    w = result["workload"]
    lines.append(f"workload: {bench.workload_text(w)}, global batch "
                 f"{w['batch_size']}, {w['steps']} steps x {w['epochs']} epochs per cell; {result['repeats']} "
                 f"repeats; {result['wall_sec']:.0f} s in all. 's' = simulated logical devices.")
    return "\n".join(lines)


def main(args) -> int:
    from engine.jobs import background
    from engine.bench import quick as bench
    from engine.hardware.machine import quick_facts

    if getattr(args, "progress_file", None):
        check_progress_file(args.progress_file, "bench-progress.json")  # ConfigError: one line, exit code 2
    write = progress_writer(getattr(args, "progress_file", None))
    # The autopilot (first: its trial is not the user's to cancel), a run, an LR range test,
    # the demo, another benchmark; only the Hardware page's own job may find its file active.
    own = background.own_job_file(getattr(args, "progress_file", None), background.BENCH_FILE)
    msg = refuse_if_busy(skip=(background.BENCH_FILE,) if own else ())
    if msg:
        write(state="failed", error=msg)
        return 2

    facts = quick_facts()
    workload = None
    if getattr(args, "matrix", None):
        try:
            with open(args.matrix) as fh:
                matrix = json.load(fh)
            workload = matrix["workload"]
            cells = [{"simulated": False, **c} for c in matrix["cells"]]
        except (OSError, ValueError, KeyError, TypeError) as e:
            msg = f"--matrix {args.matrix}: {type(e).__name__}: {e}"
            write(state="failed", error=msg)
            print(f"error: {msg}", file=sys.stderr)
            return 2
    else:
        cells = bench.plan_matrix(facts, args.full)
    order = bench.measure_order(cells, args.repeats)
    total = len(order)

    def current(done):
        if done >= total:
            return None
        i, r = order[done]
        return words.bench_cell(cells[i]) + (f", repeat {r + 1}/{args.repeats}" if args.repeats > 1 else "")

    write(state="running", done=0, total=total, current=current(0), full=args.full, repeats=args.repeats)
    if workload is None and getattr(args, "dataset", "synthetic") != "synthetic":
        workload = bench.workload_for(args.dataset, args.full)
    work = workload or (bench.FULL if args.full else bench.QUICK)
    work_samples = work["steps"] * work["epochs"] * work["batch_size"]
    seen = []

    def progress(done, total_, sample):
        seen.append({**sample, "at": time.monotonic() - t_run})
        left = bench.estimate_left(cells, order, seen, seen[-1]["at"], work_samples)
        write(done=done, current=current(done), left_sec=left, left_written=time.time(),
              last={"cell": words.bench_cell(cells[sample["cell"]]),
                    "samples_per_sec": sample.get("samples_per_sec")})
        if not args.json or sys.stderr.isatty():
            print(f"\r  measured {done}/{total_} cells" + (f", about {left:.0f} s left   " if done < total_ else ""),
                  end="", file=sys.stderr, flush=True)

    t_run = time.monotonic()
    try:
        result = bench.run(full=args.full, repeats=args.repeats, facts=facts, cells=cells,
                           workload=workload, on_progress=progress)
    except bench.BenchError as e:
        write(state="failed", error=str(e))
        print(f"\nerror: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # SIGINT, SIGTERM or SIGHUP (engine.cli.main): the job says which
        from engine.jobs import background

        write(state="cancelled", error=background.stopped_line(args.progress_file, "quick benchmark"))
        raise
    except Exception as e:  # noqa: BLE001 - the progress file must not stay 'running'
        write(state="failed", error=f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}")
        raise
    print(file=sys.stderr)
    bench.save(result)
    write(state="done", done=total, current=None)
    if args.json:
        print_json(result)
    else:
        print(format_table(result))
        b = result["best"]
        print(f"best: {b.get('backend', 'tensorflow')}, {b['precision']}, steps_per_execution {b['steps_per_execution']}, "
              f"XLA {'on' if b['jit_compile'] else 'off'}, {b['devices']} device(s): {ratio_text(b['speedup'])}")
        caution = bench.baseline_caution(result)
        if caution:
            print(f"caution: {caution}")
    return 0
