"""Transfer learning: start a run from a saved run's weights (TF only inside functions).

A run with ``init_from=RUN_ID`` rebuilds the source run's architecture (same
model, input shape and class count) under this run's dtype policy, loads the
weights of the source's saved ``model.keras``, keeps every layer up to the
classifier head (the *taken-over part*) and puts a new float32 head for this
run's class count on top. Training then runs in up to two phases:

1. ``freeze_epochs`` epochs with the taken-over part frozen: only the new head
   learns, at the configured learning rate;
2. the remaining epochs with the taken-over part unfrozen and the learning
   rate multiplied by ``finetune_lr_factor`` (0.1: 10x lower), so that large
   updates from the still-random head do not wreck the features.

BatchNormalization layers in the taken-over part stay frozen in both phases:
in Keras a non-trainable BatchNormalization runs in inference mode, so its
moving mean and variance are those of the source run (as the Keras
transfer-learning guide advises; see also "frozen BN" in detection models).
A ``pretrained`` keras.applications backbone is treated the same way, with the
backbone as the taken-over part.

The checks a config needs (the source run exists, completed, saved its model,
and has this run's model and input shape) live in engine.config.transfer_source and
read the store only; the digits demonstration lives in engine.jobs.demo.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from engine.config import RunConfig
from engine.base.errors import TransferError
from engine.store import Store
from engine.config.transfer_source import saved_model_path


@dataclass(frozen=True)
class Phase:
    """Epochs [first_epoch, end_epoch) trained with the taken-over part frozen
    or not, at `lr_factor` x the configured learning rate; `size`: the side (pixels)
    training images are resized to (progressive resizing, engine.training.techniques;
    None = full size)."""

    first_epoch: int
    end_epoch: int
    frozen: bool
    lr_factor: float
    size: Optional[int] = None


def phases(cfg: RunConfig, has_taken_part: bool) -> list[Phase]:
    """The training phases of `cfg` (one phase without a taken-over part)."""
    e, k, f = cfg.epochs, cfg.freeze_epochs, cfg.finetune_lr_factor
    if not has_taken_part:
        return [Phase(0, e, False, 1.0)]
    if k == 0:
        return [Phase(0, e, False, f)]
    if k >= e:
        return [Phase(0, e, True, 1.0)]
    return [Phase(0, k, True, 1.0), Phase(k, e, False, f)]


# --- TF parts ------------------------------------------------------------------
def taken_part(model) -> list:
    """Layers with weights below the classifier head (the part taken over)."""
    from engine.training.models import HEAD_NAME, PROBS_NAME

    return [layer for layer in model.layers if layer.weights and layer.name not in (HEAD_NAME, PROBS_NAME)]


def set_frozen(layers: list, frozen: bool) -> None:
    """Freeze (or unfreeze) `layers`; their BatchNormalization layers stay frozen
    either way (inference mode: moving statistics kept)."""
    import keras

    for layer in layers:
        layer.trainable = not frozen
        for sub in layer._flatten_layers(include_self=True, recursive=True):
            if isinstance(sub, keras.layers.BatchNormalization):
                sub.trainable = False


def build_from_run(cfg: RunConfig, shape: tuple, classes: int, store: Optional[Store] = None):
    """The model for `cfg`: run `cfg.init_from`'s architecture and weights up to its
    head, and a new head for `classes`. Call under the strategy scope and after
    the dtype policy is set.

    Returns: (model, taken-over layers). Raises: TransferError.
    """
    import keras

    from engine.training import models

    own = store is None
    store = store or Store()
    try:
        run = store.get_run(cfg.init_from)
        path = saved_model_path(store, run) if run else None
    finally:
        if own:
            store.close()
    if run is None or path is None:
        raise TransferError(f"init_from: run {cfg.init_from} or its saved model no longer exists")
    src, plan = run["config"], run.get("plan") or {}
    src_classes = plan.get("classes") or len(src.get("label_subset") or ()) or None
    if src_classes is None:
        from engine.data.meta import dataset_info

        src_classes = dataset_info(src["dataset"], RunConfig.from_dict(src)).classes
    # Rebuild rather than reuse the loaded layers: the new run's dtype policy
    # applies, and the weights are float32 either way.
    base = models.build(src["model"], tuple(shape), int(src_classes), image_size=src.get("image_size") or 0)
    try:
        saved = keras.saving.load_model(path, compile=False)
        base.set_weights(saved.get_weights())
    except Exception as e:  # noqa: BLE001 - any mismatch ends as one line
        raise TransferError(f"init_from: the saved model of run {cfg.init_from} ({path}) does not fit a "
                            f"{src['model']} for {'x'.join(map(str, shape))} images: "
                            f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}") from None
    features = base.get_layer(models.HEAD_NAME).input
    model = keras.Model(base.inputs, models.head(features, classes), name=f"{base.name}_from_run_{cfg.init_from}")
    return model, taken_part(model)


# --- the digits demonstration -------------------------------------------------------
