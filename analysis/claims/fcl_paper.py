"""The FCL paper's claims (Addressing Client Drift in Federated Continual Learning with Adaptive
Optimization), as data: each one the same-seed comparisons of a stored study that test it, or,
where no study fcl stores can, what would.

Fig. 5's caption and text disagree on which of (a)/(b) is which; the names follow the caption
(5a = client x server LR, 5b = rounds x local epochs), as the figures do.
"""
from __future__ import annotations

from analysis.claims.judging import Claim, Untested, c

ADAM, SGD = {"server.optimizer": "fedadam", "server.lr": "0.5"}, \
    {"server.optimizer": "fedsgd", "server.lr": "1"}
SGD_AT = {"server.optimizer": "fedsgd"}


def _orders(opt: dict[str, str], aggregate: str) -> tuple:
    fmtl, sync, asyn = ({**opt, "schedule.order": o, "server.aggregate": aggregate}
                        for o in ("fmtl", "sync", "async"))
    return (c("FMTL - sync", "acc", fmtl, sync), c("sync - async", "acc", sync, asyn))


def _rounds(value: str, label: str) -> tuple:
    """R = 25 minus R = 50 at every local epoch count K = 1..5."""
    return tuple(c(f"{label}R 25 - R 50, K = {k}", value,
                   {"rounds": "25", "client.local_epochs": str(k)},
                   {"rounds": "50", "client.local_epochs": str(k)}) for k in range(1, 6))


def _beside(a: dict[str, str], b: dict[str, str], label: str) -> tuple:
    """What a drop claim shows beside its verdict: the share of sharp drops, BWT_f (the
    paper's number) and best-minus-final forgetting (smoothing a boundary need not prevent
    overwriting)."""
    return (c(f"% terms dropping > 5, {label}", "drop_share", a, b),
            c(f"BWT_f {label}", "bwt_f", a, b),
            c(f"best - final forgetting {label}", "forgetting", a, b))


def _table3(data: str, preset: str) -> tuple[Claim, ...]:
    """Table 3's headline on another data set (a run of `optimizers` at that preset)."""
    on = {"data.name": data}
    return (Claim(f"Table 3 ({data}): FedAdam eta 0.5 beats FedAvg (FedSGD eta 1)", "optimizers",
                  "FCL", "adaptive optimizers beat FedAvg on all three data sets",
                  (c("FedAdam - FedSGD", "acc", ADAM, SGD),), on,
                  runs_on=f"on {data}: `--preset {preset}`"),)


