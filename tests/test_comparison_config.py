"""engine.config.comparison_config: a time-to-accuracy comparison ends each run at the target,
a throughput-only one keeps its epochs (issue 43 item 5)."""
from engine.config import RunConfig, baseline_config, comparison_config


def test_a_comparison_with_a_target_stops_each_run_there_and_its_baseline_too():
    cfg = comparison_config(RunConfig(dataset="mnist5k", precision="mixed_bfloat16", epochs=10))
    assert cfg.stop_at_target is True and cfg.epochs == 10          # epochs is the cap
    assert baseline_config(cfg).stop_at_target is True               # both sides stop alike
    assert baseline_config(cfg).precision == "float32"


def test_throughput_only_and_all_epochs_keep_every_epoch():
    synthetic = RunConfig(dataset="synthetic", precision="mixed_bfloat16")
    assert comparison_config(synthetic) == synthetic                 # no target: nothing to stop at
    digits = RunConfig(dataset="digits", precision="mixed_bfloat16")
    assert comparison_config(digits, all_epochs=True) == digits
    assert comparison_config(digits).replace(stop_at_target=False) == digits


def test_the_cli_passes_all_epochs_through(monkeypatch):
    import argparse

    from engine.cli import pairs

    p = argparse.ArgumentParser()
    pairs.add_pair_args(p)
    assert p.parse_args(["--all-epochs"]).all_epochs is True
    assert p.parse_args([]).all_epochs is False
