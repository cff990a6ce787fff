"""The Keras patch registry (engine.training.keras_patches) against the installed Keras.

Fails loudly when Keras is not a version a patch was written for, or when an internal
a patch touches is gone: read the patch's upstream issue, check the patch against the
new Keras, then add the version to its record (or drop the patch).
"""
from __future__ import annotations

import importlib

import numpy as np
import pytest

from engine.training import keras_patches
from tests.helpers.imports import graph

PATCHES = keras_patches.registry()


def _resolve(internal: str):
    module, _, attrs = internal.partition(":")
    obj = importlib.import_module(module)
    for a in attrs.split("."):
        obj = getattr(obj, a)
    return obj


@pytest.mark.unit
def test_the_registry_lists_every_patch_module_once_with_a_complete_record():
    from pathlib import Path

    modules = {p.stem for p in Path(keras_patches.__file__).parent.glob("*.py")} - {"__init__", "patch"}
    assert sorted(keras_patches.NAMES) == sorted(modules)
    assert [p.name for p in PATCHES] == list(keras_patches.NAMES)
    imports = graph()  # engine module -> its engine imports; read here, not when every test process collects
    for p in PATCHES:
        assert p.fixes and p.keras_versions and p.internals and p.used_by.startswith("engine.training.")
        assert p.upstream.startswith("https://github.com/") or p.upstream.startswith("no upstream issue found")
        assert f"| {p.name} |" in keras_patches.__doc__, f"{p.name} is missing from the package's table"
        # "applied by" is true: the module named imports the patch (every import counts, lazy ones too)
        assert f"engine.training.keras_patches.{p.name}" in imports[p.used_by], f"{p.used_by} does not apply {p.name}"


@pytest.mark.tf
@pytest.mark.parametrize("patch", PATCHES, ids=[p.name for p in PATCHES])
def test_installed_keras_is_a_version_the_patch_was_written_for(patch):
    import keras

    assert keras.__version__ in patch.keras_versions, (
        f"Keras {keras.__version__} is installed, but patch {patch.name} ({patch.fixes}) was written for "
        f"Keras {', '.join(patch.keras_versions)}. Check {patch.upstream} and the internals "
        f"{', '.join(patch.internals)} against this Keras, then add the version to "
        f"engine/training/keras_patches/{patch.name}.py (or drop the patch).")


@pytest.mark.tf
@pytest.mark.parametrize("patch", PATCHES, ids=[p.name for p in PATCHES])
def test_every_internal_the_patch_touches_still_exists(patch):
    missing = []
    for internal in patch.internals:
        try:
            _resolve(internal)
        except (ImportError, AttributeError) as e:
            missing.append(f"{internal} ({type(e).__name__}: {e})")
    assert not missing, f"patch {patch.name}: this Keras lacks " + "; ".join(missing)


def _model():
    import keras

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    return model


@pytest.mark.tf
def test_instance_internals_the_patches_read_exist_on_real_objects():
    """The attributes that only exist on live objects: a model's strategy slot, Adam's and
    SGD's slot variables, the tf.function inside Keras's test function."""
    import keras

    from engine.training.keras_patches import (eval_iterator_reset, function_closure, fused_update_step,
                                               learning_rate_attr, symbolic_build)

    model = _model()
    assert hasattr(model, "_distribute_strategy")
    assert symbolic_build.supported()
    assert eval_iterator_reset.uses_cached_iterator()
    model.make_test_function()
    assert function_closure.tf_function(model.test_function) is not None

    var = keras.Variable(np.ones((2, 2), "float32"))
    adam = keras.optimizers.Adam(1e-3)
    adam.build([var])
    m, v = fused_update_step.adam_slots(adam, var)
    assert tuple(m.shape) == tuple(v.shape) == (2, 2)
    sgd = keras.optimizers.SGD(0.1, momentum=0.9)
    sgd.build([var])
    assert tuple(fused_update_step.sgd_momentum_slot(sgd, var).shape) == (2, 2)

    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    opt = keras.optimizers.SGD(schedule)
    assert learning_rate_attr.schedule_of(opt) is schedule
    assert learning_rate_attr.schedule_of(keras.optimizers.SGD(0.1)) is None
    halved = keras.optimizers.schedules.ExponentialDecay(0.05, 10, 0.5)
    learning_rate_attr.set_schedule(opt, halved)
    assert float(opt.learning_rate) == pytest.approx(0.05)  # Keras reads the schedule it was given
