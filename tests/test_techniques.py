"""The techniques of today's fast-training records (engine.training.techniques): their
settings' checks and wiring (config, CLI, baseline, autopilot space), a hand-computed
EMA update, the accumulation's update count, TTA averages, CutMix, Muon on conv filters
and progressive resizing."""
from pathlib import Path

import numpy as np
import pytest

from engine.autopilot import space as sp
from engine.config import RunConfig, baseline_config, effective_batch_size, progressive_side
from engine.base.errors import ConfigError
from tests.helpers.lazy import lazy

keras = lazy("keras")
techniques = lazy("engine.training.techniques")
schedules = lazy("engine.training.schedules")

MNIST = dict(dataset="mnist5k", model="cnn")


@pytest.mark.parametrize("changes, line", [
    (dict(cutmix_factor=1.0, mixup_alpha=0.2), "cutmix_factor: 1.0 cannot be combined with mixup in one run "
     "(SpeedLab mixes each batch one way); set cutmix_factor or mixup_alpha to 0"),
    (dict(tta="flip"), "tta: 'flip' mirrors images, and a mirrored digit of mnist5k is another glyph or none; "
     "use tta translate, or off"),
    (dict(gradient_accumulation_steps=3), "gradient_accumulation_steps: 3 does not divide the 32 steps of an epoch "
     "(an update would mix one epoch's last batches with the next epoch's); use 2 or 4 or 8 or 16"),
    (dict(gradient_accumulation_steps=2, fused_optimizer=True), "gradient_accumulation_steps: 2 is not supported "
     "with the fused optimizer update; turn fused_optimizer off, or use gradient_accumulation_steps 1"),
    (dict(gradient_accumulation_steps=2, devices=2), "gradient_accumulation_steps: 2 is not supported with 2 "
     "replicas on TensorFlow (Keras branches around the replicas' gradient sync, which tf.distribute cannot run); "
     "use 1 device and 1 worker, backend jax, or gradient_accumulation_steps 1"),
    (dict(progressive_epochs=1), "progressive_epochs: 1 needs a model that pools globally before its head; cnn "
     "flattens a fixed-size image; use model resnet, or progressive_epochs 0"),
    (dict(model="resnet", progressive_epochs=10), "progressive_epochs: 10 is out of range; use 0 (off) up to 9: "
     "the last epoch trains at full size"),
    (dict(optimizer="schedule_free_adamw", schedule="one_cycle"), "optimizer: 'schedule_free_adamw' replaces the "
     "learning-rate schedule, so schedule 'one_cycle' does not apply; use schedule constant (a warmup is fine) "
     "without reduce_on_plateau, or another optimizer"),
    (dict(cutmix_factor=1.5), "cutmix_factor: 1.5 is out of range; use a value in [0.0, 1.0]"),
    (dict(ema_momentum=1.0), "ema_momentum: 1.0 is out of range; use a value in [0.0, 1.0)"),
    (dict(muon_conv="svd"), "muon_conv: 'svd' is not supported; use one of: reshape, adamw"),
    (dict(cutmix_factor=1.0, jit_compile=True), "cutmix_factor: 1.0 cannot be XLA-compiled on TensorFlow "
     "(keras.layers.CutMix draws with StatelessRandomGammaV3, which XLA has no kernel for); turn jit_compile off, "
     "use backend jax, or set cutmix_factor to 0"),
])
def test_invalid_combinations_are_refused_with_one_line(changes, line):
    with pytest.raises(ConfigError) as e:
        RunConfig(**{**MNIST, **changes})
    assert str(e.value) == line


def test_progressive_resizing_is_refused_where_the_image_gets_too_small():
    with pytest.raises(ConfigError) as e:  # digits are 8x8: 0.75 gives 6 pixels
        RunConfig(dataset="digits", model="resnet", progressive_epochs=1)
    assert str(e.value).startswith("progressive_scale: 0.75 gives 6 pixels a side on digits's 8x8 images")
    assert progressive_side(RunConfig(**{**MNIST, "model": "resnet", "progressive_epochs": 2})) == 21  # 28 x 0.75


def test_flips_are_allowed_where_images_may_be_mirrored_and_effective_batch():
    cfg = RunConfig(dataset="synthetic", tta="flip_translate", gradient_accumulation_steps=2, synthetic_samples=1280)
    assert cfg.steps_per_epoch() == 8 and effective_batch_size(cfg) == 256


