"""run.precision and run.channels_last: how tensors are computed, never what is sent."""
import pytest
import torch

from fcl.cli import main
from fcl.compute_mode import ComputeMode
from fcl.config import RunConfig, RuntimeConfig
from fcl.engine import run
from fcl.presets import PRESETS, preset
from synthetic import SMALL, one_thread, synthetic_data  # noqa: F401  (one_thread: a fixture)

pytestmark = pytest.mark.usefixtures("one_thread")

# NCHW unless a test says otherwise (the default, auto, is NHWC on an AVX-512 CPU)
BASE = {**SMALL, "data.num_tasks": 1, "rounds": 2, "eval.every": 1, "run.channels_last": "false"}


def run_with(data, **runtime):
    states = []
    cfg = preset("smoke", {**BASE, **{f"run.{k}": v for k, v in runtime.items()}})
    res = run(cfg, data=data, on_round=lambda rec, st: states.append(st))
    return res, states[-1]


def test_forward_context_autocasts_only_in_bf16():
    cpu = torch.device("cpu")
    with ComputeMode.from_config(RuntimeConfig(precision="fp32"), cpu).forward_context():
        assert not torch.is_autocast_enabled("cpu")
    with pytest.warns(RuntimeWarning) if not torch.ops.mkldnn._is_mkldnn_bf16_supported() \
            else _nothing():
        mode = ComputeMode.from_config(RuntimeConfig(precision="bf16"), cpu)
    with mode.forward_context():
        assert torch.is_autocast_enabled("cpu")
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.filterwarnings("ignore:run.precision=bf16")
def test_bf16_trains_in_bf16_but_state_and_messages_stay_float32():
    data = synthetic_data([20, 20, 20])
    fp32, s32 = run_with(data)
    bf16, s16 = run_with(data, precision="bf16")
    for ts in s16.tasks:
        assert all(t.dtype == torch.float32 for t in ts.params.values())
        assert all(t.dtype == torch.float32 for t in ts.opt.m.values())
    assert [r["bytes_up"] for r in bf16.records] == [r["bytes_up"] for r in fp32.records]
    a, b = fp32.records[-1]["train_loss"], bf16.records[-1]["train_loss"]
    assert a != b and b == pytest.approx(a, rel=0.05)      # bf16 did run, and stayed close


def test_channels_last_changes_the_layout_not_the_numbers():
    data = synthetic_data([20, 20, 20])
    plain, s_plain = run_with(data)
    model_holder = {}
    cfg = preset("smoke", {**BASE, "run.channels_last": True})
    from fcl.models.factory import build_model
    model = build_model(cfg.model, data.image_shape, data.classes_per_task(), cfg.seed)
    cl = run(cfg, data=data, model=model,
             on_round=lambda rec, st: model_holder.__setitem__("state", st))
    convs = [p for p in model.parameters() if p.dim() == 4 and p.shape[1] > 1]
    assert convs and all(p.is_contiguous(memory_format=torch.channels_last) for p in convs)
    for a, b in zip(plain.records, cl.records):
        assert b["train_loss"] == pytest.approx(a["train_loss"], rel=1e-4)
    for n, v in s_plain.tasks[0].params.items():
        assert torch.allclose(model_holder["state"].tasks[0].params[n], v, atol=1e-5), n


