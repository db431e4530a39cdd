"""run.compile: the forward compiled where the setting says, every call going through it, the
numbers those of eager where the backend does not change the arithmetic. Dynamo's `eager`
backend stands in for inductor here (the same graphs, captured for real, without C++ codegen:
a cold inductor compile takes minutes on 2 busy cores); benchmarks/compile_step.py times
inductor itself."""
import pytest
import torch
from torch._dynamo.utils import counters

from fcl import compile_policy
from fcl.config import ConfigError, with_overrides
from fcl.engine import run
from fcl.presets import preset
from synthetic import SMALL, one_thread, synthetic_data  # noqa: F401  (one_thread: a fixture)

pytestmark = pytest.mark.usefixtures("one_thread")

BASE = {**SMALL, "data.num_tasks": 2, "rounds": 4, "eval.every": 1,
        "run.channels_last": "false"}


@pytest.fixture
def traced_backend(monkeypatch):
    monkeypatch.setattr(compile_policy, "BACKEND", "eager")
    yield
    torch.compiler.reset()


def run_at(data, **runtime):
    return run(preset("smoke", {**BASE, **{f"run.{k}": v for k, v in runtime.items()}}),
               data=data)


def test_a_compiled_run_goes_through_its_graphs_and_keeps_eagers_numbers(traced_backend):
    data = synthetic_data([20, 20, 20])
    eager = run_at(data, compile="false")
    counters.clear()
    compiled = run_at(data, compile="true")
    assert compiled.summary["compiled"] is True and eager.summary["compiled"] is False
    # training and evaluation both compiled: a graph with gradients and one without
    assert counters["stats"]["unique_graphs"] >= 2
    assert torch.equal(compiled.accuracy, eager.accuracy)
    assert compiled.summary["acc"] == eager.summary["acc"]


def test_auto_compiles_only_where_a_graphs_training_work_reaches_the_bound(traced_backend,
                                                                          monkeypatch):
    data = synthetic_data([20, 20, 20])
    assert run_at(data, compile="auto").summary["compiled"] is False   # a few MFLOP a graph
    monkeypatch.setattr(compile_policy, "AUTO_MIN_TRAIN_FLOP", 0)
    monkeypatch.setattr(compile_policy, "AUTO_MIN_FORWARD_FLOP", 0)
    assert run_at(data, compile="auto").summary["compiled"] is True


def test_the_training_work_per_graph_is_the_forward_times_three_times_the_samples():
    from fcl.models.factory import build_model
    data = synthetic_data([20, 20, 20])
    cfg = preset("smoke", BASE)
    model = build_model(cfg.model, data.image_shape, data.classes_per_task(), cfg.seed)
    per_sample = compile_policy.forward_flop_per_sample(model, data)
    assert per_sample > 0
    longer = with_overrides(cfg, {"rounds": 8})
    assert compile_policy.train_flop_per_graph(longer, model, data) == pytest.approx(
        2 * compile_policy.train_flop_per_graph(cfg, model, data))


def test_a_compiled_vmapped_client_step_is_refused_and_auto_stays_eager():
    data = synthetic_data([20, 20, 20])
    with pytest.raises(ConfigError, match="run.compile=true: .*run.client_batching"):
        run_at(data, compile="true", client_batching="true")
    assert run_at(data, compile="auto", client_batching="true").summary["compiled"] is False
