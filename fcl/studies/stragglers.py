"""Fig. 5e of the FCL paper: each sampled client fails to report with probability p.

The paper gives no axis values; it reports less than 2 points of ACC lost at its largest p.
"""
from fcl.tune import Study, grid

SPACE = {"participation.straggler_prob": grid(0.0, 0.1, 0.2, 0.3, 0.5)}

STUDY = Study("stragglers", SPACE, doc=__doc__)
