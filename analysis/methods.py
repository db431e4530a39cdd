"""Methods of a study whose variant axis sets the client algorithm and the server optimizer
together (studies/drift_correction.py): a *method* is the pair (client algorithm, server
optimizer), e.g. FedAvg = plain SGD clients with FedSGD at eta = 1, "FedAdam+SCAFFOLD" =
SCAFFOLD clients with FedAdam. Its numbers, shared by the figure (`figures/drift_correction`)
and the dashboard (`dashboard/methods`): ACC and BWT_f per method and task order, mean over
seeds with the 95% t-interval."""
from __future__ import annotations

import pandas as pd

from analysis.labels import is_server_method, method_label
from analysis.seed_stats import seed_summary
from analysis.study_tables import require

METHOD_KEYS = ("client.algorithm", "client.prox_mu", "server.optimizer", "server.lr")
METRICS = (("acc", "ACC (%)"), ("bwt_f", "BWT_f (points; 0 = no drop)"))


def method_order(label: str) -> tuple:
    """FedAvg and the client-side methods first, then the server-side ones."""
    return (is_server_method(label), "SCAFFOLD" in label, label)


def with_methods(trials: pd.DataFrame) -> pd.DataFrame:
    """The trials with a `method` column (its label)."""
    require(trials, (*METHOD_KEYS, "schedule.order", "acc", "bwt_f"), "drift_correction: "
            "trials.parquet")
    return trials.assign(method=[method_label(*row) for row in
                                 trials[list(METHOD_KEYS)].itertuples(index=False)])


def method_stats(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per method x task order x metric: mean, std, n, ci95 over seeds."""
    t = with_methods(trials)
    return pd.concat([seed_summary(t, ["method", "schedule.order"], m).assign(metric=m)
                      for m, _ in METRICS], ignore_index=True)
