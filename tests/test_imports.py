"""No import cycle hides in the package: every module of `fcl` imports alone, first, in a fresh
interpreter (a cycle fails when its second module is imported before its first)."""
import os
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


def test_fcl_sets_gnu_openmps_spin_count_unless_the_user_chose_a_wait():
    """`import fcl` shortens GNU OpenMP's spinning before torch loads (docs/benchmarks.md,
    "Threads under load"); a wait policy or spin count the user set is left alone."""
    show = ("import os, fcl; print(os.environ.get('GOMP_SPINCOUNT'), "
            "os.environ.get('OMP_WAIT_POLICY'))")
    base = {k: v for k, v in os.environ.items()
            if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    cases = [({}, "10000 None"), ({"GOMP_SPINCOUNT": "500"}, "500 None"),
             ({"OMP_WAIT_POLICY": "ACTIVE"}, "None ACTIVE")]
    for extra, want in cases:
        p = subprocess.run([sys.executable, "-c", show], capture_output=True, text=True,
                           timeout=120, env={**base, **extra})
        assert p.stdout.strip() == want, (extra, p.stdout, p.stderr[-500:])
