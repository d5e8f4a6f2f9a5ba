"""EfficientNet-Lite in Keras, loaded from a lukemelas-style PyTorch state_dict.

Lite variants differ from EfficientNet-B*: no squeeze-excite, ReLU6 instead of swish,
stem and head not rescaled. The block layout (expansion, kernel size, channels) is read
from the weight shapes; only the strides, which leave no trace in the weights, come
from the architecture's stage table.

Used by the reference backend's child process and by models/build_models.py. Keras (and so
TensorFlow) is imported inside the functions that build the model: this module is part of the
app package, and importing the app must not load TensorFlow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import keras

BN_EPSILON = 1e-3
# Stride of the first block of each stage (EfficientNet-B0 table, shared by all Lite sizes).
STAGE_STRIDES = (1, 2, 2, 2, 1, 2, 1)


@dataclass(frozen=True)
class BlockConfig:
    index: int
    in_channels: int
    expanded_channels: int
    out_channels: int
    kernel_size: int
    stride: int

    @property
    def has_expansion(self) -> bool:
        return self.expanded_channels != self.in_channels

    @property
    def has_residual(self) -> bool:
        return self.stride == 1 and self.in_channels == self.out_channels


def block_configs(weights: Mapping[str, np.ndarray]) -> list[BlockConfig]:
    """Derive the MBConv blocks from the weight shapes; a stage starts where channels change."""
    configs: list[BlockConfig] = []
    stage = -1
    index = 0
    while f"_blocks.{index}._depthwise_conv.weight" in weights:
        prefix = f"_blocks.{index}."
        depthwise = weights[prefix + "_depthwise_conv.weight"]  # (C, 1, k, k)
        project = weights[prefix + "_project_conv.weight"]  # (out, C, 1, 1)
        expand = weights.get(prefix + "_expand_conv.weight")  # (C, in, 1, 1) when present
        expanded = depthwise.shape[0]
        in_channels = expand.shape[1] if expand is not None else expanded
        out_channels = project.shape[0]
        starts_stage = index == 0 or in_channels != out_channels
        stage += starts_stage
        stride = STAGE_STRIDES[stage] if starts_stage else 1
        configs.append(BlockConfig(index, in_channels, expanded, out_channels, depthwise.shape[2], stride))
        index += 1
    if stage != len(STAGE_STRIDES) - 1:
        raise ValueError(f"found {stage + 1} stages, expected {len(STAGE_STRIDES)}")
    return configs


def _conv(filters: int, kernel: int, stride: int, name: str) -> keras.layers.Conv2D:
    import keras

    # padding="same" is TensorFlow's asymmetric SAME, which the checkpoints were trained with.
    return keras.layers.Conv2D(filters, kernel, stride, "same", use_bias=False, name=name)


def _bn_relu6(x: keras.KerasTensor, name: str, activation: bool = True) -> keras.KerasTensor:
    import keras

    x = keras.layers.BatchNormalization(epsilon=BN_EPSILON, name=name)(x)
    return keras.layers.ReLU(6.0, name=f"{name}_relu6")(x) if activation else x


def _mbconv(x: keras.KerasTensor, cfg: BlockConfig) -> keras.KerasTensor:
    import keras

    p = f"blocks_{cfg.index}_"
    shortcut = x
    if cfg.has_expansion:
        x = _conv(cfg.expanded_channels, 1, 1, p + "expand_conv")(x)
        x = _bn_relu6(x, p + "bn0")
    x = keras.layers.DepthwiseConv2D(cfg.kernel_size, cfg.stride, "same", use_bias=False, name=p + "depthwise_conv")(x)
    x = _bn_relu6(x, p + "bn1")
    x = _conv(cfg.out_channels, 1, 1, p + "project_conv")(x)
    x = _bn_relu6(x, p + "bn2", activation=False)
    if cfg.has_residual:
        x = keras.layers.Add(name=p + "add")([shortcut, x])
    return x


def build_keras_model(
    weights: Mapping[str, np.ndarray], image_size: int = 224, name: str = "efficientnet_lite0"
) -> keras.Model:
    """Return the classifier (softmax included) with the weights loaded; batch fixed to 1."""
    import keras

    configs = block_configs(weights)
    num_classes, head_in = weights["_fc.weight"].shape
    inputs = keras.Input((image_size, image_size, 3), batch_size=1, name="image")
    x = _conv(weights["_conv_stem.weight"].shape[0], 3, 2, "conv_stem")(inputs)
    x = _bn_relu6(x, "bn0")
    for cfg in configs:
        x = _mbconv(x, cfg)
    x = _conv(head_in, 1, 1, "conv_head")(x)
    x = _bn_relu6(x, "bn1")
    x = keras.layers.GlobalAveragePooling2D(name="avg_pool")(x)
    x = keras.layers.Dense(num_classes, name="fc")(x)
    outputs = keras.layers.Softmax(name="probabilities")(x)
    model = keras.Model(inputs, outputs, name=name)
    _load_weights(model, weights)
    return model


def _torch_to_keras(torch_key: str, layer: keras.layers.Layer, weights: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    import keras

    if isinstance(layer, keras.layers.BatchNormalization):
        return [weights[f"{torch_key}.{n}"] for n in ("weight", "bias", "running_mean", "running_var")]
    kernel = weights[f"{torch_key}.weight"]
    if isinstance(layer, keras.layers.DepthwiseConv2D):
        return [kernel.transpose(2, 3, 0, 1)]  # (C, 1, kh, kw) -> (kh, kw, C, 1)
    if isinstance(layer, keras.layers.Conv2D):
        return [kernel.transpose(2, 3, 1, 0)]  # OIHW -> HWIO
    return [kernel.T, weights[f"{torch_key}.bias"]]  # Dense: (out, in) -> (in, out)


def _torch_key(layer_name: str) -> str:
    """Keras layer name -> state_dict prefix, e.g. blocks_3_expand_conv -> _blocks.3._expand_conv."""
    if layer_name.startswith("blocks_"):
        _, index, rest = layer_name.split("_", 2)
        return f"_blocks.{index}._{rest}"
    return f"_{layer_name}"


def _load_weights(model: keras.Model, weights: Mapping[str, np.ndarray]) -> None:
    used: set[str] = set()
    for layer in model.layers:
        if not layer.weights:
            continue
        key = _torch_key(layer.name)
        values = _torch_to_keras(key, layer, weights)
        for variable, value in zip(layer.weights, values, strict=True):
            if tuple(variable.shape) != value.shape:
                raise ValueError(f"{layer.name}: shape {value.shape} != {tuple(variable.shape)}")
        layer.set_weights(values)
        used.update(k for k in weights if k.startswith(key + "."))
    unused = {k for k in weights if not k.endswith("num_batches_tracked")} - used
    if unused:
        raise ValueError(f"weights not loaded into the model: {sorted(unused)[:5]}")
