"""Tiny synthetic federated data and a one-thread fixture, for tests of the compute paths."""
import pytest
import torch

from fcl.data.federated import FederatedData, TaskData

# smoke-preset overrides for a tiny model that still has every part (width 8; `adapter` adds
# LoRA r = 4 where the adapter is LoRA: a LoRA key on another method's run is refused)
SMALL = {"model.width": 8, "client.batch_size": 16, "client.local_epochs": 2,
         "client.lr": 0.02, "client.momentum": 0.9, "client.weight_decay": 1e-3,
         "rounds": 5, "data.train_per_class": 40, "data.test_per_class": 10}
LORA = {"model.lora_rank": 4, "model.lora_alpha": 8.0}


def adapter(name: str) -> dict:
    """SMALL's overrides for a run of adapter `name`."""
    return {**SMALL, "model.adapter": name, **(LORA if name == "lora" else {})}


@pytest.fixture
def one_thread():
    """Tiny tensors: one thread is faster, and far faster when other jobs load the two cores
    (an OpenMP barrier then waits for a descheduled thread)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def synthetic_data(sizes: list[int], channels: int = 3, side: int = 12) -> FederatedData:
    """One task of random RGB images (no flat backgrounds: ReLU ties are what makes float32
    paths part ways), its training set cut into shards of the given sizes."""
    g = torch.Generator().manual_seed(0)
    n = sum(sizes)
    x = torch.randint(0, 256, (n, channels, side, side), dtype=torch.uint8, generator=g)
    y = torch.randint(0, 3, (n,), generator=g)
    shards = tuple(torch.arange(n).split(sizes))
    task = TaskData((0, 1, 2), x, y, x[:20], y[:20], shards)
    return FederatedData((task,), torch.full((1, channels, 1, 1), 0.5),
                         torch.full((1, channels, 1, 1), 0.25), (channels, side, side))
