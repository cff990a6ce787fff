"""Autopilot test inputs: the digits baseline it searches from, and the machine facts of a
CPU box and a GPU box (engine.hardware.machine.quick_facts' shape)."""
import time

from engine.config import RunConfig

DIGITS = RunConfig(dataset="digits", model="cnn", batch_size=128, epochs=20, target_accuracy=0.95,
                   stop_at_target=True)


def cpu_facts(bf16=True) -> dict:
    return {"host": {"cpu_flags": ["avx512_bf16"] if bf16 else []}, "gpus": [], "tpu": {"cores": 0}}


def gpu_facts(n=4, cc=(8, 0)) -> dict:
    return {"host": {"cpu_flags": []}, "gpus": [{"name": f"GPU {i}", "compute_capability": list(cc)}
                                               for i in range(n)], "tpu": {"cores": 0}}


def plant_confirmation(store, ap_id: str, secs: dict, rate: dict | None = None, test: dict | None = None,
                       ablations: dict | None = None, extra: tuple = (), tuned: dict | None = None,
                       stop_after: int | None = None, end: bool = True) -> dict:
    """An autopilot's confirming rounds as stored runs and comparisons, without training
    (engine.autopilot.confirm.Rounds driven as Autopilot.confirm drives it).

    secs: {name: seconds to 0.95 per round, None = not reached}; names are 'baseline',
    'winner', each of `extra` and each key of `ablations` ({'without <label>': {'technique'}}).
    Every run trains 1,000 samples an epoch and validates twice (at t/2 and t; 0.96 at t when
    reached, else 0.90); rate: steady samples/s per name; test: test accuracy per name and round.
    stop_after: end after this many runs (a Stop); end=False leaves the comparisons running, as
    while the rounds go on (their owner is this process). Returns the state's confirm entry."""
    from engine.autopilot.confirm import Rounds

    ablations = ablations or {}
    names = ["baseline", "winner", *extra, *ablations]
    repeats = len(secs["baseline"])
    seeds = [DIGITS.seed + 1 + r for r in range(repeats)]
    rounds = Rounds(store, ap_id, names, list(extra), ablations, repeats, seeds, tuned, None)
    runs, n = [], 0
    for r, order in enumerate(rounds.order):
        for name in order:
            if stop_after is not None and n >= stop_after:
                break
            n += 1
            t = secs[name][r]
            rid = store.create_run(DIGITS.replace(seed=seeds[r]).to_json(), role="run", group_id=f"{ap_id}-c{r + 1}")
            store.update_run(rid, status="running", started=time.time(),
                             plan={"n_train": 1000, "dropped_samples_per_epoch": 0})
            rounds.submitted(store, r, name, rid)
            end = t if t is not None else 10.0
            store.add_metrics(rid, epochs=[(0, end / 2, 8, 0.5, 0.9, 0.4, 0.90, 0.001),
                                           (1, end, 16, 0.3, 0.96, 0.2, 0.96 if t is not None else 0.90, 0.001)])
            store.finish_run(rid, "completed", summary={"samples_per_sec": (rate or {}).get(name, 1000.0),
                                                        "target_accuracy": 0.95,
                                                        "test_accuracy": ((test or {}).get(name) or [0.95] * repeats)[r]})
            rounds.ended(store, name)
            runs.append({"round": r + 1, "name": name, "seed": seeds[r], "run_id": rid, "time_to_target_sec": t})
    if end:
        rounds.finish(store, "stopped by the user" if stop_after is not None else None)
    return {"repeats": repeats, "seeds": seeds, "runs": runs, "planned": len(names) * repeats, "started": 1.0,
            "comparisons": rounds.state()}
