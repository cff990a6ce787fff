"""engine.config.words: one configuration, its short and its long words."""
import pytest

from engine.config import RunConfig, words

ALL_ON = dict(dataset="synthetic", optimizer="muon", ema_momentum=0.99, cutmix_factor=1.0, batch_size=128,
              gradient_accumulation_steps=2, tta="flip_translate")


def test_every_technique_has_a_short_and_a_long_form():
    cfg = {**RunConfig().to_dict(), **ALL_ON, "progressive_epochs": 2, "progressive_scale": 0.5}
    assert words.techniques(cfg) == ["Muon", "EMA 0.99", "CutMix 1", "accumulate 2 (effective batch 256)",
                                     "TTA flip + translate", "progressive 2 ep at 0.5x"]
    assert words.techniques(cfg, long=True) == [
        "Muon (conv filters reshaped to 2-D)", "weight EMA 0.99 (validated on the averaged weights)", "CutMix 1",
        "gradient accumulation 2 (effective batch 256)", "test-time augmentation: flip + translate",
        "progressive resizing: 2 epochs at 0.5x the side"]


def test_a_technique_that_is_off_has_no_words():
    cfg = RunConfig().to_dict()
    assert words.techniques(cfg) == [] and words.techniques(cfg, long=True) == []
    assert words.technique("optimizer", {**cfg, "optimizer": "adam"}) is None
    assert words.technique("optimizer", {**cfg, "optimizer": "muon", "muon_conv": "adamw"}, long=True) == \
        "Muon (conv kernels get AdamW, as Keras ships it)"
    with pytest.raises(ValueError, match="technique 'dropout': use one of optimizer, ema"):
        words.technique("dropout", cfg)


def test_precision_devices_and_steps_per_execution():
    assert (words.precision("mixed_bfloat16"), words.precision("mixed_bfloat16", long=True)) == ("mixed bf16", "bfloat16")
    assert words.precision("int8") == "int8"  # unknown: as it is
    assert (words.devices(1), words.devices(2, simulated=True)) == ("1 device", "2 devices (simulated)")
    assert (words.steps_per_execution(8), words.steps_per_execution(8, long=True)) == ("spe 8", "8 steps per execution")
    tf_cell = {"precision": "mixed_float16", "steps_per_execution": 4, "jit_compile": False, "devices": 2,
               "simulated": True}
    assert words.bench_cell(tf_cell) == "mixed fp16 · spe 4 · XLA off · 2 devices (simulated)"
    assert words.bench_cell({**tf_cell, "backend": "jax", "devices": 1, "simulated": False}) == \
        "JAX · mixed fp16 · spe 4 · 1 device"
