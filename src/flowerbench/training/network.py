"""The blog's model: ResNet50 from scratch with `preprocess_input` inside the model.

    build_network("resnet50", image_size=224, num_classes=5)

`tiny` is a two-layer conv net for fast tests only (params `model.arch`); its
`batchnorm` argument ("none" | "local" | "sync") lets the equivalence tests show
what per-replica BatchNorm statistics do to N x b versus 1 x (N*b).
Build the model inside `strategy.scope()`: its variables are then mirrored.
"""

from __future__ import annotations


def build_network(arch: str, image_size: int, num_classes: int, batchnorm: str = "local"):
    import keras

    inputs = keras.Input(shape=(image_size, image_size, 3), name="image")
    if arch == "resnet50":
        # As the blog: pixels 0..255 in, caffe-style preprocessing inside the model,
        # ResNet50 without pretrained weights, logits out (the loss applies softmax).
        x = keras.layers.Lambda(keras.applications.resnet50.preprocess_input, name="preprocess")(inputs)
        resnet = keras.applications.ResNet50(weights=None, include_top=True, input_shape=(image_size, image_size, 3),
                                             classes=num_classes, classifier_activation=None)
        return keras.Model(inputs, resnet(x), name="resnet50_flowers")
    if arch == "tiny":
        x = keras.layers.Rescaling(1.0 / 255)(inputs)
        x = keras.layers.Conv2D(8, 3, strides=2, use_bias=batchnorm == "none")(x)
        if batchnorm != "none":
            x = keras.layers.BatchNormalization(synchronized=batchnorm == "sync")(x)
        x = keras.layers.Activation("relu")(x)
        x = keras.layers.GlobalAveragePooling2D()(x)
        return keras.Model(inputs, keras.layers.Dense(num_classes)(x), name="tiny")
    raise ValueError(f"model.arch: unknown architecture {arch!r}")


def make_optimizer(name: str, learning_rate: float):
    import keras

    if name == "adam":
        return keras.optimizers.Adam(learning_rate=learning_rate)
    return keras.optimizers.SGD(learning_rate=learning_rate)
