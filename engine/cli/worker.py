"""``python -m engine worker``: join a multi-worker run as one of its processes.

Start one per machine (or per process on one machine) with the same
``--cluster`` list and each its own ``--task-index``; task 0 is the chief and
writes the run's metrics to its store.  Without ``--cluster`` the standard
TF_CONFIG environment variable describes the cluster.
"""
from __future__ import annotations

import subprocess
import sys

from engine.cli.printing import print_json


def add_parser(sub) -> None:
    from engine.cli.flags import add_config_args

    p = sub.add_parser("worker", help="join a multi-worker run (MultiWorkerMirroredStrategy, TF_CONFIG)",
                       description=__doc__)
    p.add_argument("--cluster", help="every worker as host:port, comma-separated, the same on all workers "
                                     "(default: from TF_CONFIG)")
    p.add_argument("--task-index", type=int, help="this worker's index in --cluster (0 = chief)")
    p.add_argument("--run-id", type=int, help="a queued run in this store to execute (else one is created "
                                              "from the run settings below)")
    p.add_argument("--config", metavar="FILE", help="JSON file of run settings (flags override it)")
    p.add_argument("--json", action="store_true", help="print the run's summary as JSON at the end")
    add_config_args(p)
    p.set_defaults(func=main)


def main(args) -> int:
    from engine.base import cluster as cl
    from engine.cli.flags import config_from_args
    from engine.cli.printing import result_json
    from engine.config import ConfigError
    from engine.config.preflight import check_runnable
    from engine.jobs.runner import worker_env
    from engine.store import Store

    if args.cluster:
        if args.task_index is None:
            raise ConfigError("task_index", "", "is required with --cluster", "give --task-index (0 is the chief)")
        cluster = cl.parse(args.cluster, args.task_index)
    else:
        cluster = cl.from_env()
        if cluster is None:
            raise ConfigError("cluster", None, "is missing", "give --cluster host:port,... or set TF_CONFIG")
    cl.check_port(cluster.workers[cluster.task_index])  # before TF: one line naming host:port, exit 2
    store = Store()
    try:
        if args.run_id is not None:
            run = store.get_run(args.run_id)
            if run is None:
                raise ConfigError("run_id", args.run_id, "does not exist in this store",
                                  "see python -m engine runs, or give run settings instead")
            from engine.config import RunConfig

            cfg = RunConfig.from_dict(run["config"])
            rid = args.run_id
        else:
            cfg = config_from_args(args)
            rid = None
        n = len(cluster.workers)
        if cfg.workers != n:
            cfg = cfg.replace(workers=n)  # validates the batch against the new replica count
        check_runnable(cfg)
        if rid is None:
            rid = store.create_run(cfg.to_json(), role="run" if cluster.is_chief else "worker",
                                   status="running")
        else:
            store.update_run(rid, config=cfg.to_dict(), status="running")
    finally:
        store.close()
    code = subprocess.call([sys.executable, "-m", "engine.jobs.worker", str(rid), str(Store().path),
                            "--cluster", ",".join(cluster.workers), "--task-index", str(cluster.task_index)],
                           env=worker_env())
    store = Store()
    try:
        run = store.get_run(rid)
        if code != 0 and run["status"] == "running":
            store.finish_run(rid, "failed", f"worker exited with code {code}", only_if_active=True)
            run = store.get_run(rid)
        workers = store.workers(rid)
    finally:
        store.close()
    mine = next((w for w in workers if w["task_index"] == cluster.task_index), {})
    if args.json:
        print_json({**result_json(run), "task_index": cluster.task_index, "worker_status": mine.get("status")})
    else:
        print(f"run {rid}, task {cluster.task_index}: {mine.get('status') or run['status']}"
              + (f" ({run['error']})" if run.get("error") else ""))
    return 0 if mine.get("status", run["status"]) == "completed" else 1
