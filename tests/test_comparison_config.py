"""Issue 43, unit lane: a time-to-accuracy comparison ends each run at the target (comparison_config),
a throughput-only one keeps its epochs; the pair chart's ticks and band; a colour per configuration."""
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

    from engine.cli import comparison as cli_comparison

    p = argparse.ArgumentParser()
    cli_comparison.add_pair_args(p)
    assert p.parse_args(["--all-epochs"]).all_epochs is True
    assert p.parse_args([]).all_epochs is False


def test_the_pair_chart_has_few_labelled_ticks_and_a_clipped_band():
    from engine.charts.comparison import log_range, pairs_figure

    assert log_range([1.2, 1.5]) == (0.5, 2.0)                      # at least 0.5x to 2x
    assert log_range([3.04, 1.48, 6.24]) == (0.5, 8.0)              # widened to whole ticks
    assert log_range([0.01, 100.0]) == (0.125, 8.0)                 # an open interval is clipped
    rows = [{"status": "complete", "pair": i, "order": "AB", "seed": i, "baseline_time_to_accuracy": b,
             "time_to_accuracy": r} for i, (b, r) in enumerate([(30.0, 10.0), (30.0, 12.0), (30.0, 6.0)])]
    result = {"measure": "time_to_accuracy", "pair_rows": rows, "planned": 3,
              "history": [{"pairs": 1, "speedup": 3.0, "ci95": None}, {"pairs": 2, "speedup": 2.74, "ci95": None},
                          {"pairs": 3, "speedup": 3.42, "ci95": [0.02, 60.0]}]}
    fig = pairs_figure(result)
    assert list(fig.layout.yaxis.tickvals) == [0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
    assert list(fig.layout.yaxis.ticktext)[2:5] == ["0.5×", "1×", "2×"]
    band = next(t for t in fig.data if t.name == "95% interval so far")
    assert max(band.y) == 8.0 and min(band.y) == 0.125                # drawn at the edges, not 0.02-60
    points = next(t for t in fig.data if t.name == "one pair")
    assert list(points.y) == [3.0, 2.5, 5.0] and points.text[2].endswith("5.00×")


def test_a_configuration_has_one_colour_in_every_comparison():
    from engine.charts import style as chart_style

    bf16 = RunConfig(dataset="digits", precision="mixed_bfloat16").to_dict()
    again = RunConfig(dataset="digits", precision="mixed_bfloat16", seed=3, epochs=4).to_dict()  # another comparison
    spe = RunConfig(dataset="digits", steps_per_execution=4).to_dict()
    assert chart_style.run_color(12, "run", bf16) == chart_style.run_color(31, "run", again)
    assert chart_style.run_color(12, "run", bf16) in chart_style.PALETTE
    assert chart_style.config_color(bf16) != chart_style.config_color(spe)
    assert chart_style.run_color(12, "baseline", bf16) == chart_style.BASELINE_COLOR


def test_the_quick_benchmarks_estimate_counts_the_cells_it_will_run():
    from engine.bench import quick as bench

    est, basis = bench.estimate_sec({}, cells=8)
    assert est == 8 * bench.PER_CELL_S["synthetic"] and basis.startswith("8 cells")
    last = {"wall_sec": 150.0, "cells": [{}] * 10, "full": False}      # 15 s a cell measured here
    assert bench.estimate_sec(last, cells=8) == (120.0, "8 cells at the last run's 15 s a cell here")
    assert bench.estimate_sec(last, cells=8, dataset="mnist5k")[0] == 8 * bench.PER_CELL_S["mnist5k"]
    assert bench.step_label(6, 16, 2) == "Measurement 7 of 16 (8 cells × 2)"   # was "Cell 7 of 16" for 8 cells
    assert bench.step_label(2, 8, 1) == "Cell 3 of 8"


def test_each_bundled_data_set_has_its_presets_and_the_tuned_baseline_hook():
    from engine.config import presets

    names = [p["name"] for p in presets.menu("digits")]
    assert names == ["Baseline", "Tuned baseline", "Hand-made preset", "Autopilot winner"]
    old_row = {"learning_rate": 0.003, "result": {"seeds": [0, 1]}}  # stored before schedules were tuned
    tuned = presets.menu("digits", old_row)[1]
    assert tuned["settings"] == {"dataset": "digits", "learning_rate": 0.003} and tuned["missing"] is None
    assert tuned["line"] == ("the baseline at its tuned constant learning rate 0.003 (tune-baseline); measured "
                             "elsewhere (machine not recorded): check it here")
    row = {"learning_rate": 0.004, "schedule": "warmup_cosine", "warmup_epochs": 0.5, "max_lr": None,
           "label_smoothing": 0.1, "result": {"epochs": 5}}
    tuned = presets.menu("digits", row)[1]
    assert tuned["settings"] == {"dataset": "digits", "learning_rate": 0.004, "schedule": "warmup_cosine",
                                 "warmup_epochs": 0.5, "label_smoothing": 0.1, "epochs": 5}
    assert tuned["line"] == ("the baseline at its tuned warmup_cosine schedule (warmup 0.5 epochs) over 5 epochs "
                             "peaking at learning rate 0.004, label smoothing 0.1 (tune-baseline); measured "
                             "elsewhere (machine not recorded): check it here")
    assert presets.menu("digits")[1]["settings"] is None                   # until tune-baseline stores one
    hand = presets.menu("mnist5k")[2]["settings"]
    assert RunConfig(**hand) == presets.preset("mnist5k")                   # a click gives the preset itself
    assert presets.menu("synthetic") == []
