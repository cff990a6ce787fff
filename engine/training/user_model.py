"""A user's own model (docs/your-own-model.md): `file.py:build` or a saved `model.keras`.

`build(input_shape, num_classes) -> keras.Model` is called under the run's dtype policy and
distribution strategy, so every technique applies to it as to the built-in models. A
`.keras` file is loaded with ``safe_mode=True`` (no Python lambdas deserialized) and rebuilt
from its config under the run's dtype policy, keeping its weights or not. A model rebuilt for
its float32 head keeps the weights `build()` gave it (pretrained ones included). Either way the
output layer computes in float32, as the TF mixed-precision guide advises for the softmax
(https://www.tensorflow.org/guide/mixed_precision), and as engine.training.models does.

Faults are one line each (engine.base.errors.ConfigError: field `model`, the value, a fix); an
error raised inside the user's code is its message on one line (for an error Keras wraps
inside a layer's call, the user's error, not Keras's list of arguments) plus the file and line
of the user's deepest frame, never a traceback. `python -m engine.training.user_model check SPEC H,W,C CLASSES`
runs the same checks in a fresh process (engine.config.preflight calls it before anything is
queued, so neither the CLI nor the dashboard imports Keras for it) and prints one JSON line.

A user's Python runs only from a path the server's user typed or gave on the CLI
(docs/reliability.md), never from an upload: uploads are .keras files, loaded in safe mode.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import traceback
import zipfile

from engine.config import user_model
from engine.base.errors import ConfigError

FIX = "fix the model file"


# Keras wraps an error raised inside a layer's call(): a header, the error, then the call's
# arguments (keras/src/utils/traceback_utils.py); the error is what the user needs.
_KERAS_HEADER = ("Exception encountered when calling",)
_KERAS_ARGS = "Arguments received by"
_KERAS_INNER = "Error encountered:"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _message(e: BaseException) -> str:
    """'ValueError: text': the exception's type and its message on one line (at most 300
    characters); for Keras's wrapped layer errors the user's error, without Keras's header
    and the list of the call's arguments."""
    lines = [ln.strip() for ln in _ANSI.sub("", str(e)).splitlines()]
    if any(ln.startswith(_KERAS_ARGS) for ln in lines):
        lines = lines[:next(i for i, ln in enumerate(lines) if ln.startswith(_KERAS_ARGS))]
    lines = [ln for ln in lines if ln and not ln.startswith(_KERAS_HEADER)]
    inner = [i for i, ln in enumerate(lines) if ln.endswith(_KERAS_INNER)]
    if inner and inner[-1] + 1 < len(lines):  # "Could not infer the output shape ... Error encountered:"
        lines = lines[inner[-1] + 1:]
    text = " ".join(lines)
    return (f"{type(e).__name__}: {text}" if text else type(e).__name__)[:300]


def _where(e: BaseException, path: str) -> str:
    """'ValueError: text (file.py, line 12)': the exception's message (`_message`) and the
    deepest frame in the user's file (else the deepest frame at all)."""
    if isinstance(e, SyntaxError):  # raised while compiling: its place is on the error, not a frame
        return f"{type(e).__name__}: {e.msg} ({os.path.basename(e.filename or path)}, line {e.lineno})"
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(path)] or frames
    text = _message(e)
    if not mine:
        return text
    f = mine[-1]
    return f"{text} ({os.path.basename(f.filename)}, line {f.lineno})"


def load_function(spec: str):
    """The function `spec` ('path/file.py:name') names, from a fresh module of that file.
    Raises: ConfigError when the file raises on import or has no such function."""
    path, name = user_model(spec)
    mod_name = f"speedlab_user_model_{abs(hash(path))}"
    mspec = importlib.util.spec_from_file_location(mod_name, path)
    if mspec is None or mspec.loader is None:
        raise ConfigError("model", spec, "cannot be imported as a Python file", "give a readable .py file")
    module = importlib.util.module_from_spec(mspec)
    try:
        mspec.loader.exec_module(module)
    except Exception as e:  # the user's code: any error, as one line
        raise ConfigError("model", spec, f"raises on import: {_where(e, path)}", FIX) from None
    fn = getattr(module, name, None)
    if not callable(fn):
        have = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_")
                      and getattr(v, "__module__", None) == mod_name)
        raise ConfigError("model", spec, f"has no function {name!r}" + (f" (it has {', '.join(have[:8])})" if have
                                                                          else ""),
                          "define build(input_shape, num_classes) returning a keras.Model, and name it after ':'")
    return fn


