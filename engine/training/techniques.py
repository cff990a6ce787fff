"""The techniques of today's fast-training records, on either Keras backend (imports Keras only).

- Optimizers: `ConvMuon` (keras.optimizers.Muon that also orthogonalises 4-D conv filters,
  flattened to 2-D, as airbench94_muon does), keras.optimizers.Muon as shipped (conv kernels
  get AdamW), ScheduleFreeAdamW and Lamb: `new_optimizer`.
- Weight EMA and gradient accumulation are Keras optimizer arguments (`optimizer_kwargs`);
  `SwapEMAWeights` (keras.callbacks) validates with the averaged weights (`ema_callback`).
- CutMix and progressive resizing run inside the compiled train step (`StepAugment`), so the
  input pipelines stay as they are on both backends: CutMix is keras.layers.CutMix drawing
  from a seed generator whose state is set, in a `keras.StatelessScope`, to (seed, step),
  as engine.data.device_mixup does, so a run's cuts repeat with its seed.
- Test-time augmentation (`install_tta`): at inference (validation, evaluate, predict) the
  model's `call` averages its class probabilities over flipped / translated views.

Sources: K. Jordan, airbench94_muon (2024) and "Muon" (2024); Defazio et al. 2024,
"The Road Less Scheduled" (arXiv:2405.15682); You et al. 2020, LAMB (arXiv:1904.00962);
Polyak & Juditsky 1992 (weight averaging); Yun et al. 2019, CutMix (arXiv:1905.04899);
fast.ai DAWNBench 2018 (progressive resizing).
"""
from __future__ import annotations

import re
from typing import Optional

import keras
from keras import ops

from engine.config import RunConfig, progressive_side

NEW_OPTIMIZERS = ("muon", "schedule_free_adamw", "lamb")


@keras.saving.register_keras_serializable(package="speedlab")
class ConvMuon(keras.optimizers.Muon):
    """keras.optimizers.Muon that orthogonalises 4-D conv kernels too.

    Keras's Muon gives every variable that is not 2-D the AdamW step (checked in Keras
    3.15, `Muon._should_use_adamw`), so a CNN's filters would get AdamW. Here a kernel of
    shape (kh, kw, cin, cout) is viewed as a (kh*kw*cin, cout) matrix for the momentum's
    Newton-Schulz orthogonalisation and the update reshaped back, as airbench94_muon
    flattens its filters. 0-/1-D variables (biases, BatchNorm) and `exclude_layers` keep AdamW.
    """

    def _should_use_adamw(self, variable):
        if len(variable.shape) == 4:
            return any(re.search(k, variable.path) for k in self.exclude_layers)
        return super()._should_use_adamw(variable)

    def _muon_update_step(self, gradient, variable, lr, m):
        if len(variable.shape) != 4:
            return super()._muon_update_step(gradient, variable, lr, m)
        # Keras 3.15 Muon._muon_update_step, on the flattened momentum.
        self.assign_add(m, ops.add(gradient, m * (self.momentum - 1)))
        g = ops.add(gradient, self.momentum * m) if self.nesterov else m
        shape = tuple(variable.shape)
        update = self.zeropower_via_newtonschulz5(ops.reshape(g, (-1, shape[-1])), self.ns_steps)
        self.assign_sub(variable, ops.reshape(self.lr_adjust(lr * update), shape))


def optimizer_kwargs(cfg: RunConfig) -> dict:
    """Keras optimizer arguments for weight EMA and gradient accumulation ({} when both are off)."""
    out = {}
    if cfg.ema_momentum > 0:
        out.update(use_ema=True, ema_momentum=float(cfg.ema_momentum))
    if cfg.gradient_accumulation_steps > 1:
        out["gradient_accumulation_steps"] = int(cfg.gradient_accumulation_steps)
    return out


def new_optimizer(cfg: RunConfig, learning_rate, **kwargs) -> keras.optimizers.Optimizer:
    """The optimizer for cfg.optimizer in NEW_OPTIMIZERS at `learning_rate` (float or schedule).
    Muon and Lamb keep Keras's defaults but Lamb's beta_1 and ScheduleFreeAdamW's beta_1,
    which are cfg.momentum (as Adam's). Raises ValueError for another optimizer."""
    if cfg.optimizer == "muon":
        cls = ConvMuon if cfg.muon_conv == "reshape" else keras.optimizers.Muon
        # Which variables keep AdamW depends on the model: exclude_from_muon sets them.
        return cls(learning_rate=learning_rate, exclude_layers=[], **kwargs)
    if cfg.optimizer == "schedule_free_adamw":
        return keras.optimizers.ScheduleFreeAdamW(learning_rate=learning_rate, beta_1=float(cfg.momentum), **kwargs)
    if cfg.optimizer == "lamb":
        return keras.optimizers.Lamb(learning_rate=learning_rate, beta_1=float(cfg.momentum), **kwargs)
    raise ValueError(f"unknown optimizer {cfg.optimizer!r}")


