"""Stopping everything a store runs because a process got a stop signal (SIGINT, SIGTERM,
SIGHUP; engine.base.process.on_stop_signals): the queue process, the CLI waiting on a run
or a comparison. One end for all (docs/reliability.md, "one rule for every signal"):

- every comparison under way is marked with the reason (`ended_by`, e.g. "stopped: the
  queue got SIGTERM"), its queued runs withdrawn (deleted: they never ran) and, once its
  runs have ended, it ends `stopped` with its complete pairs kept
  (engine.jobs.comparison.finish_if_done); one owned by a live process (two commands, the
  autopilot's: engine.jobs.comparison.owner_alive) is ended by that process, which gets SIGTERM;
- every other queued run ends `cancelled` before it started, and a running one is asked
  to stop (engine.jobs.runner.cancel with the reason, which its worker stores as its error).

Never "cancelled by the user": that is the Stop button's and `engine cancel`'s alone.
"""
from __future__ import annotations

import os
from typing import Optional

from engine.store import Store


def stop_all(reason: str, store_path: Optional[os.PathLike] = None) -> list[str]:
    """Stop everything the store runs, naming `reason`; returns runner.cancel's lines."""
    from engine.jobs import comparison, runner
    from engine.store import comparisons as cstore

    from engine.jobs import command_pairs

    store = Store(store_path)
    pairs, lines, owners = [], [], set()
    try:
        for comp in cstore.list_all(store):
            if comp["status"] != "running":
                continue
            if (comp.get("settings") or {}).get("baseline_kind") == "command":
                pairs.append((comp["id"], comp["group_id"]))  # their own process stops its side, ends them
                continue
            if comparison.owner_alive(comp):  # the autopilot's: its process stops its run and ends them
                pid = comp["settings"]["pid"]
                if pid in owners:  # one signal a process: its other comparisons get the reason only
                    cstore.mark_stopping(store, comp["id"], reason)
                else:
                    owners.add(pid)
                    lines.append(comparison.signal_owner(store, comp, reason))
                continue
            cstore.mark_stopping(store, comp["id"], reason)  # the first stop's reason stays
            comparison.withdraw_queued(store, cstore.get(store, comp["id"]))
    finally:
        store.close()
    for cid, _group in pairs:
        command_pairs.stop(cid, store_path, reason)
    lines += runner.cancel_active(store_path, reason=reason, skip_groups=tuple(g for _cid, g in pairs))
    store = Store(store_path)
    try:
        settle_all(store)
    finally:
        store.close()
    return lines


def settle_all(store: Store) -> None:
    """End every running comparison whose runs have all ended or were withdrawn."""
    from engine.jobs import comparison
    from engine.store import comparisons as cstore

    for comp in cstore.list_all(store):
        if comp["status"] == "running":
            comparison.settle_if_idle(store, comp)


def stop_on_server_signals(who: str = "dashboard", store_path: Optional[os.PathLike] = None) -> None:
    """For a server that starts work and has its own shutdown (the dashboard): on SIGINT,
    SIGTERM or SIGHUP, first `stop_all` naming the signal ("stopped: the dashboard got
    SIGTERM"), then the server's own handler (engine.base.process.on_stop_signals, chained).
    Main thread only. Once per process: a second call changes nothing."""
    from engine.base import process

    if _INSTALLED.get(who):
        return
    _INSTALLED[who] = True
    done = []

    def stop(name: str) -> None:
        if not done:  # a second signal goes straight to the server's own shutdown
            done.append(name)
            stop_all(process.stop_line(who, name), store_path)

    process.on_stop_signals(stop, chain=True)


_INSTALLED: dict = {}
