"""A package's names loaded on first use (PEP 562), so that importing the package stays light:

_LAZY = {"train_reveal": "trainer", ...}          # name -> the module of the package that defines it
__getattr__ = lazy(__name__, _LAZY, globals())
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy(package: str, where: dict[str, str], namespace: dict) -> Callable[[str], object]:
    """The package's module-level `__getattr__`: a name of `where` is imported from its module when first read, then
    kept in the package's `namespace`; any other name is an AttributeError."""

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        return value

    return __getattr__
