"""The golden check: a handful of smoke runs whose metrics must stay byte-identical across
refactors of the engine, the records and the Tune layer.

    python tests/golden.py            # prints the metrics as JSON (what golden_metrics.json holds)
    python tests/golden.py --write    # writes this machine's kind into tests/golden_metrics.json
                                      # (a new machine kind, or a change meant to change numbers:
                                      # say why in the commit)

Float results are bit-identical on one machine, not across machines: oneDNN picks other
kernels on an AVX-512 CPU than on an AVX2 one, and they sum in another order. So the file keeps
one golden set per machine kind (`machine_kind`: the CPU's widest vector ISA and torch's
version). `tests/test_golden.py` compares the JSON text exactly where the file has this
machine's kind; on another kind it compares every count, byte total and JSON key exactly and
every float within a relative 1e-4 (absolute 1e-6) of the first stored kind (and says so in its name).
`--write` adds or replaces this machine's kind only. The configs
cover NetTailor and LoRA, values and delta payloads, 32/8/4 bits, FedSGD, FedAdam and FedYogi,
SCAFFOLD and FedProx, stragglers, and each task order. Wall times and the device are left out
(they are not functions of the config); every other number is printed with `repr` (exact).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ISA_FLAGS = ("amx_tile", "avx512_bf16", "avx512f", "avx2")     # widest first

# The last three keys pin how the runs compute (fp32, NCHW, evaluation batch 1024: the defaults
# when the numbers were written). The defaults now follow the device (auto); pinned, a golden
# set tests the engine, not which kernels a machine picks.
SMALL = {"rounds": 5, "data.num_tasks": 5, "data.num_clients": 3, "data.train_per_class": 20,
         "data.test_per_class": 10, "model.width": 8, "client.local_epochs": 1,
         "eval.every": 1, "run.threads": 1, "run.device": "cpu", "run.precision": "fp32",
         "run.channels_last": "false", "eval.batch_size": 1024}

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
VOLATILE = ("wall_s", "samples_per_s", "device", "cpu", "gpu")
# per-client models only (FedWeIT, which no golden config runs): NaN here, added after the file
PER_CLIENT = ("accuracy_held",)
GOLDEN = Path(__file__).with_name("golden_metrics.json")


def metrics(name: str) -> dict:
    from fcl.config import RunConfig, with_overrides
    from fcl.engine import run
    res = run(with_overrides(RunConfig(), {**OLD_SMOKE, **SMALL, **CONFIGS[name]}))
    summary = dict(res.summary.items()) if hasattr(res.summary, "items") else dict(res.summary)
    rounds = [{k: v for k, v in r.items() if k not in VOLATILE} for r in res.records]
    tasks = [{k: v for k, v in t.row().items() if k not in PER_CLIENT} for t in res.task_records]
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


def machine_kind() -> str:
    """`avx512_bf16-torch2.14.1`: what decides which float kernels a CPU run uses."""
    import platform

    import torch
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("flags")).split()
    except (OSError, StopIteration):
        flags = []
    isa = next((f for f in ISA_FLAGS if f in flags), platform.machine() or "cpu")
    return f"{isa}-torch{torch.__version__.split('+')[0]}"


def stored() -> dict[str, dict]:
    """{machine kind: {config: metrics}} as the file holds them."""
    return json.loads(GOLDEN.read_text())


def golden_text(names=None) -> str:
    return json.dumps({n: _exact(metrics(n)) for n in (names or CONFIGS)}, indent=1,
                      sort_keys=True) + "\n"


def close(a, b, rel: float = 1e-4, path: str = "", absolute: float = 1e-6) -> list[str]:
    """Where two golden JSON values differ beyond `rel` (or `absolute`: a cosine distance near 0
    is 1 - cos in float32, whose last bits are noise) for floats, written as repr strings, or
    at all for everything else."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(a.keys() ^ b.keys())}"]
        return [d for k in a for d in close(a[k], b[k], rel, f"{path}.{k}", absolute)]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} vs {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b))
                for d in close(x, y, rel, f"{path}[{i}]", absolute)]
    if isinstance(a, str) and isinstance(b, str) and a != b:
        try:
            x, y = float(a), float(b)
        except ValueError:
            return [f"{path}: {a!r} vs {b!r}"]
        if not (x == y or abs(x - y) <= max(rel * max(abs(x), abs(y)), absolute)):
            return [f"{path}: {a} vs {b}"]
        return []
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    text = golden_text()
    if "--write" in sys.argv[1:]:
        kinds = stored() if GOLDEN.exists() else {}
        kinds[machine_kind()] = json.loads(text)
        GOLDEN.write_text(json.dumps(kinds, indent=1, sort_keys=True) + "\n")
        print(f"wrote {machine_kind()} into {GOLDEN}")
    else:
        print(text, end="")
