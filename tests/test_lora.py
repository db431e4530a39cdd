"""FLoCoRA's LoRA task modules and the `full` (FedAvg) baseline: identity at init, what trains,
a frozen backbone, and parameter counts of ResNet-8 worked out by hand."""
import pytest
import torch
import torch.nn.functional as F

from fcl.config import ModelConfig
from fcl.models.factory import build_model
from fcl.methods.lora.model import LoRAConv
from fcl.models.task_state import trainable_names


def lora(backbone="resnet_tiny", norm="group", classes=(2, 2), **kw):
    cfg = ModelConfig(backbone=backbone, norm=norm, adapter="lora", **kw)
    return build_model(cfg, (3, 16, 16), list(classes), seed=0)


@pytest.mark.parametrize("backbone,norm,stem", [("resnet_tiny", "batch", {}),
                                               ("resnet8", "group", {}),
                                               ("resnet_tiny", "group",
                                                {"stem": "imagenet", "input_size": 24})])
@pytest.mark.parametrize("on_head", [False, True])
def test_lora_model_equals_the_frozen_base_at_init_exactly(backbone, norm, stem, on_head):
    model = lora(backbone, norm, lora_rank=4, lora_alpha=64, lora_on_head=on_head, **stem).eval()
    x = torch.randn(5, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        base = model.backbone.features(x)
        for t in range(2):
            assert torch.equal(model.features(x, t), base)
        if on_head:                      # frozen random FC + zero-initialised adapter
            head = model.tasks[0].head.base
            assert torch.equal(model(x, 0), F.linear(base, head.weight, head.bias))


def test_merged_kernel_is_the_down_then_up_convolution():
    """conv(x, W + s A.B) == conv(x, W) + s * A(B(x)) for a strided, padded conv."""
    g = torch.Generator().manual_seed(1)
    base = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
    ad = LoRAConv(base, rank=2, alpha=6.0)
    with torch.no_grad():
        ad.up.copy_(torch.randn(ad.up.shape, generator=g))
    x = torch.randn(2, 3, 9, 9, generator=g)
    two_convs = base(x) + 3.0 * F.conv2d(F.conv2d(x, ad.down, stride=2, padding=1), ad.up)
    torch.testing.assert_close(ad(x, base), two_convs, rtol=1e-5, atol=1e-5)


def _kinds(model, task=0):
    return {n.split(".")[0] + "." + n.rsplit(".", 1)[1] for n in trainable_names(model.tasks[task])}


def test_only_adapters_norms_and_head_require_grad():
    model = lora()
    assert _kinds(model) == {"adapters.down", "adapters.up", "norms.weight", "norms.bias",
                             "head.weight", "head.bias"}
    assert not any(p.requires_grad for p in model.backbone.parameters())
    # Table II "Vanilla": LoRA on the FC too, norms frozen -> only LoRA factors train
    vanilla = lora(lora_on_head=True, lora_train_norms=False)
    assert _kinds(vanilla) == {"adapters.down", "adapters.up", "head.down", "head.up"}
    assert not vanilla.tasks[0].head.base.weight.requires_grad
    # every conv of the backbone has an adapter: stem, 2 per block, 1x1 shortcuts
    convs = [n for n, m in model.backbone.named_modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(model.tasks[0].adapters) == len(convs) == 1 + 3 * 2 + 3


def resnet8_counts_by_hand():
    """ResNet-8 on CIFAR-10 (3 input channels, 10 classes), convs without bias, GroupNorm.
    convs: stem 3*64*9 = 1,728; block 1 2 * 64*64*9 = 73,728; block 2 64*128*9 + 128*128*9
    + 1x1 shortcut 64*128 = 229,376; block 3 128*256*9 + 256*256*9 + 128*256 = 917,504;
    total 1,222,336. Norms (weight + bias): 2*(64 + 2*64 + 3*128 + 3*256) = 2,688.
    FC: 256*10 + 10 = 2,570. Whole model: 1,227,594.
    LoRA r = 32 per conv: r*I*k*k + O*r. stem 864 + 2,048 = 2,912; block 1 2 * (18,432 +
    2,048) = 40,960; block 2 (18,432 + 4,096) + (36,864 + 4,096) + (2,048 + 4,096) = 69,632;
    block 3 (36,864 + 8,192) + (73,728 + 8,192) + (4,096 + 8,192) = 139,264; adapters
    252,768, + norms + FC = 258,026 trainable values per task."""
    return {"backbone": 1_222_336 + 2_688, "full": 1_227_594, "lora32": 258_026,
            "adapters32": 252_768}


def test_resnet8_and_its_r32_lora_parameter_counts_by_hand():
    want = resnet8_counts_by_hand()
    cfg = ModelConfig(backbone="resnet8", adapter="lora", lora_rank=32)
    model = build_model(cfg, (3, 32, 32), [10], seed=0)
    assert sum(p.numel() for p in model.backbone.parameters()) == want["backbone"]
    params = {n: p for n, p in model.tasks[0].named_parameters() if p.requires_grad}
    assert sum(p.numel() for p in params.values()) == want["lora32"]
    assert sum(p.numel() for n, p in params.items() if n.startswith("adapters.")) \
        == want["adapters32"]
    full = build_model(ModelConfig(backbone="resnet8", adapter="full"), (3, 32, 32), [10], 0)
    assert sum(p.numel() for p in full.tasks[0].parameters() if p.requires_grad) == want["full"]


FAST = {"rounds": 5, "data.train_per_class": 40, "data.test_per_class": 10,
        "schedule.order": "sync", "server.optimizer": "fedsgd", "server.lr": 1.0}


@pytest.mark.parametrize("adapter,extra", [
    ("lora", {"model.lora_rank": 4, "model.lora_alpha": 64, "model.norm": "batch"}),
    ("lora", {"model.lora_rank": 4, "model.lora_on_head": True,
              "model.lora_train_norms": False}),
    ("full", {"model.norm": "batch"}),
])
def test_backbone_and_frozen_tensors_bit_identical_after_a_run(adapter, extra):
    from fcl.engine import prepare_data, run
    from fcl.presets import preset
    cfg = preset("smoke", {**FAST, "model.adapter": adapter, **extra})
    data = prepare_data(cfg)
    model = build_model(cfg.model, data.image_shape, data.classes_per_task(), cfg.seed)
    frozen = {n: t.clone() for n, t in model.state_dict().items()
              if n.startswith("backbone.") or n.endswith("head.base.weight")}
    trained_before = {n: p.clone() for n, p in model.tasks[0].named_parameters()
                      if p.requires_grad}
    res = run(cfg, data=data, model=model)
    after = model.state_dict()
    for n, t in frozen.items():
        assert torch.equal(after[n], t), n             # BatchNorm statistics included
    assert all(p.grad is None for p in model.backbone.parameters())
    moved = [n for n, p in model.tasks[0].named_parameters()
             if p.requires_grad and not torch.equal(p, trained_before[n])]
    assert moved and {n.split(".")[0] for n in moved} >= {"head"}
    s = res.summary
    if adapter == "full":   # it sends the whole model (BatchNorm statistics included): ratio 1
        assert s["compression_ratio"] == 1.0 and s["tcc_bytes"] == s["full_fedavg_bytes"]
    else:
        assert s["compression_ratio"] > 1.0
