"""Beyond the papers: client-side drift correction against server-side adaptivity, in the
synchronous and the asynchronous task order.

The FCL paper fights client drift on the server (FedOpt) and names FedProx and SCAFFOLD as the
client-side alternatives without testing them. Methods (client algorithm + server optimizer):
FedAvg (sgd + FedSGD, eta = 1), FedProx at mu = 0.001 / 0.01 / 0.1 (+ FedSGD, eta = 1),
SCAFFOLD (+ FedSGD, eta = 1), FedAdam (sgd + FedAdam, eta = 0.5, the paper's default),
FedAdam + FedProx (mu = 0.01, the middle value) and FedAdam + SCAFFOLD. The question: which
reduces the boundary drops (BWT_f) most in the asynchronous order; figure `drift_correction`.
"""
from fcl.tune import Study, grid

FEDSGD = {"server.optimizer": "fedsgd", "server.lr": 1.0}
FEDADAM = {"server.optimizer": "fedadam", "server.lr": 0.5}
NO_PROX = {"client.prox_mu": 0.0}     # unused by sgd and scaffold; 0 keeps the tables honest
SPACE = {
    "method": grid({"client.algorithm": "sgd", **NO_PROX, **FEDSGD},
                   *({"client.algorithm": "fedprox", "client.prox_mu": mu, **FEDSGD}
                     for mu in (0.001, 0.01, 0.1)),
                   {"client.algorithm": "scaffold", **NO_PROX, **FEDSGD},
                   {"client.algorithm": "sgd", **NO_PROX, **FEDADAM},
                   {"client.algorithm": "fedprox", "client.prox_mu": 0.01, **FEDADAM},
                   {"client.algorithm": "scaffold", **NO_PROX, **FEDADAM}),
    "schedule.order": grid("async", "sync"),
}

STUDY = Study("drift_correction", SPACE, doc=__doc__)
