"""Seeds whose trials ran on more than one kind of machine.

A same-seed difference cancels the seed's partition and initialisation, not the machine: bf16
and GPU kernels round differently per CPU and GPU, so on a cluster of mixed nodes a pair of
trials of one seed can differ by the kinds' rounding too (no bias, more noise; a bias where the
scheduler put one setting on one kind more often). Every row records its kind (`cpu`, `gpu`,
`torch_version`: `fcl.machine_kind`); rows stored before `cpu` was recorded say nothing and are
left out. `python -m analysis paired` and `python -m analysis claims` print `note(...)` on
stderr for each study where a seed mixes kinds.
"""
from __future__ import annotations

import pandas as pd

from fcl.machine_kind import Kind


def row_kinds(trials: pd.DataFrame) -> pd.Series:
    """Each row's kind in words (`Kind.words`), None where the row does not record its CPU."""
    if "cpu" not in trials:
        return pd.Series(None, index=trials.index, dtype=object)
    gpu = trials["gpu"] if "gpu" in trials else pd.Series("", index=trials.index)
    version = trials["torch_version"] if "torch_version" in trials \
        else pd.Series("?", index=trials.index)
    return pd.Series([Kind(c, "" if pd.isna(g) else g, v).words() if isinstance(c, str) and c
                      else None for c, g, v in zip(trials["cpu"], gpu, version)],
                     index=trials.index, dtype=object)


def mixed_seeds(trials: pd.DataFrame) -> dict[int, list[str]]:
    """{seed: its rows' kinds, sorted} for every seed whose recorded rows span several kinds."""
    kinds = row_kinds(trials)
    out = {}
    for seed, group in kinds.groupby(trials["seed"]):
        seen = sorted(set(group.dropna()))
        if len(seen) > 1:
            out[int(seed)] = seen
    return out


def note(study: str, trials: pd.DataFrame) -> str | None:
    """One line naming the seeds of `study` that mix kinds of machine, or None."""
    mixed = mixed_seeds(trials)
    if not mixed:
        return None
    seeds = "; ".join(f"seed {s}: {' | '.join(k)}" for s, k in sorted(mixed.items()))
    return (f"note: {study}: trials of one seed ran on several kinds of machine ({seeds}); "
            f"their same-seed differences include the kinds' rounding")
