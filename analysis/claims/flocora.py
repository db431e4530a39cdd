"""FLoCoRA's claims (FLoCoRA: Federated Learning Compression with Low-Rank Adaptation), as data:
the same-seed comparisons of `flocora_rank_alpha` (Fig. 2: rank r x alpha in {2r, 16r} against
full-model FedAvg), `flocora_quantization` (Table III / Fig. 3: messages at 32 / 8 / 4 / 2
bits; the paper's `compression.payload=values`), `flocora_layers` (Table II: which layers
train beside the adapters) and `flocora_compare` (Table IV: FLoCoRA against magnitude pruning
and ZeroFL, each paired with the LoRA bit width whose upload is within 5% of its own, else the
largest LoRA upload below it, read from the study's `bytes_up`), and the claims no
stored study can test.

"Within X points" is one-sided, as the paper states it (a drop of less than X): the claim holds
where the whole interval of the difference lies above -X.
"""
from __future__ import annotations

import pandas as pd

from analysis.claims.judging import Claim, Comparison, Untested, c
from analysis.labels import bits_label
from analysis.paired import matches

VALUES = {"compression.payload": "values"}


def _lora(rank: int, alpha: int) -> dict[str, str]:
    return {"model.adapter": "lora", "model.lora_rank": str(rank), "model.lora_alpha": str(alpha)}


def _bits(b: int) -> dict[str, str]:
    return {"compression.bits": str(b)}


def _layers(on_head: bool, norms: bool) -> dict[str, str]:
    """Table II's rows: "Vanilla" is (True, False), "+ Norm. Layers" (True, True), "+ Final FC"
    (False, True)."""
    return {"model.lora_on_head": str(on_head).lower(),
            "model.lora_train_norms": str(norms).lower()}


LORA = {"model.adapter": "lora"}
BITS = "compression.bits"
MATCHED = 0.05          # uploads within 5% of each other count as the same size
# Table IV's conventional methods, each against the LoRA message its upload matches (the width-16
# study's settings; `matched_lora` reads whichever settings a study stored)
SHRUNK = (*((f"pruning {p}", {"model.adapter": "full", "compression.prune": str(p)})
            for p in (0.5, 0.8, 0.9, 0.95)),
          *((f"ZeroFL mask {r:g}", {"model.adapter": "zerofl", "model.zerofl_sparsity": "0.9",
                                    "model.zerofl_mask_ratio": str(r)}) for r in (0.0, 0.1)))
TABLE_IV = tuple(c(f"LoRA - {name}", "acc", LORA, other) for name, other in SHRUNK)


def _rows(trials: pd.DataFrame, setting: dict[str, str]) -> pd.Series:
    rows = pd.Series(True, index=trials.index)
    for key, text in setting.items():
        if key not in trials.columns:
            return pd.Series(False, index=trials.index)
        rows &= matches(trials[key], text)
    return rows


def shrunk_settings(trials: pd.DataFrame) -> list[tuple[str, dict[str, str]]]:
    """The pruning and ZeroFL settings the study stored, labelled as Table IV names them."""
    out = []
    if "compression.prune" in trials.columns:
        full = trials[_rows(trials, {"model.adapter": "full"})]
        for p in sorted(pd.to_numeric(full["compression.prune"]).dropna().unique()):
            if p > 0:
                out.append((f"pruning {p:g}", {"model.adapter": "full",
                                               "compression.prune": f"{p:g}"}))
    keys = ["model.zerofl_sparsity", "model.zerofl_mask_ratio"]
    if set(keys) <= set(trials.columns):
        zerofl = trials[_rows(trials, {"model.adapter": "zerofl"})]
        for s, r in sorted(set(zip(pd.to_numeric(zerofl[keys[0]]),
                                   pd.to_numeric(zerofl[keys[1]])))):
            name = f"ZeroFL mask {r:g}" if s == 0.9 else f"ZeroFL s {s:g} mask {r:g}"
            out.append((name, {"model.adapter": "zerofl", keys[0]: f"{s:g}",
                               keys[1]: f"{r:g}"}))
    return out