def _head_denses(model) -> list:
    """The Dense layers nearest the model's outputs, found by walking back from each output
    through layers without a 2-D weight (Softmax, Activation, Dropout, a float32 cast): the
    classifier head that feeds the loss, whatever it is named."""
    found, seen = [], set()
    todo = list(getattr(model, "outputs", None) or [])
    while todo:
        hist = getattr(todo.pop(), "_keras_history", None)
        if hist is None or (id(hist[0]), hist[1]) in seen:
            continue
        op, node_index = hist[0], hist[1]
        seen.add((id(op), node_index))
        if isinstance(op, (keras.layers.Dense, keras.layers.EinsumDense)):
            found.append(op)
        elif isinstance(op, keras.Model) and getattr(op, "outputs", None):
            found += _head_denses(op)  # a nested model: its own head
        else:
            todo += list(keras.tree.flatten(op._inbound_nodes[node_index].input_tensors))
    return found


def exclude_from_muon(optimizer, model) -> list[str]:
    """Give a Muon `optimizer` (before it is built) the AdamW step for what Muon should not
    orthogonalise, found from `model`'s structure, not from names (Jordan 2024; Keras's
    Muon docs): the kernel of the last Dense layer feeding the loss (`_head_denses`) and
    every Embedding table; 0-/1-D weights (biases, normalisation) Keras's Muon gives
    AdamW itself. Returns the anchored variable paths set as its `exclude_layers`
    (nothing for another optimizer)."""
    opt = getattr(optimizer, "inner_optimizer", optimizer)
    if not isinstance(opt, keras.optimizers.Muon):
        return []
    layers = _head_denses(model) + [layer for layer in model._flatten_layers(include_self=False)
                                    if isinstance(layer, keras.layers.Embedding)]
    paths = sorted({v.path for layer in layers for v in layer.trainable_variables})
    opt.exclude_layers = [f"^{re.escape(p)}$" for p in paths]
    return opt.exclude_layers


def muon_split(optimizer) -> Optional[dict]:
    """{'muon': names of variables Muon orthogonalises, 'adamw': the rest} of a built Muon
    optimizer (None for another optimizer): what the run's plan records."""
    opt = getattr(optimizer, "inner_optimizer", optimizer)
    if not isinstance(opt, keras.optimizers.Muon) or not opt.built:
        return None
    out = {"muon": [], "adamw": []}
    for v in opt._trainable_variables:
        out["adamw" if opt._should_use_adamw(v) else "muon"].append(v.path)
    return out


def ema_callback(cfg: RunConfig) -> list:
    """[keras.callbacks.SwapEMAWeights()] when weight EMA is on: validation runs on the
    averaged weights, training goes on with the raw ones (and fit ends with the averaged
    weights in the model: Keras's finalize_variable_values)."""
    return [keras.callbacks.SwapEMAWeights(swap_on_epoch=False)] if cfg.ema_momentum > 0 else []


# --- inside the train step ---------------------------------------------------------
def step_counter(optimizer):
    """The optimizer's raw batch counter (the variable; with gradient accumulation
    `iterations` counts updates, floor-divided, and is no variable)."""
    opt = getattr(optimizer, "inner_optimizer", optimizer)
    return opt._iterations


