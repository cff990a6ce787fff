"""Models: an MLP, a small CNN (for 8x8 digits) and a small ResNet-style CNN.

Each takes images (batch, H, W, C) in [0, 1] and returns class probabilities
(batch, classes).  The classifier head (last Dense and softmax) is always
float32, as the TF mixed-precision guide advises, so logits and the loss do
not overflow or lose precision under float16/bfloat16
(https://www.tensorflow.org/guide/mixed_precision).
"""
from __future__ import annotations

import keras
from keras import layers

HEAD_NAME = "head"


def _head(x, classes: int):
    x = layers.Dense(classes, dtype="float32", name=HEAD_NAME)(x)
    return layers.Activation("softmax", dtype="float32", name="probs")(x)


def mlp(shape: tuple, classes: int) -> keras.Model:
    """Flatten -> 256 -> 128 ReLU units -> float32 softmax head."""
    inp = keras.Input(shape)
    x = layers.Flatten()(inp)
    x = layers.Dense(256, activation="relu")(x)
    x = layers.Dense(128, activation="relu")(x)
    return keras.Model(inp, _head(x, classes), name="mlp")


def cnn(shape: tuple, classes: int) -> keras.Model:
    """Two 3x3 conv blocks (32, 64 filters), max-pool, 128-unit dense, dropout 0.25."""
    inp = keras.Input(shape)
    x = layers.Conv2D(32, 3, padding="same", activation="relu")(inp)
    x = layers.Conv2D(64, 3, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(128, activation="relu")(x)
    x = layers.Dropout(0.25)(x)
    return keras.Model(inp, _head(x, classes), name="cnn")


def _res_block(x, filters: int, stride: int):
    shortcut = x
    y = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False)(x)
    y = layers.BatchNormalization()(y)
    y = layers.ReLU()(y)
    y = layers.Conv2D(filters, 3, padding="same", use_bias=False)(y)
    y = layers.BatchNormalization()(y)
    if stride != 1 or shortcut.shape[-1] != filters:
        shortcut = layers.Conv2D(filters, 1, strides=stride, use_bias=False)(shortcut)
        shortcut = layers.BatchNormalization()(shortcut)
    return layers.ReLU()(layers.Add()([y, shortcut]))


def resnet(shape: tuple, classes: int) -> keras.Model:
    """A ResNet-style CNN (He et al., 2016): stem + three stages of two basic
    blocks (32, 64, 128 filters; stride 2 between stages), global average pool."""
    inp = keras.Input(shape)
    x = layers.Conv2D(32, 3, padding="same", use_bias=False)(inp)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    for i, filters in enumerate((32, 64, 128)):
        stride = 1 if i == 0 or min(x.shape[1], x.shape[2]) < 4 else 2
        x = _res_block(x, filters, stride)
        x = _res_block(x, filters, 1)
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, _head(x, classes), name="resnet")


BUILDERS = {"mlp": mlp, "cnn": cnn, "resnet": resnet}


def build(name: str, shape: tuple, classes: int) -> keras.Model:
    """Build model `name` under the current Keras dtype policy. Raises KeyError."""
    return BUILDERS[name](tuple(shape), classes)
