"""Model FLOPs per training sample, counted from a built Keras model the way the compiler
runs the training step (checked against XLA's ``cost_analysis()`` in tests/test_flops.py).

Convention (Kaplan et al., 2020, "Scaling Laws for Neural Language Models", sec. 2.1;
Chowdhery et al., 2022, "PaLM", appendix B, where MFU is defined):
- one multiply-add is 2 FLOPs;
- only the matrix work is counted: Dense (EinsumDense is not), Conv1D/2D/3D (strided,
  dilated and grouped alike), DepthwiseConv1D/2D, SeparableConv1D/2D (depthwise +
  pointwise) and the transposed convolutions;
- elementwise ops (activations, residual adds, dropout), pooling, normalisation,
  resizing, biases, the loss and the optimizer update are left out.

What a training step costs, per counted layer with forward cost F:
- forward: F;
- weight gradient: F, for a layer whose weights train (a frozen layer has none);
- input gradient: F, only when some weight *below* the layer (nearer the input) trains;
  nothing asks for the gradient with respect to the images, so the first weighted layer,
  and every layer below which nothing trains, is charged 2F (3F is the textbook figure
  for a layer in the middle).
A frozen layer is thus F (nothing trains below it) or 2F (a trainable layer below it).

Padding taps: a convolution's taps that fall on "same" padding multiply zeros, and XLA
does not count them (nor does it run them as multiplies on its padded windows); this
module counts only the taps that touch real input, which matches XLA. fvcore and
ptflops count every tap (kernel size x output positions), so on small feature maps
their figures are higher: on 8x8 digits a 3x3 'same' convolution has (22/24)^2 = 84% of
its taps on real input, on 2x2 maps 4/9. ``all_taps_flops_per_sample`` gives that
figure too. A ZeroPadding layer feeding a convolution counts as that convolution's
padding (XLA folds the pad into the convolution).

Layers with weights that are none of the above (attention, embeddings, a user's own
layer) are named in ``uncounted``: their FLOPs are missing, so MFU is then a lower
bound. Nested models (a keras.applications backbone inside the SpeedLab model) are
walked layer by layer.
"""
from __future__ import annotations

import math
from typing import Callable, Optional


def _prod(dims) -> int:
    return math.prod(int(d) for d in dims)


def _tuple(v, n: int) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _real_taps_1d(n_in: int, n_out: int, k: int, stride: int, dilation: int, pad_before: int) -> int:
    """(output position, kernel tap) pairs along one axis whose input index is real."""
    total = 0
    for o in range(n_out):
        start = o * stride - pad_before
        total += sum(1 for j in range(k) if 0 <= start + j * dilation < n_in)
    return total


def _pad_before(padding: str, n_in: int, n_out: int, k: int, stride: int, dilation: int) -> int:
    if padding == "valid":
        return 0
    if padding == "causal":
        return (k - 1) * dilation
    total = max((n_out - 1) * stride + (k - 1) * dilation + 1 - n_in, 0)  # 'same' (TF, XLA: extra after)
    return total // 2


def conv_taps(layer, in_shape: tuple, out_shape: tuple, extra_pad=None) -> tuple[int, int]:
    """(taps on real input, all taps) of one sample's convolution by `layer`, summed over
    output positions (kernel spatial positions x output positions; channels apart).
    `extra_pad`: ((before, after), ...) zeros a ZeroPadding layer added per spatial axis
    (its input then is the real input)."""
    rank = len(in_shape) - 2
    first = getattr(layer, "data_format", "channels_last") == "channels_first"
    sp_in = in_shape[2:] if first else in_shape[1:-1]
    sp_out = out_shape[2:] if first else out_shape[1:-1]
    ks = _tuple(layer.kernel_size, rank)
    st = _tuple(layer.strides, rank)
    dl = _tuple(getattr(layer, "dilation_rate", 1), rank)
    real = full = 1
    for a in range(rank):
        n_in, n_out, k = int(sp_in[a]), int(sp_out[a]), int(ks[a])
        before = _pad_before(layer.padding, n_in, n_out, k, int(st[a]), int(dl[a]))
        if extra_pad is not None:
            b, e = extra_pad[a]
            before, n_in = before + b, n_in - b - e
        real *= _real_taps_1d(n_in, n_out, k, int(st[a]), int(dl[a]), before)
        full *= n_out * k
    return real, full