class StepAugment:
    """What the train step does to a batch before the forward pass: resize to `size`
    (progressive resizing; None = as it comes) and CutMix (`cutmix_factor` > 0).

    `install(model)` wraps the instance's `train_step` (JAX: `train_step(state, data)`,
    TensorFlow: `train_step(data)`); `size` is read when the step is traced, so a new
    size needs a new train function (`set_size` drops the old one).
    """

    def __init__(self, cutmix_factor: float, seed: int, size: Optional[int] = None):
        self.cutmix_factor = float(cutmix_factor)
        self.seed = int(seed)
        self.size = size
        self.cutmix = (keras.layers.CutMix(factor=self.cutmix_factor, seed=self.seed, dtype="float32")
                       if self.cutmix_factor > 0 else None)

    def transform(self, x, y, step):
        """(x, y) of one batch as trained: x (B, H, W, C) resized to size x size (bilinear,
        antialiased), then cut and mixed; y (B, classes) float, mixed by area."""
        if self.size is not None and (x.shape[1] != self.size or x.shape[2] != self.size):
            x = ops.image.resize(ops.cast(x, "float32"), (self.size, self.size), interpolation="bilinear",
                                 antialias=True)
        if self.cutmix is not None:
            x, y = cutmix(self.cutmix, x, y, self.seed, step)
        return x, y

    def install(self, model) -> None:
        base = model.train_step
        if keras.backend.backend() == "jax":
            def train_step(state, data):
                opt = model.optimizer
                counter = step_counter(opt)
                index = next(i for i, v in enumerate(opt.variables) if v is counter)
                x, y = self.transform(data[0], data[1], state[2][index])
                return base(state, (x, y, *data[2:]))
        else:
            def train_step(data):
                x, y = self.transform(data[0], data[1], step_counter(model.optimizer))
                return base((x, y, *data[2:]))
        model.train_step = train_step

    def set_size(self, model, size: Optional[int]) -> None:
        """Train at `size` from the next fit on (the train function is traced again)."""
        if size != self.size:
            self.size = size
            model.train_function = None


def cutmix(layer, x, y, seed: int, step):
    """keras.layers.CutMix `layer` on one batch, its randomness from (seed, step) only (a pure
    function: traces into jax.jit and tf.function alike). Returns float32 (x, y)."""
    gen = layer.generator
    state = ops.cast(ops.stack([ops.cast(seed, "int32"), ops.cast(step, "int32")]), gen.state.dtype)
    with keras.StatelessScope(state_mapping=[(gen.state, state)]):
        out = layer({"images": ops.cast(x, "float32"), "labels": ops.cast(y, "float32")}, training=True)
    return out["images"], out["labels"]


# --- test-time augmentation ----------------------------------------------------------
def _shift(x, dy: int, dx: int):
    """x (B, H, W, C) moved dy pixels down and dx right, edges reflected."""
    h, w = x.shape[1], x.shape[2]
    p = ops.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), mode="reflect")
    return p[:, 1 - dy:1 - dy + h, 1 - dx:1 - dx + w, :]


def tta_views(x, mode: str) -> list:
    """[(weight, view)] of images x (B, H, W, C) for TTA `mode`, weights summing to 1, as
    airbench94's test-time augmentation: the untranslated image 1/2 and each 1-pixel
    translation (up-left, down-right) 1/4; with flips every view is averaged with its
    horizontal mirror."""
    if mode in ("off", "flip"):
        views = [(1.0, x)]
    else:
        views = [(0.5, x), (0.25, _shift(x, -1, -1)), (0.25, _shift(x, 1, 1))]
    if "flip" in mode:
        views = [(w / 2, v) for w, x0 in views for v in (x0, ops.flip(x0, axis=2))]
    return views


def tta_average(outputs, weights: list):
    """Weighted average of stacked view outputs (V*B, classes) -> (B, classes)."""
    v = len(weights)
    out = ops.reshape(outputs, (v, -1, outputs.shape[-1]))
    w = ops.reshape(ops.convert_to_tensor(weights, dtype=out.dtype), (v, 1, 1))
    return ops.sum(out * w, axis=0)


def install_tta(model, mode: str) -> None:
    """Make `model` average its class probabilities over the TTA views of `mode` whenever it
    runs for inference (validation, evaluate, predict); training calls are untouched. The
    views go through the network as one batch V times as large. Nothing is saved with the
    model: a saved .keras file predicts on the plain image."""
    if mode == "off":
        return
    base = model.call

    def call(inputs, training=None, mask=None, **kwargs):
        if training:
            return base(inputs, training=training, mask=mask, **kwargs)
        views = tta_views(inputs, mode)
        out = base(ops.concatenate([v for _, v in views], axis=0), training=training, mask=mask, **kwargs)
        return tta_average(out, [w for w, _ in views])

    model.call = call


# --- progressive resizing ----------------------------------------------------------------
def progressive_phases(cfg: RunConfig, phase_cls) -> list:
    """The training phases of progressive resizing: epochs [0, progressive_epochs) at the
    smaller side, the rest at full size (phase_cls: engine.training.transfer.Phase)."""
    k = cfg.progressive_epochs
    return [phase_cls(0, k, False, 1.0, size=progressive_side(cfg)), phase_cls(k, cfg.epochs, False, 1.0)]
