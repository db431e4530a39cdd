"""Named starting points. Presets change sizes and data, never the meaning of a key.

| preset  | what                                                                         |
|---------|------------------------------------------------------------------------------|
| smoke   | bundled Split Fashion-MNIST (200 images/class), T=5, N=3, R=10: seconds       |
| local   | the bundled set, T=5, N=5, R=50, K=2: a meaningful run on 2 CPU cores        |
| paper   | Table 2 of the FCL paper (ResNet-18, T=10, N=5, R=300, K=2, FedAdam 0.5)      |
"""
from __future__ import annotations

from fcl.config import RunConfig, with_overrides

PRESETS: dict[str, dict] = {
    "smoke": {
        "rounds": 10, "data.num_tasks": 5, "data.num_clients": 3,
        "data.train_per_class": 200, "data.test_per_class": 50,
        "client.local_epochs": 2, "eval.every": 1,
    },
    "local": {
        "rounds": 50, "data.num_tasks": 5, "data.num_clients": 5,
        "client.local_epochs": 2, "eval.every": 5,
    },
    "paper": {
        # Table 2; the data set is the bundled one until the CIFAR-100 loader lands, so T is
        # capped by its 10 classes.
        "rounds": 300, "data.num_tasks": 5, "data.num_clients": 5, "model.backbone": "resnet18",
        "model.norm": "batch", "client.lr": 0.05, "client.local_epochs": 2,
        "client.batch_size": 32, "server.optimizer": "fedadam", "server.lr": 0.5,
        "schedule.order": "async", "eval.every": 1,
    },
}


def preset(name: str, overrides: dict | None = None) -> RunConfig:
    from fcl.config import ConfigError
    if name not in PRESETS:
        raise ConfigError("--preset", name, "unknown preset", ", ".join(PRESETS))
    return with_overrides(with_overrides(RunConfig(), PRESETS[name]), overrides or {})
