"""FLoCoRA Table III / Fig. 3: LoRA messages quantized to 32 (float) / 8 / 4 / 2 bits on both
links (affine, per output channel; scales and zero points counted in the bytes), at FLoCoRA's
r = 32, alpha = 512, in FLoCoRA's recipe and sizes (see flocora_rank_alpha.py).

`compression.payload=values` is the paper (clients send their quantized trained adapters; the
server averages the dequantized values). The quantized rows are also run with `delta` (the
round's update quantized instead, ours), so the table shows what quantizing deltas buys; at 32
bits the two are the same run.
"""
from fcl.presets import FLOCORA_RECIPE
from fcl.tune import Study, grid

SPACE = {
    "message": grid(*({"compression.bits": bits, "compression.payload": payload}
                      for bits in (32, 8, 4, 2)
                      for payload in (("values",) if bits == 32 else ("values", "delta")))),
}

STUDY = Study("flocora_quantization", SPACE, base=FLOCORA_RECIPE, family="flocora",
              doc=__doc__)
