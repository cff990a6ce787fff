"""A model of your own for SpeedLab (docs/your-own-model.md).

    python -m engine run --dataset digits --model examples/my_model.py:build \
        --precision mixed_bfloat16 --epochs 3

SpeedLab calls `build(input_shape, num_classes)` in its worker after the dtype policy,
the distribution strategy and the Keras backend are set, so every technique applies to
this model. input_shape is one image (H, W, C), e.g. (8, 8, 1) for digits; the model
must end in num_classes softmax units (class probabilities).
"""
import keras
from keras import layers


def build(input_shape, num_classes):
    """A small CNN: 3x3 conv (16 filters) -> 2x2 max-pool -> 64 ReLU units -> softmax."""
    inputs = keras.Input(input_shape)
    x = layers.Conv2D(16, 3, padding="same", activation="relu")(inputs)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(64, activation="relu")(x)
    outputs = layers.Dense(num_classes, activation="softmax")(x)
    return keras.Model(inputs, outputs, name="my_model")
