"""Models: an MLP, a small CNN (for 8x8 digits), a small ResNet-style CNN, and
keras.applications backbones (MobileNetV2, ResNet50, EfficientNetB0).

Each takes images (batch, H, W, C) in [0, 1] and returns class probabilities
(batch, classes).  The classifier head (last Dense and softmax) is always
float32, as the TF mixed-precision guide advises, so logits and the loss do
not overflow or lose precision under float16/bfloat16
(https://www.tensorflow.org/guide/mixed_precision).
"""
from __future__ import annotations

import keras
from keras import layers, ops

HEAD_NAME = "head"


class WeightsError(RuntimeError):
    """A backbone's pretrained weights file cannot be loaded (one line naming the file and the fix)."""

PROBS_NAME = "probs"


def head(x, classes: int):
    """The classifier head on features `x`: float32 Dense named HEAD_NAME and a
    float32 softmax named PROBS_NAME (transfer learning replaces exactly these)."""
    x = layers.Dense(classes, dtype="float32", name=HEAD_NAME)(x)
    return layers.Activation("softmax", dtype="float32", name=PROBS_NAME)(x)


_head = head


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


def resnet(shape: tuple, classes: int, any_size: bool = False) -> keras.Model:
    """A ResNet-style CNN (He et al., 2016): stem + three stages of two basic
    blocks (32, 64, 128 filters; stride 2 between stages), global average pool.
    any_size: accept images of any height and width (progressive resizing trains on
    smaller ones); the strides stay those of `shape`."""
    inp = keras.Input((None, None, shape[2]) if any_size else shape)
    x = layers.Conv2D(32, 3, padding="same", use_bias=False)(inp)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    side = min(shape[0], shape[1])
    for i, filters in enumerate((32, 64, 128)):
        stride = 1 if i == 0 or side < 4 else 2
        side = -(-side // stride)
        x = _res_block(x, filters, stride)
        x = _res_block(x, filters, 1)
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, _head(x, classes), name="resnet")


# ImageNet preprocessing each backbone's weights expect (keras.applications.*.preprocess_input):
# "tf": [-1, 1]; "caffe": BGR, 0..255 minus the ImageNet channel means; "raw": 0..255
# (EfficientNet rescales and normalises inside itself).
_CAFFE_MEAN_BGR = (103.939, 116.779, 123.68)


@keras.saving.register_keras_serializable(package="speedlab")
class BackboneInput(layers.Layer):
    """Images (batch, H, W, C) in [0, 1], C = 1 or 3 -> (batch, size, size, 3) as a
    backbone expects: grayscale repeated to 3 channels, bilinear resize to
    size x size, then scaled per `mode` ('tf', 'caffe' or 'raw', see above).
    Runs in float32 (resizing in float16 loses precision); the backbone casts."""

    def __init__(self, size: int, mode: str, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.size = int(size)
        self.mode = mode

    def call(self, x):
        if x.shape[-1] == 1:
            x = ops.repeat(x, 3, axis=-1)
        if x.shape[1] != self.size or x.shape[2] != self.size:
            x = ops.image.resize(x, (self.size, self.size), interpolation="bilinear")
        if self.mode == "tf":
            return x * 2.0 - 1.0
        if self.mode == "caffe":
            return ops.flip(x, axis=-1) * 255.0 - ops.convert_to_tensor(_CAFFE_MEAN_BGR, dtype=x.dtype)
        return x * 255.0

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.size, self.size, 3)

    def get_config(self):
        return {**super().get_config(), "size": self.size, "mode": self.mode}


def _applications():
    return {"mobilenetv2": (keras.applications.MobileNetV2, "tf"),
            "resnet50": (keras.applications.ResNet50, "caffe"),
            "efficientnetb0": (keras.applications.EfficientNetB0, "raw")}


def backbone(name: str, shape: tuple, classes: int, size: int = 224, pretrained: bool = False) -> keras.Model:
    """keras.applications backbone `name` without its top, global-average pooled,
    fed by BackboneInput (resize to size x size, 3 channels) and topped by the
    float32 head. pretrained: ImageNet weights (Keras downloads them into
    ~/.keras/models on first use; engine.data.keras_data.check_weights checks first).
    Raises: WeightsError when the weights file cannot be read.
    The backbone is one nested layer, so transfer learning can freeze it whole."""
    ctor, mode = _applications()[name]
    inp = keras.Input(shape)
    x = BackboneInput(size, mode, name="backbone_input")(inp)
    try:
        base = ctor(include_top=False, weights="imagenet" if pretrained else None,
                    input_shape=(size, size, 3), pooling="avg")
    except (OSError, ValueError, KeyError) as e:
        if not pretrained:
            raise
        from engine.data.keras_data import find_weights, weights_file

        path = find_weights(name, size) or weights_file(name, size)[0]
        first = (str(e).splitlines() or [type(e).__name__])[0][:160]
        raise WeightsError(f"the ImageNet weights file {path} cannot be read ({type(e).__name__}: {first}); "
                           "delete it so that it is downloaded again") from None
    x = base(x)
    return keras.Model(inp, head(x, classes), name=name)


BUILDERS = {"mlp": mlp, "cnn": cnn, "resnet": resnet}
BACKBONE_NAMES = ("mobilenetv2", "resnet50", "efficientnetb0")


def build(name: str, shape: tuple, classes: int, image_size: int = 0, pretrained: bool = False,
          any_size: bool = False) -> keras.Model:
    """Build model `name` under the current Keras dtype policy. `image_size` and
    `pretrained` apply to backbones (0 = native 224); `any_size` to resnet (inputs of
    any height and width). Raises KeyError."""
    if name in BACKBONE_NAMES:
        return backbone(name, tuple(shape), classes, image_size or 224, pretrained)
    if any_size:
        return resnet(tuple(shape), classes, any_size=True)
    return BUILDERS[name](tuple(shape), classes)