def test_cli_flags_and_their_short_spellings_reach_the_config():
    from engine.cli.main import build_parser
    from engine.cli.flags import config_from_args

    args = build_parser().parse_args(["run", "--dataset", "mnist5k", "--optimizer", "muon", "--ema", "0.99",
                                      "--cutmix", "0.5", "--gradient-accumulation", "2", "--tta", "translate"])
    cfg = config_from_args(args)
    assert (cfg.optimizer, cfg.ema_momentum, cfg.cutmix_factor, cfg.gradient_accumulation_steps, cfg.tta) == \
        ("muon", 0.99, 0.5, 2, "translate")
    args = build_parser().parse_args(["run", "--dataset", "mnist5k", "--model", "resnet", "--progressive-epochs", "2",
                                      "--progressive-scale", "0.5", "--muon-conv", "adamw"])
    cfg = config_from_args(args)
    assert (cfg.progressive_epochs, cfg.progressive_scale, cfg.muon_conv) == (2, 0.5, "adamw")


def test_the_baseline_has_none_of_the_techniques_but_keeps_the_optimizer():
    cfg = RunConfig(**MNIST, optimizer="lamb", ema_momentum=0.99, cutmix_factor=1.0, gradient_accumulation_steps=2,
                    tta="translate")
    b = baseline_config(cfg)
    assert (b.optimizer, b.ema_momentum, b.cutmix_factor, b.gradient_accumulation_steps, b.tta,
            b.progressive_epochs) == ("lamb", 0.0, 0.0, 1, "off", 0)


def test_the_autopilot_may_pick_them_and_the_ablation_names_them():
    from engine.hardware.verdicts import verdicts

    facts = sp.facts_from_quick({"backends": {"tensorflow": "2.21.0"}})
    base = RunConfig(**MNIST, epochs=10)
    space = sp.search_space(verdicts(facts, "auto"), base, facts)
    c = space.choices
    assert c["optimizer"] == ("adam", "muon", "lamb", "schedule_free_adamw")
    assert c["ema_momentum"] == (0.0, 0.9) and c["cutmix_factor"] == (0.0, 1.0)
    assert c["gradient_accumulation_steps"] == (1, 2)
    assert c["tta"] == ("off", "translate") and c["progressive_epochs"] == (0,)  # digits: no flips; cnn: no resizing
    params = {"precision": "float32", "steps_per_execution": 1, "batch_size": 128, "schedule": "one_cycle",
              "cycle_epochs": 5, "max_lr": 0.01, "optimizer": "schedule_free_adamw", "ema_momentum": 0.9,
              "cutmix_factor": 1.0, "gradient_accumulation_steps": 2, "tta": "translate"}
    trial = sp.trial_config(base, params)
    assert (trial.optimizer, trial.schedule, trial.gradient_accumulation_steps) == ("schedule_free_adamw", "constant", 2)
    b = baseline_config(base)
    assert sp.describe(trial, b) == ("schedule-free AdamW · weight EMA 0.9 (validated on the averaged weights) · CutMix 1 · "
                                     "gradient accumulation 2 (effective batch 256) · test-time augmentation: "
                                     "translate")
    ablation = sp.ablation_configs(trial, b)
    assert [a["technique"] for a in ablation] == ["optimizer", "ema", "cutmix", "gradient_accumulation", "tta"]
    assert ablation[0]["config"].optimizer == "adam" and ablation[4]["config"].tta == "off"
    # Accumulation where it cannot go (one-cycle momentum with Adam): the trial runs without it.
    assert sp.trial_config(base, {**params, "optimizer": "adam"}).gradient_accumulation_steps == 1
    # CutMix cannot be XLA-compiled on TensorFlow: an XLA trial runs without it.
    assert sp.trial_config(base, {**params, "jit_compile": True}).cutmix_factor == 0.0
    assert sp.trial_config(base, {**params, "jit_compile": True, "backend": "jax"}).cutmix_factor == 1.0


# --- Keras objects ------------------------------------------------------------------------
@pytest.mark.tf
def test_ema_update_by_hand():
    """SGD lr 0.1 on w = 1 with gradient 1 each step, EMA momentum 0.5. Keras's first
    average is the weight itself (momentum 0 at step 0): w 0.9, 0.8, 0.7 -> average
    0.9, 0.5*0.9 + 0.5*0.8 = 0.85, 0.5*0.85 + 0.5*0.7 = 0.775."""
    cfg = RunConfig(**MNIST, optimizer="sgd", momentum=0.0, learning_rate=0.1, ema_momentum=0.5)
    opt = schedules.build_optimizer(cfg, 32)
    w = keras.Variable(np.float32(1.0))
    averages = []
    for _ in range(3):
        opt.apply_gradients([(keras.ops.ones(()), w)])
        averages.append(float(keras.ops.convert_to_numpy(opt._model_variables_moving_average[0])))
    assert float(keras.ops.convert_to_numpy(w)) == pytest.approx(0.7)
    assert averages == pytest.approx([0.9, 0.85, 0.775])
    assert [type(c).__name__ for c in techniques.ema_callback(cfg)] == ["SwapEMAWeights"]
    assert techniques.ema_callback(cfg.replace(ema_momentum=0.0)) == []


