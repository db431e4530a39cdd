"""FLoCoRA Table IV: ways to shrink a federated message, side by side on one task.

Full-model FedAvg (the reference); FLoCoRA (LoRA r = 32, alpha = 512) in full precision and
quantized to 8 / 4 / 2 bits; magnitude pruning of the full model's uploads at 0.5 / 0.8 / 0.9 /
0.95 with the received global pruned the same way (FLoCoRA's released `prune.py`); FedPara at
gamma 0.1 and 0.5; ZeroFL at sparsity 0.9 with mask ratios 0 and 0.1. Every method runs FLoCoRA's
recipe at the preset's sizes, so ACC and the bytes each sent compare directly
(`python -m analysis figures --only flocora_table4`: ACC against total communication, and the
drop from this study's own FedAvg). At `--preset paper` the setting is the paper's Table IV:
ResNet-18, 100 clients, 1 local epoch, LDA 1.0, 700 rounds (a GPU cluster's work).
"""
from fcl.presets import FLOCORA_RECIPE
from fcl.tune import Study, grid

FULL = {"model.adapter": "full"}
ZEROFL = {"model.adapter": "zerofl"}
SPACE = {
    "method": grid(FULL,
                   *({"model.adapter": "lora", "compression.bits": b} for b in (32, 8, 4, 2)),
                   *({**FULL, "compression.prune": p, "compression.prune_server": True}
                     for p in (0.5, 0.8, 0.9, 0.95)),
                   # FedPara's factors start random: no loaded backbone (the smoke preset's)
                   *({"model.adapter": "fedpara", "model.fedpara_gamma": g, "model.weights": ""}
                     for g in (0.1, 0.5)),
                   *({**ZEROFL, "model.zerofl_sparsity": 0.9, "model.zerofl_mask_ratio": r}
                     for r in (0.0, 0.1))),
}
# At flocora-cifar10-lowrank every baseline row sends, per upload, within 5% of the bytes of one
# LoRA r 32 row (tests/test_flocora_matched_bytes.py; `fcl params`): pruning at 0.8175 / 0.9565 /
# 0.976 / 0.986 against LoRA FP / 8 / 4 / 2 bits, FedPara gamma 0.27 and ZeroFL s 0.82 against
# FP, ZeroFL s 0.973 against 8 bits (FedPara's smallest message, gamma 0.01, is 15% above it).
# Its FedAvg and LoRA rows are trials `flocora_rank_alpha` and `flocora_quantization` store at the
# same seeds: `--copy-from flocora_rank_alpha flocora_quantization` takes them (5 of 12 a seed)
# where they ran on the kind of machine the new trials run on (docs/studies.md)
MATCHED = {
    "method": grid(FULL,
                   *({"model.adapter": "lora", "compression.bits": b} for b in (32, 8, 4, 2)),
                   *({**FULL, "compression.prune": p, "compression.prune_server": True}
                     for p in (0.8175, 0.9565, 0.976, 0.986)),
                   {"model.adapter": "fedpara", "model.fedpara_gamma": 0.27, "model.weights": ""},
                   *({**ZEROFL, "model.zerofl_sparsity": s, "model.zerofl_mask_ratio": 0.0}
                     for s in (0.82, 0.973))),
}
PAPER = {"model.backbone": "resnet18", "data.num_clients": 100, "client.local_epochs": 1,
         "data.alpha": 1.0, "rounds": 700}

STUDY = Study("flocora_compare", SPACE, base=FLOCORA_RECIPE, family="flocora", doc=__doc__,
              by_preset={"paper": PAPER, "flocora-cifar10-lowrank": MATCHED})
