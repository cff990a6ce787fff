"""A queue that serves an in-process caller's runs one at a time with played workers, for tests
whose point is what the caller does with its runs (the autopilot's runoff and confirming
rounds), not training: `tests/helpers/queue.py` `StandInQueue`, serving until the block ends."""
from __future__ import annotations

from tests.helpers.queue import StandInQueue, queue_gone


class PlayedQueue(StandInQueue):
    """Claims each queued run as the queue does, as soon as it is queued, and ends it at once as a
    worker would: a run that stops at its target at its 2nd validation (val_accuracy 0.90, then
    0.96), with its plan (n_train), one execution per epoch and a summary whose samples/s (and so
    time to target) follows its techniques; then the queue's comparison hook. Serves from
    `start()` until the block ends (an autopilot submits its next run after the last ended)."""

    BASE_RATE = 1000.0  # samples/s of a configuration without steps per execution or fused updates

    def __init__(self, home, scratch=None):
        queue_gone(home)  # the store's real queue holds its lock until it exits: fail, never wait forever
        super().__init__(home, scratch)

    def _serve(self) -> None:
        from engine.jobs import comparison
        from engine.store import Store

        try:
            with Store(self.home / "runs.sqlite") as store:
                while not self.done.is_set():
                    rid = self.claim(store)
                    if rid is None:
                        self.done.wait(0.05)
                        continue
                    self._play(store, rid)
                    comparison.on_run_end(store, rid)
        except Exception as e:  # noqa: BLE001 - said by check() in the test's thread
            self.errors.append(e)

    def _play(self, store, rid: int) -> None:
        import time

        from engine.config import RunConfig

        cfg = RunConfig.from_dict(store.get_run(rid)["config"])
        n_train = cfg.steps_per_epoch() * cfg.batch_size
        rate = self.BASE_RATE * (1.25 if cfg.steps_per_execution > 1 else 1.0) * (1.1 if cfg.fused_optimizer else 1.0)
        rate *= 1.0 + 0.01 * (cfg.seed % 5)  # seeds differ a little, as runs do
        t = [n_train / rate * (e + 1) for e in range(2)]
        store.update_run(rid, plan={"n_train": n_train, "dropped_samples_per_epoch": 0,
                                    "train_started_at": time.time()})
        store.add_metrics(rid, executions=[(e, e, (e + 1) * cfg.steps_per_epoch(), cfg.steps_per_epoch(), t[e],
                                            t[0], rate, 0.5 / (e + 1), cfg.learning_rate, int(e == 0), None)
                                           for e in range(2)],
                          epochs=[(e, t[e], (e + 1) * cfg.steps_per_epoch(), 0.5 / (e + 1), 0.9 + 0.06 * e,
                                   0.4 / (e + 1), 0.90 + 0.06 * e, cfg.learning_rate) for e in range(2)])
        store.finish_run(rid, "completed", summary={
            "samples_per_sec": rate, "target_accuracy": cfg.target_accuracy, "test_accuracy": 0.96,
            "stopped_at_target": True, "time_to_target_sec": t[1], "epochs_run": 2})
