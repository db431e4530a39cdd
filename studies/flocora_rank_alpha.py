"""FLoCoRA Fig. 2: LoRA rank r x alpha in {2r, 16r}, against full-model FedAvg.

FLoCoRA's setting: one task (plain federated learning), a frozen randomly initialised ResNet-8
with GroupNorm, LoRA on every convolution with the norm layers and the final FC trained, a
Dirichlet(0.5) split, FedAvg on the server (FedSGD, eta = 1).
"""
from fcl.tune import Study, grid, main

FLOCORA = {"data.num_tasks": 1, "model.backbone": "resnet8", "model.norm": "group",
           "data.partition": "dirichlet", "data.alpha": 0.5, "schedule.order": "sync",
           "server.optimizer": "fedsgd", "server.lr": 1.0}
SPACE = {
    "adapter": grid({"model.adapter": "full"},
                    *({"model.adapter": "lora", "model.lora_rank": r, "model.lora_alpha": k * r}
                      for r in (8, 16, 32, 64) for k in (2, 16))),
}

STUDY = Study("flocora_rank_alpha", SPACE, base=FLOCORA, doc=__doc__)

if __name__ == "__main__":
    main(STUDY)
