"""No import cycle hides in the package: every module of `fcl` imports alone, first, in a fresh
interpreter (a cycle fails when its second module is imported before its first)."""
import pkgutil
import subprocess
import sys

import fcl

SCRIPT = """
import importlib, sys
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "fcl" or m.startswith("fcl.")]:
        del sys.modules[loaded]
    importlib.import_module(name)
"""


def test_every_module_imports_alone():
    modules = sorted(m.name for m in pkgutil.walk_packages(fcl.__path__, "fcl.")
                     if not m.name.endswith("__main__"))
    assert len(modules) > 40
    p = subprocess.run([sys.executable, "-c", SCRIPT, *modules], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
