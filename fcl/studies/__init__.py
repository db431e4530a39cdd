"""Every study fcl ships, by name, in the order `studies/run_all.py` runs them: `fcl study
NAME [flags]` runs one, as `python studies/NAME.py [flags]` does from a clone. A study is a
`fcl.tune.Study` value: what varies, what it fixes, its sizes per preset."""
from __future__ import annotations

from fcl.studies import (ablation_lr, ablation_rounds_epochs, drift_correction, fcl_methods,
                         flocora_compare, flocora_layers, flocora_quantization,
                         flocora_rank_alpha, noniid, optimizers, scalability, search, stragglers,
                         task_order)
from fcl.tune import Study

STUDIES: dict[str, Study] = {m.STUDY.name: m.STUDY for m in (
    optimizers, ablation_lr, ablation_rounds_epochs, scalability, noniid,
    stragglers, task_order, drift_correction, fcl_methods,
    flocora_rank_alpha, flocora_quantization, flocora_layers,
    flocora_compare, search)}