@pytest.mark.tf
def test_gradient_accumulation_updates_once_per_two_batches():
    """Gradients 1 and 3, then 5 and 7: w = 1 stays after batch 1, becomes 1 - 0.1 * (1+3)/2 =
    0.8 after batch 2, stays, then 0.8 - 0.1 * (5+7)/2 = 0.2; 6 batches are 3 updates."""
    cfg = RunConfig(**MNIST, optimizer="sgd", momentum=0.0, learning_rate=0.1, gradient_accumulation_steps=2)
    opt = schedules.build_optimizer(cfg, 32)
    w = keras.Variable(np.float32(1.0))
    seen = []
    for g in (1.0, 3.0, 5.0, 7.0, 0.0, 0.0):
        opt.apply_gradients([(keras.ops.convert_to_tensor(np.float32(g)), w)])
        seen.append(round(float(keras.ops.convert_to_numpy(w)), 6))
    assert seen == [1.0, 0.8, 0.8, 0.2, 0.2, 0.2]
    assert int(keras.ops.convert_to_numpy(opt.iterations)) == 3  # updates
    assert int(keras.ops.convert_to_numpy(techniques.step_counter(opt))) == 6  # batches


def _pick_top_left(shape=(2, 3, 1)):
    """A model whose output is the top-left pixel of its input (a Dense with one weight of 1)."""
    inp = keras.Input(shape)
    x = keras.layers.Flatten()(inp)
    dense = keras.layers.Dense(1, use_bias=False)
    out = dense(x)
    model = keras.Model(inp, out)
    kernel = np.zeros((int(np.prod(shape)), 1), np.float32)
    kernel[0, 0] = 1.0
    dense.set_weights([kernel])
    return model


@pytest.mark.tf
@pytest.mark.parametrize("mode, expected", [
    ("off", 1.0),
    ("flip", 2.0),             # (x[0,0] + x[0,2]) / 2 = (1 + 3) / 2
    ("translate", 3.0),        # 1/2 * 1 + 1/4 * 5 (moved up-left) + 1/4 * 5 (moved down-right, reflected)
    ("flip_translate", 3.5),   # 1/4 * 1 + 1/4 * 3 + 4 * 1/8 * 5
])
def test_tta_averages_the_views_by_hand(mode, expected):
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 2, 3, 1)  # [[1, 2, 3], [4, 5, 6]]
    model = _pick_top_left()
    techniques.install_tta(model, mode)
    assert float(model.predict(x, verbose=0)[0, 0]) == pytest.approx(expected)
    assert float(keras.ops.convert_to_numpy(model(x, training=True))[0, 0]) == pytest.approx(1.0)  # training: untouched


@pytest.mark.tf
def test_cutmix_mixes_labels_by_the_area_pasted_and_repeats_with_its_seed():
    n, side = 6, 16
    x = np.repeat(np.arange(n, dtype=np.float32), side * side).reshape(n, side, side, 1)  # image i is all i
    y = np.eye(n, dtype=np.float32)
    aug = techniques.StepAugment(1.0, seed=3)
    xa, ya = (keras.ops.convert_to_numpy(t) for t in aug.transform(x, y, np.int64(5)))
    xb, _ = (keras.ops.convert_to_numpy(t) for t in aug.transform(x, y, np.int64(5)))
    xc, _ = (keras.ops.convert_to_numpy(t) for t in aug.transform(x, y, np.int64(6)))
    assert np.array_equal(xa, xb) and not np.array_equal(xa, xc)  # (seed, step) decides the cut
    np.testing.assert_allclose(ya.sum(axis=1), 1.0, rtol=1e-6)
    for i in range(n):
        own = float(np.mean(xa[i] == i))
        # The label keeps the share of the image's own pixels (the box is cut on whole pixels:
        # within one row and one column of the float box, 2/16 of the side each way).
        assert ya[i, i] == pytest.approx(own, abs=2 * 2 / side) or ya[i, i] == pytest.approx(1.0)