def layer_forward_flops(layer, in_shape: tuple, out_shape: tuple, extra_pad=None,
                        all_taps: bool = False):
    """Forward FLOPs of one sample through `layer` (shapes include the batch axis),
    or None for a layer this module does not count (no weights: 0). Convolutions count
    the taps on real input (module docstring), or every tap with `all_taps`."""
    from keras import layers as L

    def taps():
        real, full = conv_taps(layer, in_shape, out_shape, extra_pad)
        return full if all_taps else real

    if isinstance(layer, L.Dense):
        return 2 * _prod(out_shape[1:-1]) * _prod(layer.kernel.shape)
    if isinstance(layer, (L.SeparableConv1D, L.SeparableConv2D)):
        dk = layer.depthwise_kernel.shape  # (k.., C_in, depth multiplier)
        return 2 * (taps() * int(dk[-2]) * int(dk[-1]) + _prod(out_shape[1:-1]) * _prod(layer.pointwise_kernel.shape))
    if isinstance(layer, (L.DepthwiseConv1D, L.DepthwiseConv2D)):
        k = layer.kernel.shape
        return 2 * taps() * int(k[-2]) * int(k[-1])
    if isinstance(layer, (L.Conv1DTranspose, L.Conv2DTranspose, L.Conv3DTranspose)):
        return 2 * _prod(in_shape[1:-1]) * _prod(layer.kernel.shape)  # each input position is spread
    if isinstance(layer, (L.Conv1D, L.Conv2D, L.Conv3D)):
        k = layer.kernel.shape  # (k.., C_in / groups, C_out)
        return 2 * taps() * int(k[-2]) * int(k[-1])
    if not layer.weights:
        return 0
    if isinstance(layer, (L.BatchNormalization, L.LayerNormalization, L.GroupNormalization,
                          L.Normalization, L.Rescaling)):
        return 0  # normalisation: left out by the convention
    return None


def _is_graph_model(layer) -> bool:
    return hasattr(layer, "_operations") or hasattr(getattr(layer, "_functional", None), "_operations")


def _graph(model):
    """The Functional graph of `model` (a Sequential's inner one), or None."""
    if hasattr(model, "_operations"):
        return model
    return getattr(model, "_functional", None) if hasattr(getattr(model, "_functional", None), "_operations") else None


def _flat(x) -> list:
    from keras import tree

    return list(tree.flatten(x))


def _own_trainable(layer) -> bool:
    return bool(layer.trainable_weights)


def _unknown_size(model) -> bool:
    g = _graph(model)
    return g is not None and any(d is None for t in _flat(g.inputs) for d in tuple(t.shape)[1:])


