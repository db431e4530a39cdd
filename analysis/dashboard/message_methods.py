"""A study that compares compressed messages by method (FLoCoRA's Table IV: `flocora_compare`,
whose one axis sets the adapter with its bits, pruning ratio, FedPara gamma or ZeroFL
sparsity together) names its settings as Table IV does: `LoRA r=32, 8-bit`, `magnitude pruning
0.9565`, in Table IV's order, rather than by the eight keys of that axis, which squash a chart's
axis."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.dashboard.charts import settings_labels
from analysis.labels import MESSAGE_METHOD_KEYS, message_method
from fcl.results_io import per_distinct_row

# Keys which, set beside `model.adapter` on one axis, make it an axis of message methods.
COMPRESSION_KEYS = {"compression.bits", "compression.prune", "model.fedpara_gamma",
                    "model.zerofl_sparsity"}


@dataclass(frozen=True)
class MessageMethodLabels:
    """A `charts.Labeller`: the keys of `axis` named as one message method, any other key as
    `charts.setting_label` writes it; `order` lists the names in Table IV's order."""
    axis: tuple[str, ...]

    def __call__(self, df: pd.DataFrame, keys: list[str]) -> pd.Series:
        if not len(df):
            return pd.Series(dtype=str)
        rest = [k for k in keys if k not in self.axis]
        if len(rest) == len(keys):
            return settings_labels(df, keys)
        methods = self.methods(df)
        others = settings_labels(df, rest) if rest else [""] * len(df)
        return pd.Series([", ".join(p for p in (m, o) if p) for m, o in zip(methods, others)],
                         index=df.index)

    def methods(self, df: pd.DataFrame) -> list:
        return per_distinct_row(df[[k for k in MESSAGE_METHOD_KEYS if k in df]],
                                lambda row: message_method(row)[1])

    def order(self, df: pd.DataFrame, keys: list[str]) -> list[str]:
        """The distinct names of `df`'s settings, methods in Table IV's order."""
        place = per_distinct_row(df[[k for k in MESSAGE_METHOD_KEYS if k in df]],
                                 lambda row: message_method(row)[2])
        named = df.assign(_name=self(df, keys).to_numpy(), _place=place)
        return [name for _, name in sorted({(p, n) for p, n in
                                            zip(named["_place"], named["_name"])})]


def message_method_labels(trials: pd.DataFrame, axes: list[list[str]]
                          ) -> MessageMethodLabels | None:
    """The labels for the axis of `axes` that sets `model.adapter` with a compression key;
    None where none does, or where two of its settings would share a name (they would pile
    into one bar)."""
    for axis in axes:
        if "model.adapter" not in axis or not COMPRESSION_KEYS & set(axis):
            continue
        labels = MessageMethodLabels(tuple(axis))
        named = trials[axis].assign(_name=labels.methods(trials)).drop_duplicates()
        if named["_name"].nunique() == len(named):
            return labels
    return None