@pytest.mark.tf
def test_progressive_resizing_trains_smaller_images_then_full_size():
    from engine.training import models

    aug = techniques.StepAugment(0.0, seed=0, size=14)
    x = np.ones((2, 28, 28, 1), np.float32)
    small, _ = aug.transform(x, np.eye(2, dtype=np.float32), 0)
    assert tuple(small.shape) == (2, 14, 14, 1)
    model = models.build("resnet", (28, 28, 1), 10, any_size=True)
    assert tuple(model(small).shape) == (2, 10) and tuple(model(x).shape) == (2, 10)
    aug.set_size(model, None)
    assert aug.size is None and model.train_function is None
    assert tuple(aug.transform(x, np.eye(2, dtype=np.float32), 0)[0].shape) == (2, 28, 28, 1)


@pytest.mark.tf
def test_muon_orthogonalises_conv_filters_only_when_reshaping():
    from engine.training import models

    model = models.build("cnn", (28, 28, 1), 10)
    ranks = {v.path: len(v.shape) for v in model.trainable_variables}
    for conv, muon_ranks in (("reshape", [2, 4, 4]), ("adamw", [2])):  # two conv kernels, one hidden dense
        cfg = RunConfig(**MNIST, optimizer="muon", muon_conv=conv)
        opt = schedules.build_optimizer(cfg, 32)
        assert techniques.exclude_from_muon(opt, model) == ["^head/bias$", "^head/kernel$"]
        opt.build(model.trainable_variables)
        split = techniques.muon_split(opt)
        assert sorted(ranks[p] for p in split["muon"]) == muon_ranks
        assert "head/kernel" in split["adamw"]  # the head keeps AdamW
    # A user's model whose head has no telling name (examples/my_model.py: dense_1 before the
    # softmax, itself found by structure), behind a Dropout and a float32 Activation, with an
    # embedding: the head's kernel and the table keep AdamW, the hidden Dense gets Muon.
    from keras import layers

    inp = keras.Input((6,), dtype="int32")
    x = layers.Flatten()(layers.Embedding(20, 4, name="words")(inp))
    x = layers.Dense(8, activation="relu", name="hidden")(x)
    out = layers.Activation("softmax", dtype="float32")(layers.Dense(10, name="dense_1")(layers.Dropout(0.1)(x)))
    own = keras.Model(inp, out)
    opt = schedules.build_optimizer(RunConfig(**MNIST, optimizer="muon"), 32)
    techniques.exclude_from_muon(opt, own)
    opt.build(own.trainable_variables)
    split = techniques.muon_split(opt)
    assert split["muon"] == ["hidden/kernel"]
    assert sorted(split["adamw"]) == ["dense_1/bias", "dense_1/kernel", "hidden/bias", "words/embeddings"]
    # examples/my_model.py itself: its output layer's kernel keeps AdamW, its hidden Dense gets Muon.
    from engine.training import user_model

    mine = user_model.build(str(Path(__file__).resolve().parents[1] / "examples" / "my_model.py") + ":build",
                            (8, 8, 1), 10)
    opt = schedules.build_optimizer(RunConfig(**MNIST, optimizer="muon"), 32)
    techniques.exclude_from_muon(opt, mine)
    opt.build(mine.trainable_variables)
    split = techniques.muon_split(opt)
    assert mine.layers[-1].kernel.path in split["adamw"] and mine.layers[-2].kernel.path in split["muon"]
    # One step on a conv kernel: the update is the orthogonalised (flattened) momentum, not AdamW's.
    opt = techniques.ConvMuon(learning_rate=0.1, weight_decay=None, rms_rate=None, exclude_layers=["head"])
    k = keras.Variable(np.zeros((3, 3, 2, 4), np.float32), name="kernel")
    g = np.random.RandomState(0).randn(3, 3, 2, 4).astype(np.float32)
    opt.apply_gradients([(keras.ops.convert_to_tensor(g), k)])
    step = -keras.ops.convert_to_numpy(k).reshape(18, 4) / 0.1
    s = np.linalg.svd(step, compute_uv=False)
    assert s.max() < 1.3 and s.min() > 0.5  # Newton-Schulz: singular values pushed towards 1


# --- Train page ---------------------------------------------------------------------------
@pytest.mark.page
def test_train_page_offers_them_with_their_effective_batch_and_refusals(store_home):
    from tests.helpers.pages import app, no_errors

    at = app()
    at.selectbox(key="dataset").set_value("mnist5k").run()
    no_errors(at)
    assert at.selectbox(key="tta").options == ["off", "translate"]  # no flips on digits
    at.number_input(key="gradient_accumulation_steps").set_value(2).run()
    assert "Effective batch: **256** samples per update (2 x 128)" in [m.value for m in at.markdown]
    at.selectbox(key="optimizer").set_value("muon").run()
    assert at.selectbox(key="muon_conv").value == "reshape"
    at.number_input(key="progressive_epochs").set_value(1).run()
    shown = " ".join(str(e.value) for e in [*at.error, *at.warning, *at.markdown, *at.caption])
    assert "progressive_epochs: 1 needs a model that pools globally before its head" in shown
    captions = " ".join(c.value for c in at.caption)
    assert "Yun et al. 2019" in captions and "airbench94" in captions and "Polyak" in captions


