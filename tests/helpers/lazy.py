"""A module imported on first use, so that collecting a test file imports no framework.

Test files that need TensorFlow, Keras or JAX bind them with `lazy("tensorflow")` instead
of a top-level import: pytest imports every test file at collection, so one top-level
`import tensorflow` loads TF into every test process, also the ones that run only page
tests (docs/testing.md, "Page tests and TensorFlow").
"""
from __future__ import annotations

import importlib
from types import ModuleType


class _Lazy(ModuleType):
    def __init__(self, name: str):
        super().__init__(name)
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attr):
        if attr.startswith("_") or attr.startswith("pytest"):
            # pytest's collection probes objects for names like these (_mock_name, pytestmark,
            # __test__): answering them must not import. Nothing private is read through a lazy module.
            raise AttributeError(attr)
        module = importlib.import_module(self.__dict__["_lazy_name"])
        return getattr(module, attr)


def lazy(name: str) -> ModuleType:
    """`name`, imported when an attribute is first read (e.g. `tf.constant`)."""
    return _Lazy(name)
