"""The driver's methods from outside fcl (`fcl.methods.registry.plugins`), shipped to every trial
by value: a worker (another node, or a local worker started before the driver named them in
`FCL_METHODS`) registers them before it reads the trial's config (`adopt`), and needs neither
the module on its path nor the variable in its environment."""
from __future__ import annotations

import sys

from ray import cloudpickle

from fcl.methods.contract import Method
from fcl.methods.registry import adopt, plugins


def shipped() -> tuple[Method, ...]:
    """The plugin methods, their modules pickled by value (functions and classes with them)."""
    found = plugins()
    for m in found:
        module = sys.modules.get(m.build.__module__)
        if module is not None and not module.__name__.startswith("fcl."):
            cloudpickle.register_pickle_by_value(module)
    return found


def received(methods: tuple[Method, ...]) -> None:
    adopt(methods)
