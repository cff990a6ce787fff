"""``python -m engine demo-transfer``: the transfer-learning demonstration (no TF here).

Pretrains a CNN on the bundled digits 0-4 (saving the model), then trains on
digits 5-9 twice, back to back: fine-tuned from the pretrained weights
(init_from: 1 epoch with the taken-over layers frozen, then unfrozen at 0.1x
the learning rate) and from scratch, both with target accuracy 0.95, and
prints how long each took to reach it. All runs go through the queue like any
other run and stay in the store (the Runs page draws them as two curves).
Wire it up with ``cli_demo.add_parser(subparsers)``.
"""
from __future__ import annotations

import sys

from engine.cli.printing import print_json, refuse_if_busy
from engine.report.headline import ratio_text


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "demo-transfer", help="transfer learning on digits: pretrain on 0-4, fine-tune on 5-9 vs from scratch",
        description="Pretrain a CNN on digits 0-4 (model saved), then train digits 5-9 fine-tuned from it and "
                    "from scratch, and compare the time to 0.95 validation accuracy. About a minute on 2 CPU cores.")
    p.add_argument("--epochs", type=int, default=12, metavar="N",
                   help="epochs of the fine-tuned and the from-scratch run [12]")
    p.add_argument("--pretrain-epochs", type=int, default=12, metavar="N", help="epochs of pretraining [12]")
    p.add_argument("--model", default="cnn", choices=("mlp", "cnn", "resnet"), help="model of all three runs [cnn]")
    p.add_argument("--batch-size", type=int, default=32, metavar="N", help="global batch size of all three runs [32]")
    p.add_argument("--learning-rate", type=float, default=1e-3, metavar="LR",
                   help="learning rate of all three runs (the fine-tuned run's frozen phase too) [0.001]")
    p.add_argument("--freeze-epochs", type=int, default=1, metavar="K",
                   help="fine-tuned run: epochs with the taken-over layers frozen [1]")
    p.add_argument("--finetune-lr-factor", type=float, default=0.1, metavar="F",
                   help="fine-tuned run: learning-rate factor after unfreezing [0.1]")
    p.add_argument("--pretrain-id", type=int, metavar="RUN_ID",
                   help="reuse this completed pretraining run (it must have saved its model)")
    p.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=main)


def _fmt_t(v) -> str:
    return f"{v:.2f} s" if v is not None else "not reached"


def main(args) -> int:
    from engine.jobs import runner
    from engine.jobs import demo
    from engine.cli.follow import follow
    from engine.config.preflight import check_runnable
    from engine.store import Store

    from engine.jobs import background

    # The autopilot between its runs, a benchmark, an LR range test, a run. Not the demo's own
    # file: the Runs page starts this command after writing it.
    if refuse_if_busy(skip=(background.DEMO_FILE,)):
        return 2
    cfgs = demo.demo_configs(epochs=args.epochs, pretrain_epochs=args.pretrain_epochs, model=args.model,
                                 batch_size=args.batch_size, learning_rate=args.learning_rate)
    if args.pretrain_id is not None:
        pid = args.pretrain_id
    else:
        (pid,) = runner.submit([cfgs["pretrain"]])
        if not args.quiet:
            print(f"pretraining on digits 0-4: run {pid}", file=sys.stderr)
        pre = follow(pid, args.quiet)
        if pre["status"] != "completed":
            print(f"error: pretraining run {pid} ended {pre['status']}: {pre.get('error')}", file=sys.stderr)
            return 1
    finetune = cfgs["finetune"].replace(init_from=pid, freeze_epochs=min(args.freeze_epochs, args.epochs),
                                        finetune_lr_factor=args.finetune_lr_factor)
    check_runnable(finetune)  # the source run's checks, before anything is queued
    fid, sid = runner.submit([finetune, cfgs["scratch"]])
    if not args.quiet:
        print(f"digits 5-9: run {fid} fine-tuned from run {pid}, run {sid} from scratch", file=sys.stderr)
    runs = [follow(fid, args.quiet), follow(sid, args.quiet)]
    store = Store()
    try:
        c = demo.comparison(store, fid, sid)
        pre_run = store.get_run(pid)
    finally:
        store.close()
    c["pretrain_id"] = pid
    c["pretrain_final_val_accuracy"] = (pre_run.get("summary") or {}).get("final_val_accuracy")
    if args.json:
        print_json(c)
    else:
        t = c["target_accuracy"]
        print(f"pretrained  run {pid}: digits 0-4, final val accuracy "
              f"{c['pretrain_final_val_accuracy'] or float('nan'):.3f}")
        print(f"fine-tuned  run {fid}: time to {t} val accuracy {_fmt_t(c['finetune_time_to_target_sec'])} "
              f"(final {c['finetune_final_val_accuracy'] or float('nan'):.3f})")
        print(f"scratch     run {sid}: time to {t} val accuracy {_fmt_t(c['scratch_time_to_target_sec'])} "
              f"(final {c['scratch_final_val_accuracy'] or float('nan'):.3f})")
        if c["speedup"]:
            who, x = ("fine-tuning", c["speedup"]) if c["speedup"] >= 1 else ("training from scratch", 1 / c["speedup"])
            print(f"{who} reached {t} {ratio_text(x)} sooner (times from the start of training, warm-up and "
                  "recompilation included)")
    return 0 if all(r["status"] == "completed" for r in runs) else 1
