"""Hand-tuned presets: per bundled data set, a configuration that reaches the data
set's default target sooner than the baseline (RunConfig's defaults), for demos and
benchmarks. No TF here.

Each preset combines techniques SpeedLab measures: a larger global batch with the
linear scaling rule (Goyal et al. 2017, arXiv:1706.02677), a one-cycle schedule
(Smith & Topin 2018, arXiv:1708.07120), label smoothing (Szegedy et al. 2016),
bfloat16 mixed precision and several steps per execution. The figures behind each
are in docs/datasets.md.
"""
from __future__ import annotations

from urllib.parse import urlencode

from engine.config import RunConfig

# digits: benchmarks/time_to_accuracy.py's hand-tuned configuration (kept there as TUNED).
PRESETS = {
    "digits": dict(model="cnn", batch_size=256, epochs=10, learning_rate=1e-3, scale_lr=True,
                   reference_batch_size=128, schedule="one_cycle", max_lr=0.005, label_smoothing=0.1,
                   precision="mixed_bfloat16", steps_per_execution=2),
    # mnist5k: the default global batch (128), so that its like-for-like baseline
    # (engine.config.baseline_config) is RunConfig's defaults on mnist5k.
    "mnist5k": dict(model="cnn", batch_size=128, epochs=10, learning_rate=1e-3, schedule="one_cycle",
                    max_lr=0.005, label_smoothing=0.1, precision="mixed_bfloat16", steps_per_execution=4),
}


def preset(dataset: str, **overrides) -> RunConfig:
    """The tuned RunConfig for bundled data set `dataset` ('digits' or 'mnist5k'),
    with `overrides` (e.g. seed=1). Raises KeyError for another data set;
    ConfigError as RunConfig."""
    return RunConfig(**{**PRESETS[dataset], "dataset": dataset, **overrides})


def train_link(dataset: str, talk: bool = False) -> str:
    """The Train page's query string that opens with the preset set (the page's
    controls are bound to the URL), in presenter mode when `talk`:
    '?dataset=mnist5k&model=cnn&...&mode=talk'. Raises KeyError as `preset`."""
    params = {"dataset": dataset, **{k: str(v).lower() if isinstance(v, bool) else v
                                     for k, v in PRESETS[dataset].items()}}
    if talk:
        params["mode"] = "talk"
    return "?" + urlencode(params)
