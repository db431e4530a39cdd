"""The golden check: a handful of smoke runs whose metrics must stay byte-identical across
refactors of the engine, the records and the Tune layer.

    python tests/golden.py            # prints the metrics as JSON (what golden_metrics.json holds)
    python tests/golden.py --write    # rewrites tests/golden_metrics.json (after a change that
                                      # is meant to change numbers; say why in the commit)

`tests/test_golden.py` runs the same configs and compares the JSON text exactly. The configs
cover NetTailor and LoRA, values and delta payloads, 32/8/4 bits, FedSGD, FedAdam and FedYogi,
SCAFFOLD and FedProx, stragglers, and each task order. Wall times and the device are left out
(they are not functions of the config); every other number is printed with `repr` (exact).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

SMALL = {"rounds": 5, "data.num_tasks": 5, "data.num_clients": 3, "data.train_per_class": 20,
         "data.test_per_class": 10, "model.width": 8, "client.local_epochs": 1,
         "eval.every": 1, "run.threads": 1, "run.device": "cpu", "run.precision": "fp32"}

CONFIGS: dict[str, dict] = {
    "nettailor-fedsgd-async-32": {"server.optimizer": "fedsgd", "server.lr": 1.0},
    "nettailor-fedadam-sync-delta8": {"schedule.order": "sync", "compression.bits": 8,
                                      "compression.payload": "delta", "server.tau": 0.1},
    "lora-fedadam-fmtl-values4": {"schedule.order": "fmtl", "model.adapter": "lora",
                                  "model.lora_rank": 4, "model.lora_alpha": 8.0,
                                  "compression.bits": 4},
    "nettailor-scaffold-stragglers": {"client.algorithm": "scaffold",
                                      "server.optimizer": "fedsgd",
                                      "participation.straggler_prob": 0.4},
    "lora-fedyogi-fedprox-delta4-sum": {"model.adapter": "lora", "model.lora_rank": 2,
                                        "model.lora_alpha": 4.0, "server.optimizer": "fedyogi",
                                        "client.algorithm": "fedprox",
                                        "compression.bits": 4, "compression.payload": "delta",
                                        "server.aggregate": "sum", "server.lr": 0.1},
}
# The smoke preset as it was when these numbers were written (FedAdam at the defaults): golden
# builds on RunConfig() and these, so a change to the smoke preset leaves it alone.
OLD_SMOKE = {"rounds": 10, "data.num_tasks": 5, "data.num_clients": 3,
             "data.train_per_class": 200, "data.test_per_class": 50,
             "client.local_epochs": 2, "eval.every": 1}
VOLATILE = ("wall_s", "samples_per_s", "device")
GOLDEN = Path(__file__).with_name("golden_metrics.json")


def metrics(name: str) -> dict:
    from fcl.config import RunConfig, with_overrides
    from fcl.engine import run
    res = run(with_overrides(RunConfig(), {**OLD_SMOKE, **SMALL, **CONFIGS[name]}))
    summary = dict(res.summary.items()) if hasattr(res.summary, "items") else dict(res.summary)
    rounds = [{k: v for k, v in r.items() if k not in VOLATILE} for r in res.records]
    tasks = [t.row() for t in res.task_records]
    return {"summary": {k: v for k, v in summary.items() if k not in VOLATILE},
            "rounds": rounds, "tasks": tasks,
            "accuracy": [[repr(float(a)) for a in row] for row in res.accuracy.tolist()]}


def _exact(x):
    """Floats as their repr (JSON would round-trip them anyway; this makes it explicit)."""
    if isinstance(x, float):
        return repr(x)
    if isinstance(x, dict):
        return {k: _exact(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_exact(v) for v in x]
    return x


def golden_text(names=None) -> str:
    return json.dumps({n: _exact(metrics(n)) for n in (names or CONFIGS)}, indent=1,
                      sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    text = golden_text()
    if "--write" in sys.argv[1:]:
        GOLDEN.write_text(text)
        print(f"wrote {GOLDEN}")
    else:
        print(text, end="")