def count(model, trainable: Optional[Callable] = None, input_shape: Optional[tuple] = None) -> dict:
    """Forward and training FLOPs of one sample through a built Keras `model`.

    Args:
        trainable: `trainable(leaf layer) -> bool`, whether its weights train; default
            the layer's own state (``bool(layer.trainable_weights)``). Transfer runs pass
            one per phase (see `phase_trainable`).
        input_shape: one sample's shape (H, W, C) to count a model built for any size at
            (progressive resizing): a clone is built at that shape (about 0.2 s for resnet).
    Returns: {'forward_flops_per_sample': int, 'flops_per_sample': int (training: forward
    + weight gradients + the input gradients needed, module docstring),
    'all_taps_flops_per_sample': int (the same counting every convolution tap),
    'layers': [[layer name, forward FLOPs, training FLOPs]] for each counted layer with
    FLOPs, 'uncounted': [names of layers with weights that are not counted]}.
    Raises: ValueError for a model without a graph (a subclassed model never called) or
    with an unknown spatial size (an any-size input: count a model built at one size).
    """
    from keras import layers as L

    if input_shape is not None and _unknown_size(model):
        import keras

        model = keras.models.clone_model(model, input_tensors=keras.Input(tuple(int(d) for d in input_shape)))
    is_trainable = trainable or _own_trainable
    per_layer, uncounted = [], []
    totals = {"forward": 0, "training": 0, "all_taps": 0}

    def charge(layer, f_real: int, f_all: int, grad_below: bool):
        train = is_trainable(layer)
        factor = 1 + int(train) + int(grad_below)
        per_layer.append([layer.name, int(f_real), int(factor * f_real)])
        totals["forward"] += f_real
        totals["training"] += factor * f_real
        totals["all_taps"] += factor * f_all

    def walk(m, in_grad: list, in_pad: list) -> tuple[list, list]:
        """Walk graph `m` whose inputs need a gradient per `in_grad`; returns the
        outputs' (needs-gradient, zero padding) lists."""
        g = _graph(m)
        grad, pad = {}, {}
        for t, need, p in zip(_flat(g.inputs), in_grad, in_pad):
            grad[id(t)], pad[id(t)] = need, p
        # Only the nodes of this graph: a layer keeps a node for every call, and a Sequential
        # rebuilt layer by layer (from a config, a .keras file) leaves stale ones on the same input.
        mine = {id(n) for nodes in g._nodes_by_depth.values() for n in nodes}
        for op in g._operations:
            if isinstance(op, L.InputLayer):
                continue
            for node in getattr(op, "_inbound_nodes", []) or []:
                if id(node) not in mine:
                    continue
                ins, outs = _flat(node.input_tensors), _flat(node.output_tensors)
                if not ins or not all(id(t) in grad for t in ins):
                    continue  # a node of another graph this layer is part of
                if any(id(t) in grad for t in outs):
                    continue  # already walked
                below = any(grad[id(t)] for t in ins)
                if _is_graph_model(op):
                    og, op_pad = walk(op, [grad[id(t)] for t in ins], [pad.get(id(t)) for t in ins])
                    for t, need, p in zip(outs, og, op_pad):
                        grad[id(t)], pad[id(t)] = need, p
                    continue
                out_pad = None
                if isinstance(op, (L.ZeroPadding1D, L.ZeroPadding2D, L.ZeroPadding3D)) and \
                        getattr(op, "data_format", "channels_last") == "channels_last":
                    rank = len(ins[0].shape) - 2
                    pd = op.padding
                    out_pad = tuple(_tuple(pd[a], 2) for a in range(rank)) if isinstance(pd, (tuple, list)) \
                        else ((pd, pd),) * rank
                in_shape, out_shape = tuple(ins[0].shape), tuple(outs[0].shape)
                if any(d is None for d in (*in_shape[1:], *out_shape[1:])) and op.weights:
                    raise ValueError(f"layer {op.name!r} has an unknown size ({in_shape} -> {out_shape}): "
                                     "count a model built for one input size")
                extra = pad.get(id(ins[0]))
                f = layer_forward_flops(op, in_shape, out_shape, extra)
                if f is None:
                    uncounted.append(op.name)
                elif f:
                    charge(op, f, layer_forward_flops(op, in_shape, out_shape, extra, all_taps=True), below)
                need = below or bool(op.weights and is_trainable(op))
                for t in outs:
                    grad[id(t)], pad[id(t)] = need, out_pad
        return [grad.get(id(t), False) for t in _flat(g.outputs)], [pad.get(id(t)) for t in _flat(g.outputs)]

    if _graph(model) is None:
        raise ValueError(f"model {getattr(model, 'name', model)!r} has no layer graph to count")
    n_in = len(_flat(_graph(model).inputs))
    walk(model, [False] * n_in, [None] * n_in)
    return {"forward_flops_per_sample": int(totals["forward"]), "flops_per_sample": int(totals["training"]),
            "all_taps_flops_per_sample": int(totals["all_taps"]),
            "layers": per_layer, "uncounted": uncounted}


def phase_trainable(taken: list, frozen: bool) -> Callable:
    """`trainable` for `count` in a transfer phase: the layers of `taken` (the taken-over
    part, engine.training.transfer) train unless `frozen`, their BatchNormalization never
    (engine.training.transfer.set_frozen); every other layer as it stands."""
    import keras

    inside, bn = set(), set()
    for layer in taken:
        for sub in layer._flatten_layers(include_self=True, recursive=True):
            inside.add(id(sub))
            if isinstance(sub, keras.layers.BatchNormalization):
                bn.add(id(sub))

    def trainable(layer) -> bool:
        if id(layer) in inside:
            return bool(layer.weights) and not frozen and id(layer) not in bn
        return _own_trainable(layer)
    return trainable


def xla_count(model, input_shape: tuple, batch: int = 8) -> Optional[float]:
    """XLA's own count of one training step of `model` per sample (FLOPs/sample): the loss
    (cross-entropy on class probabilities) and its gradient with respect to the trainable
    weights, in training mode, from ``jax.jit(...).lower(...).compile().cost_analysis()``.
    The fallback for layers `count` cannot count (a user's model, docs/your-own-model.md).
    Returns None unless Keras runs on JAX (TensorFlow exposes no such analysis for a
    Keras step); raises whatever JAX raises for a model it cannot trace."""
    import keras

    if keras.backend.backend() != "jax":
        return None
    import jax
    import jax.numpy as jnp

    classes = int(model.outputs[0].shape[-1])
    tv = [v.value for v in model.trainable_variables]
    ntv = [v.value for v in model.non_trainable_variables]
    x = jnp.full((batch, *input_shape), 0.5, jnp.float32)
    y = jax.nn.one_hot(jnp.zeros((batch,), jnp.int32), classes)

    def loss(tv, ntv, x, y):
        p, _ = model.stateless_call(tv, ntv, x, training=True)
        return -jnp.mean(jnp.sum(y * jnp.log(p.astype(jnp.float32) + 1e-7), -1))

    cost = jax.jit(jax.value_and_grad(loss)).lower(tv, ntv, x, y).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    flops = float((cost or {}).get("flops", 0.0))
    return flops / batch if flops > 0 else None