ABLATIONS: tuple[Claim, ...] = (
    Claim("Fig. 5a: ACC peaks at client LR 0.05 (FedAdam eta 0.5)", "ablation_lr", "FCL",
          "rises up to client LR 0.05, drops at 0.1",
          (c("0.05 - 0.01", "acc", {"client.lr": "0.05"}, {"client.lr": "0.01"}),
           c("0.05 - 0.1", "acc", {"client.lr": "0.05"}, {"client.lr": "0.1"})),
          {"server.lr": "0.5"}),
    Claim("Fig. 5a: a lower server LR helps (client LR 0.05)", "ablation_lr", "FCL",
          "lower eta helps until updates get too small",
          (c("eta 0.5 - eta 1", "acc", {"server.lr": "0.5"}, {"server.lr": "1"}),),
          {"client.lr": "0.05"}),
    Claim("Fig. 5a: too low a server LR converges slower (client LR 0.05)", "ablation_lr", "FCL",
          "reducing eta further: lower accuracy for a fixed number of rounds",
          (c("eta 0.5 - eta 0.1", "acc", {"server.lr": "0.5"}, {"server.lr": "0.1"}),),
          {"client.lr": "0.05"}),
    Claim("Fig. 5a: smaller drops at a lower server LR (client LR 0.05)", "ablation_lr", "FCL",
          "BWT_f improves as eta falls",
          (c("mean drop eta 0.1 - eta 1", "mean_drop", {"server.lr": "0.1"}, {"server.lr": "1"},
             sign=-1),),
          {"client.lr": "0.05"},
          context=(c("BWT_f eta 0.1 - eta 1", "bwt_f", {"server.lr": "0.1"},
                     {"server.lr": "1"}),)),
    Claim("Fig. 5b: more rounds lower ACC (drift accumulates)", "ablation_rounds_epochs", "FCL",
          "a large number of rounds reduces the accuracy", _rounds("acc", "")),
    Claim("Fig. 5b: more rounds accumulate drift (BWT_f lower at R = 50)",
          "ablation_rounds_epochs", "FCL", "BWT_f worsens with more rounds",
          _rounds("bwt_f", "BWT_f ")),
    Claim("Fig. 5c: more clients hurt (the same images split N ways)", "scalability", "FCL",
          "accuracy falls as N grows",
          (c("N 5 - N 40", "acc", {"data.num_clients": "5"}, {"data.num_clients": "40"}),)),
    Claim("Fig. 5d: a lower Dirichlet alpha hurts ACC", "noniid", "FCL",
          "accuracy falls as alpha falls",
          (c("IID - alpha 0.5", "acc", {"data.partition": "iid"},
             {"data.partition": "dirichlet", "data.alpha": "0.5"}),
           c("alpha 8 - alpha 0.5", "acc", {"data.partition": "dirichlet", "data.alpha": "8"},
             {"data.partition": "dirichlet", "data.alpha": "0.5"}))),
    Claim("Fig. 5d: a lower Dirichlet alpha worsens BWT_f", "noniid", "FCL",
          "BWT_f falls as alpha falls: skew amplifies drift",
          (c("BWT_f IID - alpha 0.5", "bwt_f", {"data.partition": "iid"},
             {"data.partition": "dirichlet", "data.alpha": "0.5"}),
           c("BWT_f alpha 8 - alpha 0.5", "bwt_f",
             {"data.partition": "dirichlet", "data.alpha": "8"},
             {"data.partition": "dirichlet", "data.alpha": "0.5"}))),
    Claim("Fig. 5e: stragglers cost under 2 points (p = 0.5 vs none)", "stragglers", "FCL",
          "performance goes down, within less than a 2% drop",
          (c("p 0.5 - p 0", "acc", {"participation.straggler_prob": "0.5"},
             {"participation.straggler_prob": "0"}, bound=-2.0),)),
)

DRIFT: tuple[Claim, ...] = (
    Claim("Fig. 3a: FMTL > sync > async, FedAdam eta 0.5, mean of deltas", "task_order", "FCL",
          "FMTL best, then sync, then async", _orders(ADAM, "mean")),
    Claim("Fig. 3a: FMTL > sync > async, FedAdam eta 0.5, Eq. 7's sum", "task_order", "FCL",
          "(the paper's Eq. 7 reads as a sum)", _orders(ADAM, "sum")),
    Claim("Fig. 3a: FMTL > sync > async, FedSGD eta 1, mean of deltas", "task_order", "FCL",
          "FMTL best, then sync, then async", _orders(SGD, "mean")),
    Claim("Fig. 3a: FMTL > sync > async, FedSGD eta 1, Eq. 7's sum", "task_order", "FCL",
          "(the paper's Eq. 7 reads as a sum)", _orders(SGD, "sum")),
    Claim("Fig. 3b: async spikes in drift more than FMTL (FedAdam eta 0.5, mean)", "task_order",
          "FCL", "spikes in async; FMTL deviates only early",
          (c("peak drift async - FMTL", "drift_peak", {"schedule.order": "async"},
             {"schedule.order": "fmtl"}),),
          {**ADAM, "server.aggregate": "mean"}),
    Claim("Fig. 4a: FedSGD eta 1 drops at phase boundaries, FedAdam eta 0.5 does not",
          "optimizers", "FCL", "sharp drops with FedSGD eta 1, smooth with FedAdam",
          (c("mean drop FedAdam - FedSGD", "mean_drop", ADAM, SGD, sign=-1),),
          context=(c("% terms dropping > 5, FedAdam - FedSGD", "drop_share", ADAM, SGD),)),
    Claim("Fig. 4b: FedAdam eta 0.5 and 0.1 spike less in drift than FedSGD eta 1", "optimizers",
          "FCL", "FedAdam at eta 0.5 and 0.1 spikes less than FedSGD at eta 1",
          (c("peak drift FedSGD - FedAdam eta 0.5", "drift_peak", SGD, ADAM),
           c("peak drift FedSGD - FedAdam eta 0.1", "drift_peak", SGD,
             {**ADAM, "server.lr": "0.1"}))),
    Claim("Fig. 4b: a lower server LR smooths drift (FedAdam)", "optimizers", "FCL",
          "lower eta, smaller spikes",
          (c("peak drift eta 1 - eta 0.5", "drift_peak", {"server.lr": "1"},
             {"server.lr": "0.5"}),
           c("peak drift eta 0.5 - eta 0.1", "drift_peak", {"server.lr": "0.5"},
             {"server.lr": "0.1"})),
          {"server.optimizer": "fedadam"}),
)

