"""Every registered adapter, client algorithm and server optimizer honours the engine's
contract (the registries are iterated, so a new entry is checked without a new test)."""
import pytest
import torch

from fcl.config import ClientConfig, ModelConfig, ServerConfig
from fcl.engine import run
from fcl.federated.client_algorithms import ALGORITHMS
from fcl.federated.server_opt import OPTIMIZERS
from fcl.models.contract import TaskModel, adapter_params
from fcl.methods.registry import BUILT_IN, methods
from fcl.models.factory import build_model
from fcl.presets import preset

FAST = {"rounds": 2, "data.num_tasks": 2, "data.num_clients": 2, "data.train_per_class": 20,
        "data.test_per_class": 10, "client.local_epochs": 1, "run.threads": 1}


# the keys a method needs away from their defaults to be itself (ZeroFL trains sparse)
OWN = {"zerofl": {"zerofl_sparsity": 0.5}}


def choices(section, key):
    return set(section.__dataclass_fields__[key].metadata["choices"])


def test_the_registries_are_the_config_choices():
    assert set(methods()) == choices(ModelConfig, "adapter") >= {m.name for m in BUILT_IN}
    assert set(ALGORITHMS) == choices(ClientConfig, "algorithm")
    assert set(OPTIMIZERS) == choices(ServerConfig, "optimizer")


@pytest.mark.parametrize("adapter", sorted(methods()))
def test_every_adapter_is_a_task_model(adapter):
    model = build_model(ModelConfig(adapter=adapter, width=8, **OWN.get(adapter, {})),
                        (1, 28, 28), [2, 3], seed=0)
    assert isinstance(model, TaskModel)
    assert not any(p.requires_grad for p in model.backbone.parameters())
    trained = adapter_params(model)
    assert trained and all(p.requires_grad for p in trained.values())
    backbone = {id(p) for p in model.backbone.parameters()}
    assert not backbone & {id(p) for p in trained.values()}
    x = torch.randn(4, 1, 28, 28)
    assert [tuple(model(x, t).shape) for t in (0, 1)] == [(4, 2), (4, 3)]
    loss = model(x, 1).sum()
    extra = model.extra_loss(1)
    if extra is not None:
        loss = loss + extra
    loss.backward()
    grads = {n: p.grad for n, p in trained.items()}
    assert all(g is None or not g.abs().sum() for n, g in grads.items() if n.startswith("tasks.0."))
    assert any(g is not None and g.abs().sum() > 0 for n, g in grads.items()
               if n.startswith("tasks.1."))


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_every_algorithm_runs_with_every_server_optimizer(algorithm, optimizer):
    res = run(preset("smoke", {**FAST, "client.algorithm": algorithm,
                               "server.optimizer": optimizer, "server.lr": 0.1}))
    assert len(res.records) == 2 and res.summary["bytes_up"] > 0
    assert all(torch.isfinite(res.accuracy[:, -1]))