def matched_lora(trials: pd.DataFrame) -> tuple[Comparison, ...]:
    """Each pruning and ZeroFL setting of the study against one LoRA bit width, chosen by the
    upload (the message; `bytes_up` over the run, mean over seeds): the width whose upload is
    within 5% of the other's (matched bytes), else the largest whose upload does not exceed it;
    the label gives LoRA's upload against the other's. Where no LoRA message is that small, a
    comparison no trial matches (read as not run)."""
    if not {"bytes_up", BITS} <= set(trials.columns):
        return TABLE_IV
    up = pd.to_numeric(trials["bytes_up"])
    lora = _rows(trials, LORA)
    sizes = up[lora].groupby(trials.loc[lora, BITS]).mean()
    out = []
    for other, setting in shrunk_settings(trials) or [(n, s) for n, s in SHRUNK]:
        rows = _rows(trials, setting)
        if not rows.any():
            out.append(c(f"LoRA - {other}", "acc", LORA, setting))
            continue
        own = up[rows].mean()
        near = (sizes / own - 1).abs()
        fits = sizes[(near <= MATCHED) | (sizes <= own)]
        if fits.empty:
            out.append(c(f"{other}: no LoRA message as small", "acc", {**LORA, BITS: "none"},
                         setting))
            continue
        bits = near[fits.index].idxmin() if near[fits.index].min() <= MATCHED else fits.idxmax()
        how = f"upload {100 * (sizes[bits] / own - 1):+.1f}%"
        out.append(c(f"LoRA {bits_label(bits)} - {other} ({how})", "acc",
                     {**LORA, BITS: f"{bits:g}"}, setting))
    return tuple(out)


CLAIMS: tuple[Claim, ...] = (
    Claim("FLoCoRA Fig. 2: alpha = 16r beats alpha = 2r", "flocora_rank_alpha", "FLoCoRA",
          "raising alpha from 2r to 16r improves accuracy, by up to 4.4%",
          tuple(c(f"r {r}: 16r - 2r", "acc", _lora(r, 16 * r), _lora(r, 2 * r))
                for r in (8, 16, 32, 64))),
    Claim("FLoCoRA Fig. 2: LoRA r = 32 (alpha 512) within 1 point of FedAvg",
          "flocora_rank_alpha", "FLoCoRA",
          "an accuracy drop of less than 1% against the full model, 4.8x smaller messages",
          (c("LoRA r 32 - FedAvg", "acc", _lora(32, 512), {"model.adapter": "full"},
             bound=-1.0),)),
    Claim("FLoCoRA Table III: 8-bit within 2 points of full precision", "flocora_quantization",
          "FLoCoRA", "the quantized versions degrade, 2% for 8-bit",
          (c("8-bit - FP", "acc", _bits(8), _bits(32), bound=-2.0),), VALUES),
    Claim("FLoCoRA Table III: 4 and 2 bits degrade further", "flocora_quantization", "FLoCoRA",
          "fewer bits, lower accuracy",
          (c("4-bit - 8-bit", "acc", _bits(4), _bits(8), sign=-1),
           c("2-bit - 4-bit", "acc", _bits(2), _bits(4), sign=-1)), VALUES),
    Claim("FLoCoRA Table II: training the norm layers and the final FC helps", "flocora_layers",
          "FLoCoRA", "Vanilla < + norm layers < + final FC (r 32, alpha 512)",
          (c("+ norm layers - vanilla", "acc", _layers(True, True), _layers(True, False)),
           c("+ final FC - + norm layers", "acc", _layers(False, True), _layers(True, True)))),
    Claim("FLoCoRA Table IV: less degradation than ZeroFL and magnitude pruning",
          "flocora_compare", "FLoCoRA",
          "less accuracy degradation for smaller messages (ResNet-18, LDA 1.0, 700 rounds); each "
          "pruning / ZeroFL row against the LoRA bit width whose upload matches its own within "
          "5%, else the largest LoRA upload below it", TABLE_IV, match=matched_lora),
)

UNTESTED: tuple[Untested, ...] = (
    Untested("FLoCoRA Fig. 2: r = 128 beats FedAvg by 2 points", "FLoCoRA",
             "+2% at r = 128 (ResNet-8)",
             "`flocora_rank_alpha` with rank 128 in its grid (it stops at 64)"),
    Untested("FLoCoRA Fig. 3: 8-bit converges as fast as full precision", "FLoCoRA",
             "convergence time of FP and 8-bit not affected",
             "`flocora_quantization` evaluated every round (`eval.every=1`; stored: every 5) "
             "and a rounds-to-accuracy value"),
)
