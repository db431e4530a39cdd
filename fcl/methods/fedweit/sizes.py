"""What FedWeIT's messages and clients weigh, for `fcl params` (the run counts its own bytes
exactly, in `round.py`)."""
from __future__ import annotations

from torch import nn

from fcl.federated.compression import FLOAT_BYTES
from fcl.methods.fedweit.knowledge_base import planned_nbytes


def message_rows(model: nn.Module, cfg, full: int) -> list[dict]:
    """One row: a round that ends no task, B dense down, its kept channels + masks up."""
    down, up = planned_nbytes(dict(model.shared.items()), cfg.model.fedweit_sparsity,
                              cfg.model.fedweit_channels)
    return [{"bits": 32, "bytes_down": down, "bytes_up": up, "quantized_values": 0,
             "float32_values": sum(b.numel() for b in model.shared.values()),
             "ratio_vs_full": 2 * full / (down + up)}]


def client_nbytes(model: nn.Module, cfg, knowledge: bool = True) -> int:
    """What one FedWeIT client stores, as the official code holds it: B, every task's masks,
    adaptive kernels, norms and head, dense; with `knowledge`, also for every task but the
    first a dense knowledge base of one slot per client (its own included) with its attention
    (the code's `from_kb` and `atten`)."""
    shared = sum(b.numel() for b in model.shared.values())
    values = shared + sum(t.numel() for t in [*model.tasks.parameters(), *(
        b for b in model.tasks.buffers() if b.is_floating_point())])
    if knowledge:
        values += (len(model.tasks) - 1) * cfg.data.num_clients * (shared + len(model.shared))
    return FLOAT_BYTES * values