def test_bad_precision_is_one_line_and_exit_2(capsys):
    assert main(["run", "--preset", "smoke", "--set", "run.precision=fp16"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: run.precision=fp16: unknown value; allowed: did you mean bf16? fp32, "
                   "bf16, auto"]


@pytest.mark.parametrize("native, expected", [(True, "bf16"), (False, "fp32")])
def test_auto_precision_is_bf16_only_where_the_cpu_has_native_kernels(monkeypatch, native,
                                                                     expected):
    import fcl.compute_mode
    from fcl.compute_mode import resolve_precision
    monkeypatch.setattr(fcl.compute_mode, "native_cpu_bf16", lambda: native)
    cpu = torch.device("cpu")
    assert resolve_precision("auto", cpu) == expected
    assert resolve_precision("fp32", cpu) == "fp32" and resolve_precision("bf16", cpu) == "bf16"
    assert ComputeMode.from_config(RuntimeConfig(precision="auto"), cpu).precision == expected


def test_the_run_summary_says_which_precision_ran():
    res, _ = run_with(synthetic_data([20, 20, 20]), precision="auto")
    native = torch.ops.mkldnn._is_mkldnn_bf16_supported()
    assert res.summary["precision"] == ("bf16" if native else "fp32")


@pytest.mark.parametrize("capability, native", [("AVX512", True), ("AVX2", False),
                                                ("DEFAULT", False)])
def test_auto_channels_last_is_nhwc_on_an_avx512_cpu_and_on_cuda(monkeypatch, capability,
                                                                 native):
    from fcl.compute_mode import resolve_channels_last
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert resolve_channels_last("auto", cpu) is native
    assert resolve_channels_last("auto", cuda) is True
    for device in (cpu, cuda):
        assert resolve_channels_last("true", device) is True
        assert resolve_channels_last("false", device) is False
    mode = ComputeMode.from_config(RuntimeConfig(channels_last="auto"), cpu)
    assert mode.channels_last is native and mode.layout == ("nhwc" if native else "nchw")


def test_auto_client_batching_is_on_only_on_cuda():
    from fcl.compute_mode import resolve_client_batching
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert resolve_client_batching("auto", cpu) is False
    assert resolve_client_batching("auto", cuda) is True
    for device in (cpu, cuda):
        assert resolve_client_batching("true", device) is True
        assert resolve_client_batching("false", device) is False
    assert ComputeMode.from_config(RuntimeConfig(client_batching="auto"), cpu).client_batching \
        is False


def test_the_run_summary_says_whether_clients_were_batched():
    data = synthetic_data([20, 20, 20])
    assert run_with(data)[0].summary["batched_clients"] is False
    assert run_with(data, client_batching="true")[0].summary["batched_clients"] is True
    assert run_with(data, client_batching="auto")[0].summary["batched_clients"] is False  # CPU


def test_the_run_summary_says_which_layout_ran():
    data = synthetic_data([20, 20, 20])
    assert run_with(data)[0].summary["layout"] == "nchw"
    assert run_with(data, channels_last="true")[0].summary["layout"] == "nhwc"
    avx512 = torch.backends.cpu.get_cpu_capability() == "AVX512"
    auto = run_with(data, channels_last="auto")[0].summary["layout"]
    assert auto == ("nhwc" if avx512 else "nchw")


def test_every_preset_computes_as_measured_fastest_on_the_device():
    """docs/benchmarks.md, "The defaults": the device's layout, evaluation batch and bf16 where
    native, but fp32 for resnet_tiny at width 16, which trained faster in fp32 + NHWC than in
    bf16 + NHWC. Stored studies keep what they ran at in their manifests."""
    default = RunConfig()
    assert (default.run.precision, default.run.channels_last, default.eval.batch_size) == (
        "auto", "auto", 0)
    fp32 = {"smoke", "local", "cifar10-local", "cifar10-local-pretrained", "cifar10-drift",
            "flocora-cifar10-local"}
    for name in PRESETS:
        cfg = preset(name)
        assert (cfg.run.channels_last, cfg.eval.batch_size) == ("auto", 0), name
        assert cfg.run.precision == ("fp32" if name in fp32 else "auto"), name
        if cfg.run.precision == "fp32":
            assert (cfg.model.backbone, cfg.model.width) == ("resnet_tiny", 16), name


@pytest.mark.parametrize("image_bytes, batch", [
    (64 * 32 * 32 * 4, 32),        # ResNet-8's first layer: 256 KiB an image
    (16 * 32 * 32 * 4, 128),       # cifar10-local's resnet_tiny at width 16
    (100_000, 64),                 # not a power of two: the one below
    (10, 1024), (10**9, 8)])       # clamped to 8..1024
def test_auto_eval_batch_on_a_cpu_keeps_the_largest_activation_in_8_mib(image_bytes, batch):
    from fcl.compute_mode import eval_batch_size
    assert eval_batch_size(0, torch.device("cpu"), lambda: image_bytes) == batch


def test_auto_eval_batch_is_1024_on_a_gpu_and_a_number_stays():
    from fcl.compute_mode import eval_batch_size
    assert eval_batch_size(0, torch.device("cuda"), lambda: 1 / 0) == 1024   # nothing measured
    for device in ("cpu", "cuda"):
        assert eval_batch_size(64, torch.device(device), lambda: 1 / 0) == 64


def test_largest_activation_counts_modules_called_inside_others():
    from torch import nn
    from fcl.compute_mode import largest_activation_bytes
    net = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.Conv2d(64, 8, 3, padding=1))
    image = torch.zeros(5, 3, 32, 32)
    assert largest_activation_bytes(net, image) == 64 * 32 * 32 * 4   # one image, as float32
    assert not nn.modules.module._global_forward_hooks               # the hook is gone


@pytest.mark.parametrize("capability", ["AVX512", "AVX2"])
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_evaluation_batches_are_nhwc_only_where_the_run_is(monkeypatch, capability, device):
    from fcl.compute_mode import eval_channels_last
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    assert eval_channels_last(True, torch.device(device)) is True
    assert eval_channels_last(False, torch.device(device)) is False
