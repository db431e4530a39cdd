"""fcl: federated continual learning runs and hyperparameter studies.

    import fcl
    result = fcl.run("smoke", {"seed": 1})      # fcl.api.run: one run, a RunResult
    cfg = fcl.configure("smoke", {"rounds": 5}) # fcl.api.configure: a preset's RunConfig
    models = fcl.load_model("model_dir")        # fcl.saved_model: what `fcl run --save-model` wrote

`run`, `configure` and `load_model` are imported on first use (module `__getattr__`): so
`import fcl`, e.g. for `fcl.__version__`, stays instant and imports neither torch nor Ray. The
Ray Tune layer is `fcl.tune` (it imports Ray).
"""
import os

__version__ = "0.1.0"

# GNU OpenMP's threads (torch's intra-op pool on Linux) spin 10,000 times at a parallel region
# before they sleep, not 300,000: a single run beside busy processes ran 1.66x faster, alone as
# fast (docs/benchmarks.md, "Threads under load"). It changes no number a run computes. OpenMP
# reads it when torch loads, so it is set before; a user's OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", "10000")

_LAZY = {"run": "fcl.api", "configure": "fcl.api", "load_model": "fcl.saved_model"}
__all__ = ["__version__", "configure", "load_model", "run"]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'fcl' has no attribute {name!r}")
