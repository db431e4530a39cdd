"""FLoCoRA Table III / Fig. 3: LoRA messages quantized to 32 (float) / 8 / 4 / 2 bits on both
links (affine, per output channel; scales and zero points counted in the bytes), r = 32,
alpha = 512, in FLoCoRA's setting (see flocora_rank_alpha.py).
"""
from fcl.tune import Study, grid, main

FLOCORA = {"data.num_tasks": 1, "model.backbone": "resnet8", "model.norm": "group",
           "data.partition": "dirichlet", "data.alpha": 0.5, "schedule.order": "sync",
           "server.optimizer": "fedsgd", "server.lr": 1.0,
           "model.adapter": "lora", "model.lora_rank": 32, "model.lora_alpha": 512}
SPACE = {"compression.bits": grid(32, 8, 4, 2)}

STUDY = Study("flocora_quantization", SPACE, base=FLOCORA, doc=__doc__)

if __name__ == "__main__":
    main(STUDY)