def _output_layer(model):
    outs = getattr(model, "outputs", None) or []
    hist = getattr(outs[0], "_keras_history", None) if len(outs) == 1 else None
    return hist[0] if hist else (model.layers[-1] if getattr(model, "layers", None) else None)


def _ends_in_softmax(layer) -> bool:
    import keras

    if isinstance(layer, keras.layers.Softmax):
        return True
    act = getattr(layer, "activation", None)
    return getattr(act, "__name__", "") == "softmax"


def check(model, spec: str, shape: tuple, classes: int) -> None:
    """`model` fits the data: a keras.Model with one input of one sample's `shape` (H, W, C;
    None dims accepted), one output of `classes` units, ending in a softmax (the loss reads
    class probabilities). Raises: ConfigError naming the first fault."""
    import keras

    if not isinstance(model, keras.Model):
        raise ConfigError("model", spec, f"returns {type(model).__name__}, not a keras.Model",
                          "return keras.Model(inputs, outputs) or a keras.Sequential")
    try:
        ins, outs = model.inputs, model.outputs
    except (AttributeError, ValueError):
        ins = outs = None
    if not ins or not outs:
        raise ConfigError("model", spec, "has no defined input (a subclassed model, or a Sequential without "
                          "an Input)", "build it with keras.Input(input_shape) (Functional or Sequential)")
    if len(ins) != 1 or len(outs) != 1:
        raise ConfigError("model", spec, f"has {len(ins)} inputs and {len(outs)} outputs",
                          "give it one image input and one class-probability output")
    got = tuple(ins[0].shape[1:])
    if len(got) != len(shape) or any(g is not None and g != s for g, s in zip(got, shape)):
        raise ConfigError("model", spec, f"takes input {got} but the data set's images are {tuple(shape)}",
                          "build it on keras.Input(input_shape) with the input_shape passed to build")
    out = tuple(outs[0].shape[1:])
    if len(out) != 1 or out[0] != classes:
        raise ConfigError("model", spec, f"has output {out} but the data set has {classes} classes",
                          "end it with Dense(num_classes, activation='softmax')")
    if not _ends_in_softmax(_output_layer(model)):
        raise ConfigError("model", spec, "does not end in a softmax (the loss reads class probabilities)",
                          "end it with Dense(num_classes, activation='softmax') or a Softmax layer")


def _rebuild(model, keep_weights: bool):
    """`model` rebuilt from its config under the current dtype policy, its output layer in
    float32; with its weights when `keep_weights`. A model without a config (subclassed)
    is returned as it is."""
    import keras

    policy = keras.mixed_precision.dtype_policy().name
    try:
        ser = keras.saving.serialize_keras_object(model)
        layers = ser["config"]["layers"]
    except (NotImplementedError, KeyError, TypeError):
        return model
    out_name = getattr(_output_layer(model), "name", None)
    for layer in layers:
        conf = layer.get("config", {})
        if layer.get("class_name") == "InputLayer":
            continue
        conf["dtype"] = "float32" if conf.get("name") == out_name else policy
    try:
        new = keras.saving.deserialize_keras_object(ser, safe_mode=True)
    except Exception:  # noqa: BLE001 - a layer class Keras cannot rebuild (the user's own): keep it as built
        return model
    if keep_weights:
        new.set_weights(model.get_weights())
    return new


