"""Model FLOPs per training sample, counted analytically from a built Keras model.

Convention (Kaplan et al., 2020, "Scaling Laws for Neural Language Models", sec. 2.1;
Chowdhery et al., 2022, "PaLM", appendix B, where MFU is defined):
- one multiply-add is 2 FLOPs;
- only the matrix work is counted: Dense (EinsumDense is not), Conv1D/2D/3D (strided,
  dilated and grouped alike: each output position costs the kernel's size),
  DepthwiseConv1D/2D, SeparableConv1D/2D (depthwise + pointwise) and the transposed
  convolutions;
- elementwise ops (activations, residual adds, dropout), pooling, normalisation,
  resizing, biases, the loss and the optimizer update are left out;
- training FLOPs = 3 x forward FLOPs: the forward pass plus a backward pass costing
  twice as much (gradients with respect to activations and to weights). A frozen
  layer's weight gradients are counted too (the convention does not look at them).

Layers with weights that are none of the above (attention, embeddings, a user's own
layer) are named in ``uncounted``: their FLOPs are missing, so MFU is then a lower
bound. Nested models (a keras.applications backbone inside the SpeedLab model) are
walked layer by layer.
"""
from __future__ import annotations

import math

TRAINING_FACTOR = 3  # forward + backward (2x forward)


def _prod(dims) -> int:
    return math.prod(int(d) for d in dims)


def _nodes(layer):
    """(input shape, output shape) of every call of `layer` in its model's graph."""
    out = []
    for node in getattr(layer, "_inbound_nodes", []) or []:
        ins, outs = list(node.input_tensors), list(node.output_tensors)
        if ins and outs:
            out.append((tuple(ins[0].shape), tuple(outs[0].shape)))
    return out


def layer_forward_flops(layer, in_shape: tuple, out_shape: tuple):
    """Forward FLOPs of one sample through `layer` (shapes include the batch axis),
    or None for a layer this module does not count (no weights: 0)."""
    from keras import layers as L

    spatial_out = _prod(out_shape[1:-1])  # output positions (1 for a plain vector)
    if isinstance(layer, L.Dense):
        return 2 * spatial_out * _prod(layer.kernel.shape)
    if isinstance(layer, (L.SeparableConv1D, L.SeparableConv2D)):
        return 2 * spatial_out * (_prod(layer.depthwise_kernel.shape) + _prod(layer.pointwise_kernel.shape))
    if isinstance(layer, (L.DepthwiseConv1D, L.DepthwiseConv2D)):
        return 2 * spatial_out * _prod(layer.kernel.shape)  # (k.., C_in, depth multiplier)
    if isinstance(layer, (L.Conv1DTranspose, L.Conv2DTranspose, L.Conv3DTranspose)):
        return 2 * _prod(in_shape[1:-1]) * _prod(layer.kernel.shape)  # each input position is spread
    if isinstance(layer, (L.Conv1D, L.Conv2D, L.Conv3D)):
        return 2 * spatial_out * _prod(layer.kernel.shape)  # (k.., C_in / groups, C_out)
    if not layer.weights:
        return 0
    if isinstance(layer, (L.BatchNormalization, L.LayerNormalization, L.GroupNormalization,
                          L.Normalization, L.Rescaling)):
        return 0  # normalisation: left out by the convention
    return None


def count(model) -> dict:
    """Forward and training FLOPs of one sample through a built Keras `model`.

    Returns: {'forward_flops_per_sample': int, 'flops_per_sample': int (training,
    3 x forward), 'layers': [[layer name, forward FLOPs]] for each counted layer with
    FLOPs, 'uncounted': [names of layers with weights that are not counted]}.
    Raises: ValueError for a model without a graph (a subclassed model never called).
    """
    per_layer, uncounted = [], []

    def walk(m):
        for layer in m.layers:
            if hasattr(layer, "layers") and getattr(layer, "_inbound_nodes", None) is not None \
                    and layer.__class__.__name__ in ("Functional", "Sequential", "Model"):
                walk(layer)
                continue
            nodes = _nodes(layer)
            if not nodes:
                if layer.weights:
                    uncounted.append(layer.name)
                continue
            total, known = 0, True
            for in_shape, out_shape in nodes:
                f = layer_forward_flops(layer, in_shape, out_shape)
                if f is None:
                    known = False
                    break
                total += f
            if not known:
                uncounted.append(layer.name)
            elif total:
                per_layer.append([layer.name, int(total)])

    if not getattr(model, "layers", None) and not getattr(model, "_inbound_nodes", None):
        raise ValueError(f"model {getattr(model, 'name', model)!r} has no layer graph to count")
    walk(model)
    forward = sum(f for _, f in per_layer)
    return {"forward_flops_per_sample": int(forward), "flops_per_sample": int(TRAINING_FACTOR * forward),
            "layers": per_layer, "uncounted": uncounted}
