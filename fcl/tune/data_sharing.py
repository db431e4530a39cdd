"""Which trials of a study share data: one loaded data set per `dataset_key` (loaded once in
the driver, sent to each node once through the object store) and one prepared (cut into tasks
and client shards) per `data_signature` in a worker."""
from __future__ import annotations

import dataclasses

from fcl.config import RunConfig


def data_signature(cfg: RunConfig) -> tuple:
    """What prepared data depends on: the data.* keys and the seed (class order and client
    partition are drawn from it). Only trials with equal signatures may share prepared data."""
    return tuple(sorted((k, v) for k, v in cfg.to_flat().items() if k.startswith("data."))) + (
        ("seed", cfg.seed),)


# DataConfig fields that only `build_federated_data` reads (the cut into tasks and client shards,
# done per trial); every other data field may change what a loader returns.
CUT_FIELDS = ("num_tasks", "num_clients", "partition", "alpha", "min_client_samples",
              "train_per_class", "test_per_class", "class_order", "augment")


def dataset_key(cfg: RunConfig) -> tuple:
    """Which loaded data set a trial cuts its tasks from: trials that differ only in how the
    data is cut (or in the seed) share one loaded copy."""
    return tuple((f.name, getattr(cfg.data, f.name)) for f in dataclasses.fields(cfg.data)
                 if f.name not in CUT_FIELDS)
