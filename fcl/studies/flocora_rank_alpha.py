"""FLoCoRA Fig. 2: LoRA rank r x alpha in {2r, 16r}, against full-model FedAvg.

FLoCoRA's recipe (`fcl.presets.FLOCORA`: one task, i.e. plain federated learning; a frozen
randomly initialised backbone with GroupNorm, LoRA on every convolution with the norm layers
and the final FC trained; Dirichlet(0.5) clients; FedAvg on the server). Its sizes come from the
preset: `local` runs `flocora-local`, `paper` runs `flocora` (ResNet-8 on CIFAR-10: give
data.root), `smoke` the study smoke sizes.
"""
from fcl.presets import FLOCORA_RECIPE
from fcl.tune import Study, grid



def ranks(*rs: int) -> dict:
    return {"adapter": grid({"model.adapter": "full"},
                            *({"model.adapter": "lora", "model.lora_rank": r,
                               "model.lora_alpha": k * r} for r in rs for k in (2, 16)))}


SPACE = ranks(8, 16, 32, 64)
# at width 64 (64-128-256 channels) the low-rank range: every rank below the narrowest stage
LOW_RANK = ranks(4, 8, 16, 32)

STUDY = Study("flocora_rank_alpha", SPACE, base=FLOCORA_RECIPE, family="flocora",
              doc=__doc__, by_preset={"flocora-cifar10-lowrank": LOW_RANK})
