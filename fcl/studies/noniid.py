"""Fig. 5d of the FCL paper: Dirichlet alpha from 8 (near IID) to 0.5 (skewed), and IID.

Each class of a task is split over the clients by a Dirichlet(alpha) draw (`data.partition`).
"""
from fcl.tune import Study, grid

SPACE = {
    "partition": grid({"data.partition": "iid"},
                      *({"data.partition": "dirichlet", "data.alpha": a}
                        for a in (8, 4, 2, 1, 0.5))),
}

STUDY = Study("noniid", SPACE, doc=__doc__)
