"""The model of keras-io's "Simple MNIST convnet" (examples/vision/mnist_convnet.py,
https://github.com/keras-team/keras-io, Apache-2.0) as a SpeedLab `build()`: a Sequential
of two valid 3x3 convolutions, max-pooling, dropout and a softmax head. mnist_convnet.keras
beside it is this model for 28x28x1 and 10 classes, saved by tests/test_user_model_flops.py's
MAKE_KERAS (regenerate it with that code after changing this file)."""
import keras
from keras import layers


def build(input_shape, num_classes):
    return keras.Sequential([
        keras.Input(shape=input_shape),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(num_classes, activation="softmax"),
    ])
