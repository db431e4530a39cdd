"""Table 3 of the FCL paper: four server optimizers x server learning rate 1.0 / 0.5 / 0.1.

FedSGD at eta = 1 is FedAvg. The paper never states tau (`server.tau`, default 1e-3), which
decides how far the adaptive optimizers step (README, How the paper is read): rerun with
`--set server.tau=0.1 --results results/tau_0.1` to compare; `search.py` searches it.
"""
from fcl.tune import Study, grid

SPACE = {
    "server.optimizer": grid("fedsgd", "fedadam", "fedadagrad", "fedyogi"),
    "server.lr": grid(1.0, 0.5, 0.1),
}

STUDY = Study("optimizers", SPACE, doc=__doc__)
