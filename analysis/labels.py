"""Display labels: how a config value or key is written in a figure, table or dashboard view.
One table per vocabulary, shared by the matplotlib figures and the plotly dashboard; the order
in which a figure lists values is the figure's own choice (see `FCL_ORDERS`, `DRIFT_ORDERS`)."""
from __future__ import annotations

import math

import pandas as pd

from analysis.study_tables import fmt_value
from fcl.methods.registry import methods

ORDER_LABELS = {"fmtl": "FMTL", "sync": "Sync FCL", "async": "Async FCL"}   # schedule.order
FCL_ORDERS = ("fmtl", "sync", "async")         # as the FCL paper lists them (Fig. 3)
DRIFT_ORDERS = ("async", "sync", "fmtl")       # drift_correction: the order it asks about first

OPTIMIZER_LABELS = {"fedsgd": "FedSGD", "fedadam": "FedAdam", "fedadagrad": "FedAdagrad",
                    "fedyogi": "FedYogi"}       # server.optimizer, in Table 3's order
CLIENT_LABELS = {"sgd": "", "fedprox": "FedProx", "scaffold": "SCAFFOLD"}   # client.algorithm

# Config keys as a dashboard label writes them ("" : the value alone, e.g. `fedadam`).
KEY_SYMBOLS = {"server.optimizer": "", "server.lr": "η", "client.lr": "client lr",
               "client.local_epochs": "K", "data.num_clients": "N", "data.alpha": "α",
               "participation.straggler_prob": "p_straggle", "schedule.order": "",
               "model.lora_rank": "r", "model.lora_alpha": "lora α", "compression.bits": "bits"}


def key_symbol(key: str) -> str:
    return KEY_SYMBOLS.get(key, key.split(".")[-1])


def adapter_label(adapter: str) -> str:
    """A method's name in figures and tables: its `Method.label` (`full`: FedAvg, `lora`:
    FLoCoRA); a name no registered method has, as it is."""
    known = methods()
    return known[adapter].label_or_name() if adapter in known else adapter


def bits_label(bits) -> str:
    """`FP` for 32 bits (or none), else `8-bit`."""
    return "FP" if bits is None or (isinstance(bits, float) and math.isnan(bits)) or \
        int(bits) >= 32 else f"{int(bits)}-bit"


def method_label(algorithm: str, mu: float, optimizer: str, server_lr: float) -> str:
    """A (client algorithm, server optimizer) pair: `FedAvg`, `FedProx μ=0.01`, `SCAFFOLD`,
    `FedAdam`, `FedAdam+FedProx μ=0.01`, ... (FedSGD at eta = 1 is no server method)."""
    client = CLIENT_LABELS.get(algorithm, algorithm)
    if algorithm == "fedprox":
        client += f" μ={fmt_value(float(mu))}"
    if optimizer == "fedsgd":
        server = "" if float(server_lr) == 1.0 else f"FedSGD η={fmt_value(float(server_lr))}"
    else:
        server = OPTIMIZER_LABELS.get(optimizer, optimizer)
    return "+".join(p for p in (server, client) if p) or "FedAvg"


def is_server_method(label: str) -> bool:
    """Does a method label start with a server optimizer (FedAdam, FedSGD η=..., ...)?"""
    return label.startswith(tuple(OPTIMIZER_LABELS.values()))


def over_seeds(n, spread: str = "± std") -> str:
    """What a figure's numbers are, from the seed counts `n` behind its points: `mean ± std
    over 3 seeds` (`spread` names the spread), `... over 2-3 seeds`, or, with one seed
    only, `1 seed: the mean alone` (a spread is never claimed over fewer than 2 seeds)."""
    ns = sorted({int(v) for v in pd.Series(n, dtype=float).dropna()})
    if not ns or ns[-1] < 2:
        return "1 seed: the mean alone"
    count = str(ns[-1]) if ns[0] == ns[-1] else f"{ns[0]}-{ns[-1]}"
    alone = "; 1-seed points: the mean alone" if ns[0] < 2 else ""
    return f"mean {spread} over {count} seeds{alone}"
