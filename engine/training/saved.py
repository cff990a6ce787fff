"""Loading a saved SpeedLab model (``--save-model``: ``runs/RUN_ID/model.keras``) with plain Keras.

SpeedLab's models hold a few custom Keras objects: the backbone input layer
(`engine.training.models.BackboneInput`), the LR and momentum schedules and the
one-cycle optimizers (`engine.training.schedules`). Each is registered with
``keras.saving.register_keras_serializable`` under the package "speedlab" when
its module is imported; importing this module imports them all, so in a fresh
interpreter one line makes ``keras.models.load_model`` work:

    import engine.training.saved  # registers SpeedLab's layers, schedules and optimizers
    model = keras.models.load_model("runs/7/model.keras")

(keras.saving.load_model docs: https://keras.io/api/models/model_saving_apis/model_saving_and_loading/)
"""
from __future__ import annotations

from engine.training import models, schedules  # noqa: F401  (imported to register their Keras objects)

LOAD_LINE = "import engine.training.saved; keras.models.load_model(PATH)"


def load(path, compile: bool = True):
    """``keras.models.load_model(path)`` with SpeedLab's custom objects registered."""
    import keras

    return keras.models.load_model(path, compile=compile)