def test_hardware_verdicts_weigh_accumulation_against_a_larger_batch_by_gpu_memory():
    from engine.hardware.verdicts import technique_verdicts

    def by_option(facts, device="auto"):
        return {v["option"]: (v["verdict"], v["reason"]) for v in technique_verdicts(facts, device)}

    small = by_option({"gpus": [{"name": "T4", "compute_capability": [7, 5], "memory_mib": 8 * 1024}]})
    assert small["gradient_accumulation"] == ("faster", "a GPU with 8 GiB: a large-batch recipe may not fit one "
                                              "step; accumulating k batches gives its effective batch in the "
                                              "memory of one")
    big = by_option({"gpus": [{"name": "NVIDIA H200", "compute_capability": [9, 0], "memory_mib": 143771}]})
    assert big["gradient_accumulation"][0] == "neutral" and big["gradient_accumulation"][1].startswith(
        "a GPU with 140 GiB fits large batches")
    cpu = by_option({"gpus": []})
    assert (cpu["muon"][0], cpu["tta"][0], cpu["progressive_resizing"][0]) == ("measure", "measure", "faster")
    assert set(by_option({"gpus": []}, "gpu").values()) == {("unavailable", "no GPU visible to TensorFlow")}


def test_tables_and_show_name_the_techniques_a_run_uses():
    from engine.cli.printing import techniques_line
    from engine.charts.style import config_summary

    cfg = RunConfig(**MNIST, optimizer="muon", ema_momentum=0.99, gradient_accumulation_steps=2,
                    tta="translate", epochs=3).to_dict()
    assert config_summary(cfg) == ("mnist5k · cnn · fp32 · 1 device · batch 128 · Muon · EMA 0.99 · accumulate 2 "
                                   "(effective batch 256) · TTA translate · 3 epochs")
    assert techniques_line(cfg) == ("Muon (conv filters reshaped to 2-D) · weight EMA 0.99 (validated on the averaged "
                                    "weights) · gradient accumulation 2 (effective batch 256) · test-time "
                                    "augmentation: translate")
    assert techniques_line(RunConfig(**MNIST).to_dict()) is None


# --- real runs ----------------------------------------------------------------------------
@pytest.mark.tf
def test_a_run_with_ema_cutmix_accumulation_and_tta_trains_and_records_them():
    import threading

    from engine.training.train import train

    cfg = RunConfig(dataset="digits", epochs=2, ema_momentum=0.9, cutmix_factor=1.0, gradient_accumulation_steps=2,
                    tta="translate", optimizer="muon")
    plans = []
    out = train(cfg, lambda table, row: None, threading.Event(), on_setup=lambda env, plan: plans.append(plan))
    assert out.status == "completed", out.error
    plan = plans[0]
    assert (plan["effective_batch_size"], plan["updates_per_epoch"], plan["tta"], plan["ema_momentum"]) == \
        (256, 6, "translate", 0.9)  # 12 batches an epoch, 2 per update
    assert plan["muon_variables"]["muon"] == 3 and plan["muon_variables"]["conv_kernels"] == "reshape"
    assert int(keras.ops.convert_to_numpy(out.model.optimizer.iterations)) == 12  # 2 epochs x 6 updates
    assert 0.0 < out.summary["final_val_accuracy"] <= 1.0


@pytest.mark.tf
def test_a_progressive_resizing_run_trains_at_two_sizes():
    import threading

    from engine.training.train import train

    # The fused optimizer: Keras's Adam update over the resnet's variables is traced once per phase.
    cfg = RunConfig(dataset="synthetic", model="resnet", synthetic_shape=(16, 16, 3), synthetic_samples=64,
                    batch_size=32, epochs=2, progressive_epochs=1, progressive_scale=0.5, ema_momentum=0.5,
                    fused_optimizer=True)
    plans = []
    out = train(cfg, lambda table, row: None, threading.Event(), on_setup=lambda env, plan: plans.append(plan))
    assert out.status == "completed", out.error
    assert [(p["first_epoch"], p["end_epoch"], p["image_side"]) for p in plans[0]["phases"]] == [(0, 1, 8), (1, 2, None)]
    assert out.summary["epochs_run"] == 2
    assert "finalize_variable_values" not in out.model.optimizer.__dict__  # the EMA weights reach the model at the end
