"""What a run's messages cost: parameter counts, bytes per message on each link with and without
quantization, the total communication cost (TCC) of a run and its ratio to full-model FedAvg.

The baseline of every ratio is full-model FedAvg of the same model in float32 (FLoCoRA's
"FedAvg" row): each message is the whole model of the task, i.e. the backbone's parameters and
float buffers (BatchNorm statistics) plus an FC head, 4 bytes per value, on both links.
`fcl params` prints `params_report` without loading any data: parameter counts depend only on
the input channels and the number of classes, which `DATA_SHAPES` lists for the known data sets
(any other data set is loaded to read them).
"""
from __future__ import annotations

from collections import defaultdict

import torch
from torch import nn

from fcl.config import RunConfig
from fcl.data.datasets import load_dataset
from fcl.data.federated import split_classes
from fcl.federated.compression import FLOAT_BYTES, encoder
from fcl.federated.participation import num_sampled
from fcl.models.factory import build_model
from fcl.models.task_state import buffer_names, read_state, trainable_names

BITS = (32, 8, 4, 2)
# data.name -> (input channels, classes)
DATA_SHAPES: dict[str, tuple[int, int]] = {
    "fashion_mnist_bundled": (1, 10), "fashion_mnist": (1, 10), "cifar10": (3, 10),
    "cifar100": (3, 100),
}


def full_model_nbytes(backbone: nn.Module, num_classes: int) -> int:
    """float32 bytes of one full-model FedAvg message: backbone + float buffers + FC head."""
    values = sum(p.numel() for p in backbone.parameters())
    values += sum(b.numel() for b in backbone.buffers() if b.is_floating_point())
    return FLOAT_BYTES * (values + (backbone.out_channels + 1) * num_classes)


def _data_shape(cfg: RunConfig) -> tuple[int, int]:
    if cfg.data.name in DATA_SHAPES:
        return DATA_SHAPES[cfg.data.name]
    ds = load_dataset(cfg.data.name, cfg.data.root, cfg.data)   # e.g. decathlon: data.domains
    return ds.image_shape[0], ds.num_classes


def params_report(cfg: RunConfig) -> dict:
    """Counts and message sizes of task 0 for `cfg` (the head is the only part that differs
    between tasks, by its number of classes), at every `compression.bits`."""
    channels, num_classes = _data_shape(cfg)
    classes = [len(g) for g in split_classes(num_classes, cfg.data.num_tasks,
                                             cfg.data.class_order, cfg.seed)]
    model = build_model(cfg.model, (channels, 32, 32), classes, cfg.seed)
    task = model.tasks[0]
    trainable, buffers = trainable_names(task), buffer_names(task)
    params, bufs = read_state(task, trainable), read_state(task, buffers)
    by_part: dict[str, int] = defaultdict(int)
    for n, t in params.items():
        by_part[n.split(".")[0]] += t.numel()
    # the uplink's tensors: trained values (payload=values) or a delta of the same shapes
    sent = params if cfg.compression.payload == "values" else \
        {n: torch.zeros_like(t) for n, t in params.items()}
    full = full_model_nbytes(model.backbone, classes[0])
    messages = []
    for bits in BITS:
        down = encoder(bits)({**params, **bufs})
        up = encoder(bits)({**sent, **bufs})
        messages.append({
            "bits": bits, "bytes_down": down.nbytes, "bytes_up": up.nbytes,
            "quantized_values": sum(q.shape.numel() for q in down.quantized.values()),
            "float32_values": sum(t.numel() for t in down.tensors.values()),
            "ratio_vs_full": 2 * full / (down.nbytes + up.nbytes)})
    sampled = num_sampled(cfg.participation.fraction, cfg.data.num_clients)
    mine = next(m for m in messages if m["bits"] == cfg.compression.bits)
    return {
        "backbone": cfg.model.backbone, "adapter": cfg.model.adapter, "norm": cfg.model.norm,
        "data": cfg.data.name, "in_channels": channels, "classes_per_task": classes,
        "total_params": sum(p.numel() for p in model.parameters()),
        "backbone_params": sum(p.numel() for p in model.backbone.parameters()),
        "trainable_params": sum(by_part.values()), "trainable_by_part": dict(by_part),
        "buffer_values": sum(t.numel() for t in bufs.values()),
        "full_model_bytes": full, "messages": messages, "bits": cfg.compression.bits,
        "rounds": cfg.rounds, "clients_per_round": sampled,
        # TCC of the planned run (no stragglers): every round, each sampled client gets one
        # message and sends one
        "tcc_bytes": cfg.rounds * sampled * (mine["bytes_down"] + mine["bytes_up"]),
        "full_fedavg_tcc_bytes": cfg.rounds * sampled * 2 * full,
    }


def describe_adapter(cfg: RunConfig) -> str:
    m = cfg.model
    if m.adapter == "lora":
        parts = ["LoRA on every conv" + (" and the FC" if m.lora_on_head else ""),
                 "norms " + ("trained" if m.lora_train_norms else "frozen")]
        if not m.lora_on_head:
            parts.append("FC trained")
        return (f"lora (r={m.lora_rank}, alpha={m.lora_alpha:g}, scale "
                f"{m.lora_alpha / m.lora_rank:g}; {', '.join(parts)})")
    if m.adapter == "full":
        return "full (every weight trained and sent: FedAvg)"
    return m.adapter


def format_report(rep: dict, cfg: RunConfig) -> str:
    parts = ", ".join(f"{k} {v:,}" for k, v in rep["trainable_by_part"].items())
    lines = [
        f"full model  {rep['full_model_bytes'] // FLOAT_BYTES:,} values (backbone + FC head + "
        f"norm statistics: FedAvg's message) = {rep['full_model_bytes']:,} B in float32",
        f"model       {rep['backbone']} ({rep['norm']} norm) + {describe_adapter(cfg)}",
        f"data        {rep['data']}: {rep['in_channels']} input channels, classes per task "
        f"{rep['classes_per_task']}",
        f"task 0      trainable {rep['trainable_params']:,} ({parts}); communicated per message "
        f"{rep['trainable_params'] + rep['buffer_values']:,} values "
        f"({rep['buffer_values']:,} of them norm statistics)",
        f"in memory   {rep['total_params']:,} parameters (frozen backbone "
        f"{rep['backbone_params']:,}, its norms unused where tasks train their own, + "
        f"{len(rep['classes_per_task'])} task module(s))",
        "",
        f"bytes per message, each link (down: the task's server state; up: the client's "
        f"{'trained values' if cfg.compression.payload == 'values' else 'delta'} + norm "
        "statistics)",
        f"{'bits':>5} {'quantized values':>17} {'float32 values':>15} {'down B':>12} "
        f"{'up B':>12} {'vs full':>8}",
    ]
    for m in rep["messages"]:
        mark = " *" if m["bits"] == rep["bits"] else ""
        lines.append(f"{m['bits']:>5} {m['quantized_values']:>17,} {m['float32_values']:>15,} "
                     f"{m['bytes_down']:>12,} {m['bytes_up']:>12,} "
                     f"{m['ratio_vs_full']:>7.2f}x{mark}")
    lines += ["",
              f"run (* = compression.bits={rep['bits']}): {rep['rounds']} rounds x "
              f"{rep['clients_per_round']} clients, no stragglers: TCC "
              f"{rep['tcc_bytes'] / 1e6:,.3f} MB vs full FedAvg "
              f"{rep['full_fedavg_tcc_bytes'] / 1e6:,.3f} MB"]
    return "\n".join(lines)