TABLE3: tuple[Claim, ...] = (
    Claim("Table 3: FedAdam eta 0.5 beats FedAvg (FedSGD eta 1)", "optimizers", "FCL",
          "80.04 vs 77.59", (c("FedAdam - FedSGD", "acc", ADAM, SGD),)),
    Claim("Table 3: FedAdam is the best adaptive optimizer (eta 0.5)", "optimizers", "FCL",
          "FedAdam 80.04 ahead of FedAdagrad and FedYogi",
          (c("FedAdam - FedAdagrad", "acc", ADAM, {**ADAM, "server.optimizer": "fedadagrad"}),
           c("FedAdam - FedYogi", "acc", ADAM, {**ADAM, "server.optimizer": "fedyogi"}))),
    Claim("Table 3: FedAdam drops less than FedAvg at eta 1", "optimizers", "FCL",
          "BWT_f -3.61 vs -5.76",
          (c("mean drop FedAdam - FedSGD", "mean_drop", {"server.optimizer": "fedadam"},
             {"server.optimizer": "fedsgd"}, sign=-1),), {"server.lr": "1"},
          context=_beside({"server.optimizer": "fedadam"}, {"server.optimizer": "fedsgd"},
                          "FedAdam - FedSGD")),
    Claim("Table 3: FedSGD's drops shrink as eta falls", "optimizers", "FCL",
          "BWT_f -5.76 at eta 1 -> -0.63 at eta 0.1",
          (c("mean drop eta 0.1 - eta 1", "mean_drop", {"server.lr": "0.1"}, {"server.lr": "1"},
             sign=-1),),
          SGD_AT, context=_beside({"server.lr": "0.1"}, {"server.lr": "1"}, "eta 0.1 - eta 1")),
    Claim("Table 3: FedSGD at eta 0.1 no worse than at eta 1", "optimizers", "FCL",
          "78.51 vs 77.59",
          (c("eta 0.1 - eta 1", "acc", {"server.lr": "0.1"}, {"server.lr": "1"}),), SGD_AT),
    *_table3("miniimagenet", "paper-miniimagenet"),
    *_table3("decathlon", "paper-decathlon"),
    Claim("Beyond: SCAFFOLD reduces the drops of FedAvg (async)", "drift_correction", "FCL",
          "(named as the client-side alternative, not tested)",
          (c("mean drop SCAFFOLD - SGD", "mean_drop", {"client.algorithm": "scaffold"},
             {"client.algorithm": "sgd"}, sign=-1),),
          {**SGD, "schedule.order": "async", "client.prox_mu": "0"}),
    Claim("Beyond: FedProx (mu 0.01) reduces the drops of FedAvg (async)", "drift_correction",
          "FCL", "(named as the client-side alternative, not tested)",
          (c("mean drop FedProx - SGD", "mean_drop", {"client.algorithm": "fedprox",
                                                      "client.prox_mu": "0.01"},
             {"client.algorithm": "sgd", "client.prox_mu": "0"}, sign=-1),),
          {**SGD, "schedule.order": "async"}),
)

OURS = {"model.adapter": "nettailor", **ADAM}
FEDWEIT = {"model.adapter": "fedweit", **SGD}       # FedSGD eta 1: the official averaging

TABLE4: tuple[Claim, ...] = (
    Claim("Table 4: higher ACC than FedWeIT at less communication", "fcl_methods", "FCL",
          "80.04% vs 55.16%; 4.7 + 4.7 MB vs 18.5 + 53.5 MB a round",
          (c("NetTailor + FedAdam - FedWeIT", "acc", OURS, FEDWEIT),
           c("bytes NetTailor + FedAdam - FedWeIT", "tcc_bytes", OURS, FEDWEIT, sign=-1))),
)

CLAIMS: tuple[Claim, ...] = (*DRIFT, *ABLATIONS, *TABLE3, *TABLE4)

UNTESTED: tuple[Untested, ...] = ()
