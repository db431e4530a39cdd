"""FLoCoRA Table II: which layers train beside the LoRA adapters, at r = 32, alpha = 512.

"FLoCoRA Vanilla": the whole randomly initialised model frozen, LoRA adapters on every
convolution and on the final FC. "+ Norm. Layers": the normalisation layers trained too.
"+ Final FC": the final FC's adapter removed and the FC itself trained (FLoCoRA's default, what
the other FLoCoRA studies run). The sizes come from the preset, as in flocora_rank_alpha.py.
"""
from fcl.presets import FLOCORA_RECIPE
from fcl.tune import Study, grid

SPACE = {
    "layers": grid({"model.lora_on_head": True, "model.lora_train_norms": False},
                   {"model.lora_on_head": True, "model.lora_train_norms": True},
                   {"model.lora_on_head": False, "model.lora_train_norms": True}),
}

STUDY = Study("flocora_layers", SPACE, base=FLOCORA_RECIPE, family="flocora", doc=__doc__)
