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


# The keys that name a message-compression method (FLoCoRA's Table IV and its dashboard view)
MESSAGE_METHOD_KEYS = ("model.adapter", "model.lora_rank", "compression.bits",
                       "compression.prune", "model.fedpara_gamma", "model.zerofl_sparsity",
                       "model.zerofl_mask_ratio")


def _number(row: pd.Series, key: str, default: float = 0.0) -> float:
    value = row.get(key, default)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(value) else value


def message_method(row: pd.Series) -> tuple[str, str, tuple]:
    """(kind, the method in words, its place in a list) of a trial that compares compressed
    messages, as FLoCoRA's Table IV names them: `FedAvg (full model)`, `LoRA r=32, 8-bit`,
    `magnitude pruning 0.9`, `FedPara gamma 0.1`, `ZeroFL s=0.9, mask 0.1`; placed FedAvg,
    LoRA, pruning, FedPara, ZeroFL, fewer bits / more pruning later."""
    adapter = str(row["model.adapter"])
    if adapter == "lora":
        bits = int(_number(row, "compression.bits", 32.0))
        text = "32-bit (FP)" if bits >= 32 else f"{bits}-bit"
        return "LoRA", f"LoRA r={int(_number(row, 'model.lora_rank'))}, {text}", (1, -bits)
    if adapter == "fedpara":
        gamma = _number(row, "model.fedpara_gamma")
        return "FedPara", f"FedPara gamma {fmt_value(gamma)}", (3, gamma)
    if adapter == "zerofl":
        s, r = _number(row, "model.zerofl_sparsity"), _number(row, "model.zerofl_mask_ratio")
        return "ZeroFL", f"ZeroFL s={fmt_value(s)}, mask {fmt_value(r)}", (4, s, r)
    if adapter == "full" and _number(row, "compression.prune") > 0:
        p = _number(row, "compression.prune")
        return "pruning", f"magnitude pruning {fmt_value(p)}", (2, p)
    if adapter == "full":
        return "FedAvg", "FedAvg (full model)", (0,)
    return adapter, adapter_label(adapter), (5, adapter)
