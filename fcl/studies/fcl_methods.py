"""Table 4 of the FCL paper, measured: NetTailor modules with FedAdam (eta 0.5) and with FedSGD
(eta 1, FedAvg), and FedWeIT (`model.adapter=fedweit`, Yoon et al. 2021) with FedSGD (eta 1,
the official per-channel averaging), on the same tasks, clients, rounds and seeds. FedWeIT's
client is the official one: Adam at lr 1e-3 / 3, lambda_1 1e-3, lambda_2 100, weight decay
1e-4, client sparsity 0.3 (`model.fedweit_*`). Every row reports ACC, BWT_f and the exact bytes
of both links; `fcl params` gives the model one client stores. Run with `--seeds 5` or more
for Table 4 (docs/methods.md, FedWeIT).
"""
from fcl.tune import Study, grid

SPACE = {
    "method": grid(
        {"model.adapter": "nettailor", "server.optimizer": "fedadam", "server.lr": 0.5},
        {"model.adapter": "nettailor", "server.optimizer": "fedsgd", "server.lr": 1.0},
        {"model.adapter": "fedweit", "server.optimizer": "fedsgd", "server.lr": 1.0,
         "client.lr": 1e-3 / 3}),
}

STUDY = Study("fcl_methods", SPACE, doc=__doc__)
