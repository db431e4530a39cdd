"""Fig. 5a of the FCL paper: client learning rate x server learning rate (FedAdam, async).

The paper gives no axis values; it says accuracy improves with the client LR up to 0.05 and
drops at 0.1, and that lowering the server LR helps until updates become too small.
"""
from fcl.tune import Study, grid

SPACE = {
    "client.lr": grid(0.01, 0.02, 0.05, 0.1),
    "server.lr": grid(0.1, 0.5, 1.0),
}

STUDY = Study("ablation_lr", SPACE, doc=__doc__)
