"""Fig. 5b of the FCL paper: communication rounds (100-400) x local epochs (1-5).

Rounds scale with the preset (a study of 400-round trials does not fit a laptop): 100-400 at
`paper`, 25-100 at `local`, 5-10 at `smoke`; each must be a multiple of data.num_tasks.
"""
from fcl.tune import Study, grid

SPACE = {"client.local_epochs": grid(1, 2, 3, 4, 5)}
ROUNDS = {
    "paper": {"rounds": grid(100, 200, 300, 400)},
    "local": {"rounds": grid(25, 50, 75, 100)},
    "smoke": {"rounds": grid(5, 10)},
    "cifar10-local": {"rounds": grid(25, 50)},
    "cifar10-local-pretrained": {"rounds": grid(25, 50)},
    "cifar10-gpu": {"rounds": grid(25, 50)},
}

STUDY = Study("ablation_rounds_epochs", SPACE, by_preset=ROUNDS, doc=__doc__)
