"""The one table that names methods: `model.adapter` -> its `Method` value.

fcl's own methods are listed in `BUILT_IN`. A method from elsewhere is one module (or package)
whose `METHOD` is a `Method`: name the module in the `FCL_METHODS` environment variable
(comma-separated), or its `METHOD` as an entry point of the group `fcl.methods` in its package's
metadata. Either is loaded the first time the table is read; `register` adds one by hand. A study also ships the driver's
methods from elsewhere to its trials (`plugins`, `adopt`), so a worker need not import them.
"""
from __future__ import annotations

import importlib
import os
from importlib.metadata import entry_points

from fcl.methods.contract import Method
from fcl.methods.fedpara import METHOD as FEDPARA
from fcl.methods.fedweit import METHOD as FEDWEIT
from fcl.methods.full import METHOD as FULL
from fcl.methods.lora import METHOD as LORA
from fcl.methods.nettailor import METHOD as NETTAILOR
from fcl.methods.zerofl import METHOD as ZEROFL

BUILT_IN = (NETTAILOR, LORA, FULL, FEDWEIT, FEDPARA, ZEROFL)
ENTRY_POINT_GROUP = "fcl.methods"
_TABLE: dict[str, Method] = {m.name: m for m in BUILT_IN}
_plugins_loaded = False


def register(method: Method) -> Method:
    """Add `method` under its name (a name taken by another value is an error)."""
    held = _TABLE.get(method.name)
    if held is not None and held is not method:
        raise ValueError(f"model.adapter={method.name} is already registered")
    _TABLE[method.name] = method
    return method


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    names = filter(None, (m.strip() for m in os.environ.get("FCL_METHODS", "").split(",")))
    found = [getattr(importlib.import_module(name), "METHOD", None) for name in names]
    found += [point.load() for point in entry_points(group=ENTRY_POINT_GROUP)]
    for value in found:
        if isinstance(value, Method):
            register(value)


def unregister(name: str) -> None:
    """Take the method `name` out of the table (one registered by hand, e.g. for a notebook's
    or a test's while); fcl's own stay."""
    if any(m.name == name for m in BUILT_IN):
        raise ValueError(f"model.adapter={name} is one of fcl's own methods")
    _TABLE.pop(name, None)


def plugins() -> tuple[Method, ...]:
    """The registered methods that are not fcl's own (a study ships them to its workers)."""
    return tuple(m for m in methods().values() if m not in BUILT_IN)


def adopt(shipped: tuple[Method, ...]) -> None:
    """Register the methods a driver shipped (`plugins`) that this process lacks (a worker
    whose environment did not name their modules)."""
    for m in shipped:
        if m.name not in methods():
            register(m)


def methods() -> dict[str, Method]:
    """Every registered method, by name."""
    _load_plugins()
    return dict(_TABLE)


def names() -> tuple[str, ...]:
    return tuple(methods())


def method(name: str) -> Method:
    """The method named `name` (KeyError: none; the config's check names the allowed ones)."""
    return methods()[name]


def method_of(flat: dict) -> Method:
    """The method of a stored flat config, spelled as today (`Method.spelled_before`)."""
    for m in methods().values():
        if m.spelled_before is not None and m.spelled_before(flat):
            return m
    return method(str(flat["model.adapter"]))
