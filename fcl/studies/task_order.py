"""Fig. 3 and 4 of the FCL paper: task order (FMTL / synchronous / asynchronous FCL) x FedSGD
(eta = 1, i.e. FedAvg) / FedAdam (eta = 0.5), every round evaluated (accuracy and cosine
distance per round, for the curves), with the pseudo-gradient as the mean (Eq. 1) or the sum
(Eq. 7 read literally) of client deltas, which decides whether async can beat sync
(README, How the paper is read).
"""
from fcl.tune import Study, grid

SPACE = {
    "schedule.order": grid("fmtl", "sync", "async"),
    "server": grid({"server.optimizer": "fedsgd", "server.lr": 1.0},
                   {"server.optimizer": "fedadam", "server.lr": 0.5}),
    "server.aggregate": grid("mean", "sum"),
}

STUDY = Study("task_order", SPACE, base={"eval.every": 1}, doc=__doc__)