def _classes_in(path: str) -> list[tuple]:
    """(module, class name) of every Keras object in a .keras file's config.json (read as
    JSON, nothing deserialized); [] when the file is no such archive."""
    out = []

    def walk(o):
        if isinstance(o, dict):
            if "class_name" in o and "registered_name" in o:
                out.append((o.get("module") or "", str(o["class_name"])))
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    try:
        with zipfile.ZipFile(path) as z:
            walk(json.loads(z.read("config.json")))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return []
    return out


def _unloadable(spec: str, path: str, e: BaseException) -> ConfigError:
    """The one line for a .keras file Keras cannot load in safe mode: a layer class of the
    user's own (a .keras file holds its name, not its code) and a Lambda layer (Python code,
    not loaded in safe mode) name `file.py:build` as the fix; else Keras's message."""
    classes = _classes_in(path)
    own = sorted({name for module, name in classes if not module.startswith("keras")})
    fix = "give the Python file that builds it instead: path/to/file.py:build"
    if own:
        return ConfigError("model", spec, f"cannot be loaded: it uses layer classes of your own ({', '.join(own[:5])}), "
                                          "whose code a .keras file does not hold", fix)
    if any(name == "Lambda" for _, name in classes):
        return ConfigError("model", spec, "cannot be loaded: its Lambda layer's Python code is not loaded from a "
                                          "file (safe mode)", fix)
    return ConfigError("model", spec, f"cannot be loaded: {_where(e, path)}",
                       "save it with model.save('model.keras'), or give path/to/file.py:build")


def build(spec: str, shape: tuple, classes: int, weights: str = "keep"):
    """The user's model `spec` for images of `shape` (H, W, C) and `classes` classes, under
    the current dtype policy (call inside the strategy's scope). weights: for a .keras file,
    'keep' (start from its weights) or 'fresh' (architecture only).
    Raises: ConfigError (one line) for every fault of the file or the model."""
    import keras

    path, name = user_model(spec)
    shape, classes = tuple(int(d) for d in shape), int(classes)
    if name is not None:
        fn = load_function(spec)
        try:
            model = fn(shape, classes)
        except Exception as e:  # the user's code: any error, as one line
            raise ConfigError("model", spec, f"raises in {name}(): {_where(e, path)}", FIX) from None
        check(model, spec, shape, classes)
        if keras.mixed_precision.dtype_policy().name == "float32":
            return model
        out = _output_layer(model)
        if getattr(getattr(out, "dtype_policy", None), "compute_dtype", "float32") == "float32":
            return model
        # Its weights go with it: a build() that loads pretrained weights trains those.
        return _rebuild(model, keep_weights=True)
    try:
        model = keras.saving.load_model(path, compile=False, safe_mode=True)
    except Exception as e:  # a damaged or unsafe file: one line
        raise _unloadable(spec, path, e) from None
    check(model, spec, shape, classes)
    return _rebuild(model, keep_weights=weights == "keep")


def _check_main(spec: str, shape_text: str, classes_text: str) -> int:
    """Build `spec` under float32 on this process's backend and check it; one JSON line:
    {'ok': true, 'params': N} or {'ok': false, 'field', 'value', 'problem', 'fix'}."""
    try:
        shape = tuple(int(d) for d in shape_text.split(","))
        model = build(spec, shape, int(classes_text), weights="keep")
        print(json.dumps({"ok": True, "params": int(model.count_params())}))
        return 0
    except ConfigError as e:
        print(json.dumps({"ok": False, "field": e.field, "value": str(e.value), "problem": e.problem,
                          "fix": e.fix}))
        return 2


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "check":
        print("usage: python -m engine.training.user_model check SPEC H,W,C CLASSES", file=sys.stderr)
        sys.exit(64)
    from engine.training import backends

    # Keras imported as the run's worker imports it, keeping out what the worker keeps out (JAX
    # under TensorFlow, pandas: ~1.5 CPU-s of imports), so that a build() the worker cannot
    # import is refused here as well.
    backends.use(os.environ.get("KERAS_BACKEND", "tensorflow"))
    sys.exit(_check_main(*sys.argv[2:]))

