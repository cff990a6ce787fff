"""``python -m engine noise``: this machine's noise floor, an A/A comparison of the baseline against itself."""
from __future__ import annotations


from engine.cli.flags import add_config_args, config_from_args
from engine.cli.printing import print_json, refuse_if_busy
from engine.cli.comparison import add_pair_args, check_pair_args, comparison_json, comparison_rows, run_comparison


def add_parser(sub) -> None:
    s = sub.add_parser("noise", help="this machine's noise floor: the baseline against itself (A/A pairs)",
                       description="Run the float32 single-device baseline of the given settings against "
                                   "itself in interleaved pairs (seed i for pair i) and report the ratio's "
                                   "95%% interval: a speedup smaller than its half width is within this "
                                   "machine's noise. The result is stored; later headlines name it.")
    add_config_args(s)
    add_pair_args(s)
    s.add_argument("--config", metavar="FILE", help="JSON file of settings (flags override it)")
    s.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    s.add_argument("--quiet", action="store_true", help="no progress line")
    s.set_defaults(func=cmd_noise)


def cmd_noise(args) -> int:
    """Exit code 0 completed with at least 2 complete pairs, 1 otherwise, 2 invalid settings or busy."""

    cfg = config_from_args(args)
    check_pair_args(args)
    if args.pairs is not None and args.pairs < 2:
        from engine.base.errors import ConfigError

        raise ConfigError("pairs", args.pairs, "gives no interval", "give at least 3 pairs for a noise floor")
    if refuse_if_busy():
        return 2
    comp = run_comparison(cfg, "aa", args)
    out = {"comparison": comparison_json(comp)}
    hw = (out["comparison"].get(out["comparison"].get("measure") or "time_to_accuracy") or {}).get("half_width")
    out["noise_floor"] = hw
    if args.json:
        print_json(out)
    else:
        for k, v in comparison_rows(out["comparison"]):
            print(f"{k:>20}  {v}")
        if hw is not None:
            print(f"{'noise floor':>20}  ±{hw * 100:.1f}% (a speedup inside it is within this machine's noise)")
    return 0 if comp["status"] == "completed" and (out["comparison"].get("pairs") or 0) >= 2 else 1
