"""Run configuration: one frozen, fully validated dataclass (no TensorFlow here).

A `RunConfig` is checked completely on construction, before any TF work, so
that a bad value costs the user one line instead of a traceback from a worker.
Machine-dependent checks (is there a GPU or TPU?) live in engine.config.preflight,
because a stored config must stay loadable on any machine.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, fields
from typing import Optional

from engine.data.meta import canonical, check_split, dataset_info, target_for
from engine.base.errors import ConfigError

PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")
DEVICE_TYPES = ("auto", "cpu", "gpu", "tpu")
# keras.applications backbones and their native (ImageNet) input size, pixels a side.
BACKBONES = {"mobilenetv2": 224, "resnet50": 224, "efficientnetb0": 224}
MODELS = ("mlp", "cnn", "resnet", *BACKBONES)
MIN_BACKBONE_SIZE = 32  # keras.applications' smallest accepted input (min_size=32)
# A user's own model (docs/your-own-model.md): "path/to/file.py:build" names a function
# build(input_shape, num_classes) -> keras.Model; "path/to/model.keras" a saved model.
# "keep": a .keras model starts from its saved weights; "fresh": architecture only.
MODEL_WEIGHTS = ("keep", "fresh")
# Largest user model files read (bytes): a model file is code, a .keras file code and weights.
MAX_MODEL_PY_BYTES = 1 << 20
MAX_MODEL_KERAS_BYTES = 1 << 30
OPTIMIZERS = ("adam", "sgd", "rmsprop", "muon", "schedule_free_adamw", "lamb")
# What Muon does with a 4-D conv kernel (engine.training.techniques.ConvMuon): "reshape" flattens
# it to (kh*kw*cin, cout) for the orthogonalisation, as airbench94_muon does; "adamw" is
# keras.optimizers.Muon as shipped (AdamW on every variable that is not 2-D).
MUON_CONV = ("reshape", "adamw")
# Test-time augmentation at validation: predictions averaged over these views.
TTA_MODES = ("off", "flip", "translate", "flip_translate")
# Images that must not be mirrored: a mirrored digit is another glyph or none.
NO_FLIP_DATASETS = ("digits", "mnist5k", "mnist")
# Models whose head pools globally, so they train on a smaller image (progressive resizing).
PROGRESSIVE_MODELS = ("resnet",)
MIN_PROGRESSIVE_SIDE = 8  # pixels a side, the smallest image a progressive epoch trains on
FUSED_OPTIMIZERS = ("adam", "sgd")  # those engine.training.fused_optimizer fuses
SCHEDULES = ("constant", "warmup_cosine", "warmup_step", "cyclic", "one_cycle")
CYCLIC_MODES = ("triangular", "triangular2", "exp_range")
# Keras 3 backends a run may use (KERAS_BACKEND, set by the worker before Keras is imported).
BACKENDS = ("tensorflow", "jax")
# Why PyTorch is refused for now (one line, shown at config check).
TORCH_REFUSAL = ("from the public registry it brings about 6 GB of CUDA libraries, too much for CI "
                 "to test; use tensorflow or jax")


def _setting(default, help_text: str):
    """A RunConfig field with its one-line help (`metadata["help"]`: the CLI's --help, the Train
    page's captions; `SETTING_HELP` gathers them)."""
    return dataclasses.field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines one training run.

    Batch sizes are *global* (all replicas together); the per-replica batch is
    ``batch_size // devices``.  Times are in seconds, rates in samples/s.

    Raises:
        ConfigError: on construction, for the first invalid field.
    """

    dataset: str = _setting("digits", "digits (bundled 8x8 images), mnist5k (bundled 5,000 real MNIST 28x28), "
                            "synthetic (random, throughput only), mnist, fashion_mnist, cifar10 (Keras cache or "
                            "download), user:NAME (registered), or a path to a .npz, folder or .zip")
    model: str = _setting("cnn", "mlp, cnn (small CNN for digits), resnet (ResNet-style), a keras.applications "
                          "backbone: mobilenetv2, resnet50, efficientnetb0; or your own: path/to/file.py:build (a "
                          "function build(input_shape, num_classes) -> keras.Model) or path/to/model.keras")
    model_weights: str = _setting("keep", "with a .keras model: keep (start from its saved weights) or fresh "
                                  "(architecture only)")
    backend: str = _setting("tensorflow", "Keras backend: tensorflow (default) or jax (XLA-compiled always, no "
                            "TensorFlow imported); pytorch is refused for now")
    precision: str = _setting("float32", "float32, mixed_float16 (loss scaling on) or mixed_bfloat16 (no loss "
                              "scaling)")
    device_type: str = _setting("auto", "auto (GPU if present, else CPU), cpu, gpu or tpu")
    devices: int = _setting(1, "replicas per worker for data parallelism; more than the machine has are simulated "
                            "logical devices")
    workers: int = _setting(1, "worker processes joined by MultiWorkerMirroredStrategy (TF_CONFIG); replicas = "
                            "devices x workers")
    batch_size: int = _setting(128, "global batch size (all replicas together); per-replica batch = global / devices")
    epochs: int = _setting(10, "passes over the training set")
    steps_per_execution: int = _setting(1, "batches fused into one call of the compiled train step")
    jit_compile: bool = _setting(False, "compile the train step with XLA (always on with backend jax)")
    # One TF training kernel per variable for the optimizer's update (engine.training.fused_optimizer).
    fused_optimizer: bool = _setting(False, "apply the optimizer's update with one TensorFlow kernel per variable "
                                     "(ResourceApplyAdam / ResourceApplyKerasMomentum; adam or sgd, TensorFlow only)")
    optimizer: str = _setting("adam", "adam, sgd (with momentum), rmsprop, muon (Jordan et al. 2024: orthogonalised "
                              "momentum; the head and 1-D weights get AdamW), schedule_free_adamw (Defazio et al. "
                              "2024: no schedule needed) or lamb (You et al. 2020: per-layer trust ratio, for large "
                              "batches)")
    learning_rate: float = _setting(1e-3, "base learning rate (before linear scaling)")
    momentum: float = _setting(0.9, "SGD momentum")
    seed: int = _setting(0, "random seed for the weights, shuffling, augmentation and synthetic data (a "
                         "comparison's pair i uses seed + i); the validation draw has its own, validation_seed")
    validation_fraction: float = _setting(0.2, "share of samples held out from training (stratified): half is "
                                          "validation (targets, stopping), half a fixed test set that nothing "
                                          "steers by; all of it is validation when the data set has a test split of "
                                          "its own")
    # The validation draw's own seed: every run seed of a data set is validated on the same
    # samples (as MLPerf's fixed evaluation set), so seeds differ only in training.
    validation_seed: int = _setting(0, "seed of the validation draw, apart from the run's seed so that every seed "
                                    "is validated (targets, stopping) on the same samples; change it to vary the "
                                    "draw")
    target_accuracy: Optional[float] = _setting(None, "validation accuracy whose first crossing time is reported "
                                                "(time to accuracy); empty: the data set's default (digits 0.95, "
                                                "mnist5k 0.965, mnist 0.98, fashion_mnist 0.88, cifar10 0.70)")
    stop_at_target: bool = _setting(False, "end the run at the first validation at or above the target accuracy "
                                    "(time to accuracy is all that is measured; the autopilot's trials do this)")
    # Synthetic data (pure-throughput checks, as classic TF benchmark harnesses do).
    synthetic_shape: tuple = _setting((32, 32, 3), "synthetic image shape H,W,C")
    synthetic_classes: int = _setting(10, "synthetic class count")
    synthetic_samples: int = _setting(2048, "synthetic sample count")
    # Learning-rate schedule (Smith 2017; Smith & Topin 2018; Goyal et al. 2017).
    schedule: str = _setting("constant", "constant, warmup_cosine, warmup_step, cyclic (Smith 2017) or one_cycle "
                             "(Smith & Topin 2018)")
    warmup_epochs: float = _setting(0.0, "linear learning-rate warmup length in epochs (Goyal et al. 2017)")
    max_lr: Optional[float] = _setting(None, "peak learning rate for cyclic / one_cycle (default 10x the base)")
    scale_lr: bool = _setting(False, "linear scaling rule: lr x global batch / reference batch (Goyal et al. 2017)")
    reference_batch_size: int = _setting(128, "batch size the base learning rate was tuned for")
    cyclic_mode: str = _setting("triangular", "triangular, triangular2 or exp_range")
    half_cycle_epochs: float = _setting(2.0, "cyclic: epochs from base to max learning rate")
    cyclic_gamma: float = _setting(0.999, "cyclic exp_range: amplitude decay per step")
    step_decay_epochs: float = _setting(3.0, "warmup_step: epochs between decays")
    step_decay_rate: float = _setting(0.1, "warmup_step: factor applied at each decay")
    one_cycle_pct_start: float = _setting(0.3, "one_cycle: share of training spent ramping up")
    one_cycle_div_factor: float = _setting(25.0, "one_cycle: start lr = max_lr / div_factor")
    one_cycle_final_div_factor: float = _setting(1e4, "one_cycle: final lr = start lr / final_div_factor")
    reduce_on_plateau: bool = _setting(False, "halve the learning rate when validation loss stalls (constant "
                                       "schedule only)")
    # Regularisers that change the targets.
    label_smoothing: float = _setting(0.0, "label smoothing epsilon (0 = off; Szegedy et al. 2016)")
    mixup_alpha: float = _setting(0.0, "mixup Beta(alpha, alpha) (0 = off; Zhang et al. 2018)")
    save_model: bool = _setting(False, "save the trained model (.keras) next to the store")
    # Data: original labels to keep (renumbered 0..k-1 in this order; empty = all),
    # and input-pipeline options (engine.data.pipeline).
    label_subset: tuple = _setting((), "original labels to keep, renumbered 0..k-1 in this order, e.g. 5,6,7,8,9 "
                                   "(empty = all)")
    data_cache: bool = _setting(False, "cache the preprocessed examples in memory after the first epoch")
    data_parallel_map: bool = _setting(True, "preprocess uint8 images batch by batch on parallel threads (tf.data "
                                       "AUTOTUNE); off = one thread")
    data_prefetch: bool = _setting(True, "prepare the next batches while the current step computes (tf.data "
                                   "prefetch)")
    # keras.applications backbones: input size (0 = the backbone's native size) and ImageNet weights.
    image_size: int = _setting(0, "backbones only: resize images to this many pixels a side (0 = native 224; min 32)")
    pretrained: bool = _setting(False, "backbones only: start from ImageNet weights (Keras cache or download)")
    # Transfer learning (engine.training.transfer): start from a saved run's weights.
    init_from: Optional[int] = _setting(None, "run id of a completed run that saved its model: start from its "
                                        "weights (transfer)")
    freeze_epochs: int = _setting(1, "transfer: epochs with the taken-over layers frozen before they are fine-tuned")
    finetune_lr_factor: float = _setting(0.1, "transfer: learning rate factor for fine-tuning after unfreezing (0.1 "
                                         "= 10x lower)")
    # Techniques of today's fast-training records (engine.training.techniques, docs/techniques.md).
    muon_conv: str = _setting("reshape", "muon: reshape (conv filters flattened to 2-D and orthogonalised, as "
                              "airbench94_muon) or adamw (keras.optimizers.Muon as shipped: conv kernels get AdamW)")
    ema_momentum: float = _setting(0.0, "weight EMA momentum, e.g. 0.99 (0 = off; Polyak averaging): validation and "
                                   "the saved model use the averaged weights (keras use_ema + SwapEMAWeights)")
    cutmix_factor: float = _setting(0.0, "CutMix (Yun et al. 2019; keras.layers.CutMix factor, 0 = off, up to 1): "
                                    "pastes a box of another image, labels mixed by area; box share ~ Beta(a, a), a "
                                    "~ U(0, factor); in the train step")
    gradient_accumulation_steps: int = _setting(1, "batches whose gradients are averaged into one update (1 = off): "
                                                "effective batch = global batch x this, in the memory of one batch")
    tta: str = _setting("off", "test-time augmentation at validation: off, flip (horizontal), translate (1 pixel "
                        "each way) or flip_translate, predictions averaged (airbench94); flips refused on digits")
    progressive_epochs: int = _setting(0, "progressive resizing: first epochs trained on smaller images (0 = off; "
                                       "fast.ai DAWNBench); resnet only, validation stays at full size")
    progressive_scale: float = _setting(0.75, "progressive resizing: side of the smaller images as a share of the "
                                        "full side")

    def __post_init__(self):
        # Normalise before validating: a path must survive the worker's other
        # working folder, and JSON gives lists where tuples are meant.
        if isinstance(self.dataset, str):
            object.__setattr__(self, "dataset", canonical(self.dataset))
        if isinstance(self.model, str) and user_model(self.model):
            object.__setattr__(self, "model", _absolute_model(self.model))
        if isinstance(self.label_subset, list):
            object.__setattr__(self, "label_subset", tuple(self.label_subset))
        if self.backend == "jax":
            # JAX always compiles the train step with XLA (Keras's jit_compile=False
            # would run it op by op, a debugging mode): the field reads as it runs.
            object.__setattr__(self, "jit_compile", True)
        _validate(self)

    # --- derived values -------------------------------------------------
    @property
    def replicas(self) -> int:
        """Total replicas: devices per worker x workers."""
        return self.devices * self.workers

    @property
    def per_replica_batch_size(self) -> int:
        """Samples each replica sees per step (global batch / replicas)."""
        return self.batch_size // self.replicas

    def data_sizes(self) -> tuple[int, int]:
        """(train samples, validation samples). ceil(validation_fraction x N) samples are
        held out from training: without a test split of its own, half of them (a fixed
        draw, engine.data.meta.test_count) is the data set's test set and the rest is
        validation; with one, they are all validation and the own test split is the test set."""
        from engine.data.meta import test_count

        info = dataset_info(self.dataset, self)
        n_held = math.ceil(self.validation_fraction * info.samples)
        if info.test_samples:
            return info.samples - n_held, n_held
        return info.samples - n_held, n_held - test_count(n_held)

    def test_size(self) -> int:
        """Test samples: the data set's own test split, else half of those held out."""
        from engine.data.meta import test_count

        info = dataset_info(self.dataset, self)
        return info.test_samples or test_count(math.ceil(self.validation_fraction * info.samples))

    @property
    def backbone(self) -> bool:
        """Whether the model is a keras.applications backbone."""
        return self.model in BACKBONES

    @property
    def input_size(self) -> int:
        """Side (pixels) a backbone's input is resized to; 0 for the own models."""
        return (self.image_size or BACKBONES[self.model]) if self.backbone else 0

    def steps_per_epoch(self) -> int:
        """Optimizer steps per epoch; a partial last batch counts as a step only
        with one replica (with several, batches must be of equal size)."""
        n_train, _ = self.data_sizes()
        if self.replicas > 1:
            return n_train // self.batch_size
        return math.ceil(n_train / self.batch_size)

    def dropped_per_epoch(self) -> int:
        """Training samples dropped each epoch to keep batches of equal size."""
        n_train, _ = self.data_sizes()
        return n_train % self.batch_size if self.replicas > 1 else 0

    # --- serialisation --------------------------------------------------
    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["synthetic_shape"] = list(self.synthetic_shape)
        d["label_subset"] = list(self.label_subset)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        """Build from a dict; unknown keys raise ConfigError."""
        known = {f.name for f in fields(cls)}
        for key in d:
            if key not in known:
                import difflib

                close = difflib.get_close_matches(key, known, n=3)
                raise ConfigError(key, d[key], "is not a known setting",
                                  f"did you mean {' or '.join(close)}?" if close
                                  else "see python -m engine run --help for the settings")
        d = dict(d)
        for key in ("synthetic_shape", "label_subset"):
            if isinstance(d.get(key), list):
                d[key] = tuple(d[key])
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> "RunConfig":
        return cls.from_dict(json.loads(text))

    def replace(self, **changes) -> "RunConfig":
        """A copy with `changes` applied (validated again)."""
        return dataclasses.replace(self, **changes)


def _choice(name, value, options):
    if value not in options:
        raise ConfigError(name, value, "is not supported", f"use one of: {', '.join(options)}")


def user_model(spec) -> Optional[tuple[str, Optional[str]]]:
    """(path, function name or None for a .keras file) when `spec` names a user's model
    file ("file.py:build" or "model.keras"), else None (a built-in model name or junk).
    No file is read here: a stored config must stay loadable on any machine."""
    if not isinstance(spec, str) or spec in MODELS:
        return None
    if spec.lower().endswith(".keras"):
        return spec, None
    path, sep, name = spec.rpartition(":")
    if sep and path.lower().endswith(".py") and name.isidentifier():
        return path, name
    return None


def _absolute_model(spec: str) -> str:
    """`spec` with an absolute path (the worker runs in another working folder)."""
    import os

    path, name = user_model(spec)
    path = os.path.abspath(os.path.expanduser(path))
    return path if name is None else f"{path}:{name}"


def _model(c: "RunConfig") -> None:
    """`model` is a built-in name, file.py:function or a .keras file (their contents: engine.config.preflight)."""
    if not isinstance(c.model, str):
        _choice("model", c.model, MODELS)
    if not c.model.strip():
        raise ConfigError("model", c.model, "is empty", "pick a model, or give path/to/file.py:build or "
                          "path/to/model.keras")
    if user_model(c.model) is None and c.model not in MODELS:
        if c.model.lower().endswith(".py") or ".py:" in c.model.lower():
            raise ConfigError("model", c.model, "names no Python function",
                              "write it as path/to/file.py:build (a function build(input_shape, num_classes))")
        if "/" in c.model or "." in c.model:
            raise ConfigError("model", c.model, "is neither a .py file with a function nor a .keras file",
                              "give path/to/file.py:build or path/to/model.keras")
        raise ConfigError("model", c.model, "is not supported", f"use one of: {', '.join(MODELS)}, "
                          "or your own: path/to/file.py:build or path/to/model.keras")
    _choice("model_weights", c.model_weights, MODEL_WEIGHTS)
    spec = user_model(c.model)
    if spec is not None and c.init_from is not None:
        raise ConfigError("init_from", c.init_from, "cannot be combined with your own model file",
                          "save the model you start from as .keras and give --model path/to/model.keras")
    if c.model_weights == "fresh" and (spec is None or spec[1] is not None):
        raise ConfigError("model_weights", "fresh", "applies only to a saved .keras model",
                          "set it to keep, or give --model path/to/model.keras")


def _int(name, value, lo, hi=None, fix=None):
    rng = f">= {lo}" if hi is None else f"between {lo} and {hi}"
    if isinstance(value, float) and value.is_integer():  # 3.0 from a JSON config: true, but not an int
        raise ConfigError(name, value, "is written as a decimal", fix or f"write it as {int(value)}")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(name, value, "is not a whole number", fix or f"use an integer {rng}")
    if value < lo or (hi is not None and value > hi):
        raise ConfigError(name, value, "is out of range", fix or f"use a value {rng}")


def _num(name, value, lo, hi, lo_open=False, hi_open=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(name, value, "is not a finite number", f"use a number between {lo} and {hi}")
    bad = (value <= lo if lo_open else value < lo) or (value >= hi if hi_open else value > hi)
    if bad:
        lb = "(" if lo_open else "["
        hb = ")" if hi_open else "]"
        raise ConfigError(name, value, "is out of range", f"use a value in {lb}{lo}, {hi}{hb}")


def _bool(name, value):
    if not isinstance(value, bool):
        raise ConfigError(name, value, "must be true or false",
                          "set it explicitly to true or false (Keras's 'auto' is not accepted)")


def _backend(c: RunConfig) -> None:
    """The backend, and the techniques that stay TensorFlow-only (one line each, saying why)."""
    if isinstance(c.backend, str) and c.backend.lower() in ("torch", "pytorch"):
        raise ConfigError("backend", c.backend, "is not supported yet", TORCH_REFUSAL)
    _choice("backend", c.backend, BACKENDS)
    if c.backend != "jax":
        return
    if c.workers != 1:
        raise ConfigError("workers", c.workers, "needs backend tensorflow: several worker processes train "
                          "together with MultiWorkerMirroredStrategy, which is TensorFlow-only",
                          "use workers 1 with backend jax, or backend tensorflow")
    if c.device_type == "tpu":
        raise ConfigError("device_type", "tpu", "needs backend tensorflow: SpeedLab runs TPUs with "
                          "TPUStrategy, which is TensorFlow-only", "use device_type auto, cpu or gpu with "
                          "backend jax, or backend tensorflow")


def nearest_divisible(batch: int, replicas: int) -> tuple[int, int]:
    """The nearest global batch sizes below and above `batch` divisible by `replicas`."""
    lower = max(replicas, (batch // replicas) * replicas)
    upper = lower + replicas if lower < batch else lower
    if lower == upper:
        upper = lower + replicas
    return lower, upper


def _validate(c: RunConfig) -> None:
    if not isinstance(c.label_subset, tuple):
        raise ConfigError("label_subset", c.label_subset, "is not a list of labels", "give labels such as 5,6,7,8,9")
    info = dataset_info(c.dataset, c)  # raises ConfigError for unknown or unusable data sets
    _backend(c)
    _model(c)
    _choice("precision", c.precision, PRECISIONS)
    _choice("device_type", c.device_type, DEVICE_TYPES)
    _int("devices", c.devices, 1, 64, fix="use 1 to 64 devices (replicas)")
    _int("workers", c.workers, 1, 64, fix="use 1 (this process) to 64 worker processes")
    _int("epochs", c.epochs, 1, 10_000)
    _int("batch_size", c.batch_size, 1, 1 << 20)
    _int("steps_per_execution", c.steps_per_execution, 1, 100_000)
    _bool("jit_compile", c.jit_compile)
    _bool("scale_lr", c.scale_lr)
    _bool("reduce_on_plateau", c.reduce_on_plateau)
    _bool("save_model", c.save_model)
    _bool("stop_at_target", c.stop_at_target)
    _choice("optimizer", c.optimizer, OPTIMIZERS)
    _bool("fused_optimizer", c.fused_optimizer)
    if c.fused_optimizer and c.backend == "jax":
        raise ConfigError("fused_optimizer", True, "is a TensorFlow technique (XLA already fuses a JAX step)",
                          "turn fused_optimizer off, or use backend tensorflow")
    if c.fused_optimizer and c.optimizer not in FUSED_OPTIMIZERS:
        raise ConfigError("fused_optimizer", True, f"has no fused kernel for optimizer {c.optimizer}",
                          f"use optimizer {' or '.join(FUSED_OPTIMIZERS)}, or turn fused_optimizer off")
    _num("learning_rate", c.learning_rate, 0.0, 10.0, lo_open=True)
    _num("momentum", c.momentum, 0.0, 1.0, hi_open=True)
    _int("seed", c.seed, 0, 2**31 - 1)
    _num("validation_fraction", c.validation_fraction, 0.0, 0.5, lo_open=True)
    _int("validation_seed", c.validation_seed, 0, 2**31 - 1)
    if c.target_accuracy is not None:
        _num("target_accuracy", c.target_accuracy, 0.0, 1.0, lo_open=True)
    if c.stop_at_target and target_for(c.target_accuracy, c.dataset) is None:
        raise ConfigError("stop_at_target", True, f"needs a target accuracy, and {c.dataset} has no default",
                          "set target_accuracy (e.g. 0.9) or turn stop_at_target off")
    if c.batch_size % c.replicas:
        lo, hi = nearest_divisible(c.batch_size, c.replicas)
        raise ConfigError("batch_size", c.batch_size,
                          f"is not divisible by {c.replicas} replicas",
                          f"use {lo} or {hi} (global batch = per-replica batch x replicas)")
    check_split(info, c.validation_fraction)  # every class keeps training samples
    n_train, _ = c.data_sizes()
    if c.batch_size > n_train:
        raise ConfigError("batch_size", c.batch_size,
                          f"is larger than the {n_train} training samples of {c.dataset}",
                          f"use at most {n_train}")
    spe = c.steps_per_epoch()
    if c.steps_per_execution > spe:
        raise ConfigError("steps_per_execution", c.steps_per_execution,
                          f"is more than the {spe} steps in one epoch",
                          f"use at most {spe}, or a smaller batch_size")
    # Schedules.
    _choice("schedule", c.schedule, SCHEDULES)
    _num("warmup_epochs", c.warmup_epochs, 0.0, float(c.epochs))
    if c.max_lr is not None:
        _num("max_lr", c.max_lr, 0.0, 10.0, lo_open=True)
    _int("reference_batch_size", c.reference_batch_size, 1)
    _choice("cyclic_mode", c.cyclic_mode, CYCLIC_MODES)
    _num("half_cycle_epochs", c.half_cycle_epochs, 0.0, 10_000.0, lo_open=True)
    _num("cyclic_gamma", c.cyclic_gamma, 0.0, 1.0, lo_open=True)
    _num("step_decay_epochs", c.step_decay_epochs, 0.0, 10_000.0, lo_open=True)
    _num("step_decay_rate", c.step_decay_rate, 0.0, 1.0, lo_open=True)
    _num("one_cycle_pct_start", c.one_cycle_pct_start, 0.0, 1.0, lo_open=True, hi_open=True)
    _num("one_cycle_div_factor", c.one_cycle_div_factor, 1.0, 1e6)
    _num("one_cycle_final_div_factor", c.one_cycle_final_div_factor, 1.0, 1e9)
    if c.schedule in ("cyclic", "one_cycle") and c.max_lr is not None and c.max_lr < c.learning_rate:
        raise ConfigError("max_lr", c.max_lr, f"is below learning_rate {c.learning_rate}",
                          "set max_lr above the base learning_rate")
    if c.warmup_epochs > 0 and c.schedule in ("cyclic", "one_cycle"):
        raise ConfigError("warmup_epochs", c.warmup_epochs, f"does not apply to schedule {c.schedule!r}",
                          "set warmup_epochs to 0 (one_cycle ramps up by itself; cyclic starts at the base LR)")
    if c.reduce_on_plateau and c.warmup_epochs > 0:
        raise ConfigError("reduce_on_plateau", True, "conflicts with a learning-rate warmup",
                          "set warmup_epochs to 0 or turn reduce_on_plateau off")
    if c.reduce_on_plateau and c.schedule != "constant":
        raise ConfigError("reduce_on_plateau", True, f"conflicts with schedule {c.schedule!r}",
                          "use a plateau reducer only with schedule 'constant'")
    _num("label_smoothing", c.label_smoothing, 0.0, 1.0, hi_open=True)
    _num("mixup_alpha", c.mixup_alpha, 0.0, 100.0)
    # Data pipeline, backbones, transfer.
    for name in ("data_cache", "data_parallel_map", "data_prefetch", "pretrained"):
        _bool(name, getattr(c, name))
    _int("image_size", c.image_size, 0, 1024, fix=f"use 0 (native size) or {MIN_BACKBONE_SIZE}..1024")
    if c.image_size and not c.backbone:
        raise ConfigError("image_size", c.image_size, f"applies only to keras.applications backbones, "
                          f"not to model {c.model!r}", f"set it to 0, or use model {', '.join(BACKBONES)}")
    if 0 < c.image_size < MIN_BACKBONE_SIZE:
        raise ConfigError("image_size", c.image_size, f"is below the {MIN_BACKBONE_SIZE} pixels "
                          "keras.applications backbones accept", f"use {MIN_BACKBONE_SIZE} or more")
    if c.pretrained and not c.backbone:
        raise ConfigError("pretrained", True, f"applies only to keras.applications backbones, not to "
                          f"model {c.model!r}", f"turn it off, or use model {', '.join(BACKBONES)}")
    if c.backbone and info.shape[2] not in (1, 3):
        raise ConfigError("model", c.model, f"needs images with 1 or 3 channels; {c.dataset} has "
                          f"{info.shape[2]}", "use mlp, cnn or resnet for this data")
    if c.init_from is not None:
        _int("init_from", c.init_from, 1, fix="give the id of a completed run that saved its model")
        if c.pretrained:
            raise ConfigError("init_from", c.init_from, "conflicts with pretrained ImageNet weights",
                              "start from one or the other: turn pretrained off or drop init_from")
    _int("freeze_epochs", c.freeze_epochs, 0, c.epochs,
         fix=f"use 0 (never frozen) up to epochs ({c.epochs})")
    _num("finetune_lr_factor", c.finetune_lr_factor, 0.0, 1.0, lo_open=True)
    _techniques(c, info)


def _techniques(c: RunConfig, info) -> None:
    """Muon, schedule-free AdamW, LAMB, weight EMA, CutMix, gradient accumulation, TTA and
    progressive resizing: ranges, and the combinations refused (one line each, saying why)."""
    _choice("muon_conv", c.muon_conv, MUON_CONV)
    if c.optimizer == "schedule_free_adamw" and (c.schedule != "constant" or c.reduce_on_plateau):
        raise ConfigError("optimizer", c.optimizer, f"replaces the learning-rate schedule, so schedule "
                          f"{c.schedule!r}{' with reduce_on_plateau' if c.reduce_on_plateau else ''} does not apply",
                          "use schedule constant (a warmup is fine) without reduce_on_plateau, or another optimizer")
    _num("ema_momentum", c.ema_momentum, 0.0, 1.0, hi_open=True)
    _num("cutmix_factor", c.cutmix_factor, 0.0, 1.0)
    if c.cutmix_factor > 0 and c.mixup_alpha > 0:
        raise ConfigError("cutmix_factor", c.cutmix_factor, "cannot be combined with mixup in one run "
                          "(SpeedLab mixes each batch one way)", "set cutmix_factor or mixup_alpha to 0")
    if c.cutmix_factor > 0 and c.jit_compile and c.backend == "tensorflow":
        raise ConfigError("cutmix_factor", c.cutmix_factor, "cannot be XLA-compiled on TensorFlow (keras.layers."
                          "CutMix draws with StatelessRandomGammaV3, which XLA has no kernel for)",
                          "turn jit_compile off, use backend jax, or set cutmix_factor to 0")
    if c.cutmix_factor > 0 and min(info.shape[:2]) < 2:
        raise ConfigError("cutmix_factor", c.cutmix_factor, f"needs images of at least 2x2 pixels; "
                          f"{c.dataset} has {info.shape[0]}x{info.shape[1]}", "set cutmix_factor to 0")
    k = c.gradient_accumulation_steps
    _int("gradient_accumulation_steps", k, 1, 1024, fix="use 1 (off) or 2 to 1024 batches per update")
    if k > 1:
        spe = c.steps_per_epoch()
        if c.fused_optimizer:
            raise ConfigError("gradient_accumulation_steps", k, "is not supported with the fused optimizer "
                              "update", "turn fused_optimizer off, or use gradient_accumulation_steps 1")
        if c.backend == "tensorflow" and c.replicas > 1:
            raise ConfigError("gradient_accumulation_steps", k, f"is not supported with {c.replicas} replicas on "
                              "TensorFlow (Keras branches around the replicas' gradient sync, which tf.distribute "
                              "cannot run)", "use 1 device and 1 worker, backend jax, or gradient_accumulation_steps 1")
        if c.precision == "mixed_float16":
            raise ConfigError("gradient_accumulation_steps", k, "is not supported with mixed_float16 (loss "
                              "scaling counts skipped updates by optimizer steps)",
                              "use mixed_bfloat16 or float32, or gradient_accumulation_steps 1")
        if c.schedule == "one_cycle" and c.optimizer in ("adam", "sgd"):
            raise ConfigError("gradient_accumulation_steps", k, "conflicts with one_cycle's momentum schedule "
                              "(Keras counts it in updates, the learning rate in batches)",
                              "use another schedule, or gradient_accumulation_steps 1")
        if spe % k:
            divisors = [d for d in range(2, min(spe, 64) + 1) if spe % d == 0][:4]
            raise ConfigError("gradient_accumulation_steps", k, f"does not divide the {spe} steps of an epoch "
                              "(an update would mix one epoch's last batches with the next epoch's)",
                              f"use {' or '.join(map(str, divisors))}" if divisors
                              else "use 1, or a batch_size that gives an even number of steps")
    _choice("tta", c.tta, TTA_MODES)
    if "flip" in c.tta and c.dataset in NO_FLIP_DATASETS:
        raise ConfigError("tta", c.tta, f"mirrors images, and a mirrored digit of {c.dataset} is another "
                          "glyph or none", "use tta translate, or off")
    _int("progressive_epochs", c.progressive_epochs, 0, c.epochs - 1,
         fix=f"use 0 (off) up to {c.epochs - 1}: the last epoch trains at full size")
    _num("progressive_scale", c.progressive_scale, 0.0, 1.0, lo_open=True, hi_open=True)
    if c.progressive_epochs:
        if c.model not in PROGRESSIVE_MODELS:
            raise ConfigError("progressive_epochs", c.progressive_epochs, f"needs a model that pools globally "
                              f"before its head; {c.model} "
                              + ("resizes every image to its own input size" if c.backbone
                                 else "flattens a fixed-size image"),
                              f"use model {' or '.join(PROGRESSIVE_MODELS)}, or progressive_epochs 0")
        side = progressive_side(c)
        if side < MIN_PROGRESSIVE_SIDE or side >= min(info.shape[:2]):
            raise ConfigError("progressive_scale", c.progressive_scale, f"gives {side} pixels a side on "
                              f"{c.dataset}'s {info.shape[0]}x{info.shape[1]} images",
                              f"pick a scale giving {MIN_PROGRESSIVE_SIDE} pixels or more, below the full size, "
                              "or progressive_epochs 0")
        if c.init_from is not None:
            raise ConfigError("progressive_epochs", c.progressive_epochs, "is not supported with init_from "
                              "(transfer learning has its own training phases)", "set progressive_epochs to 0")


def progressive_side(c: RunConfig) -> int:
    """Side (pixels) the first `progressive_epochs` epochs train at: the data's shorter side
    x progressive_scale, rounded; images are resized to side x side (square)."""
    info = dataset_info(c.dataset, c)
    return int(round(min(info.shape[:2]) * c.progressive_scale))


def effective_batch_size(c: RunConfig) -> int:
    """Samples per optimizer update: the global batch x gradient_accumulation_steps."""
    return c.batch_size * c.gradient_accumulation_steps


def baseline_config(c: RunConfig) -> RunConfig:
    """The like-for-like baseline of `c`: same backend, data, model, global batch, epochs,
    seed and optimizer; float32 on 1 device, steps_per_execution 1, no XLA, Keras's
    own (unfused) optimizer update, constant learning rate, no label smoothing or
    mixup, default input pipeline, trained from scratch (no init_from, no pretrained weights: transfer learning
    is one of the techniques measured against it)."""
    return c.replace(precision="float32", devices=1, workers=1, steps_per_execution=1, jit_compile=False,
                     fused_optimizer=False,
                     schedule="constant", warmup_epochs=0.0, scale_lr=False,
                     reduce_on_plateau=False, label_smoothing=0.0, mixup_alpha=0.0,
                     save_model=False, data_cache=False, data_parallel_map=True, data_prefetch=True,
                     init_from=None, pretrained=False, freeze_epochs=RunConfig.freeze_epochs,
                     finetune_lr_factor=RunConfig.finetune_lr_factor,
                     ema_momentum=0.0, cutmix_factor=0.0, gradient_accumulation_steps=1, tta="off",
                     progressive_epochs=0)


def comparison_config(c: RunConfig, all_epochs: bool = False) -> RunConfig:
    """The configuration a comparison of interleaved pairs runs (its baseline follows, by
    `baseline_config`): a time-to-accuracy comparison (the data set has a target: `target_for`)
    ends each run at the first validation at or above the target (`stop_at_target`; `epochs`
    is then the cap), since nothing after it enters the headline: an mnist5k pair took 80 s
    for 10 epochs when the preset reached 0.965 in 2 or 3. A throughput-only comparison (no
    target, e.g. synthetic) and `all_epochs` keep every epoch."""
    if all_epochs or c.stop_at_target or target_for(c.target_accuracy, c.dataset) is None:
        return c
    return c.replace(stop_at_target=True)


# Each setting's one-line help, in field order (derived from the fields: `_setting`).
SETTING_HELP = {f.name: f.metadata["help"] for f in fields(RunConfig)}
