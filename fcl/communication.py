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
from fcl.federated.compression import FLOAT_BYTES, Codec, encoder
from fcl.federated.participation import num_sampled
from fcl.methods.registry import method
from fcl.models.factory import build_model
from fcl.models.task_state import Params, buffer_names, read_state, trainable_names

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


def client_model_nbytes(model: nn.Module, cfg: RunConfig, knowledge: bool = True) -> int:
    """float32 bytes of the model one client stores (Table 4's "model size"): the frozen
    backbone and every task's module (`full`: the T whole-model copies, plus the frozen original
    its contract keeps); a method with its own messages counts its own (FedWeIT: with its
    knowledge bases, or without them at `knowledge=False`)."""
    own = method(cfg.model.adapter).messages
    if own is not None:
        return own.client_nbytes(model, cfg, knowledge)
    tensors = [*model.backbone.parameters(), *model.tasks.parameters(),
               *(b for b in model.backbone.buffers() if b.is_floating_point()),
               *(b for b in model.tasks.buffers() if b.is_floating_point())]
    return FLOAT_BYTES * sum(t.numel() for t in tensors)


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
    spec = method(cfg.model.adapter)
    own = spec.messages
    messages = own.rows(model, cfg, full) if own is not None else []
    for bits in BITS if own is None else ():
        down = encoder(bits)({**params, **bufs})
        up = encoder(bits)({**sent, **bufs})
        messages.append({
            "bits": bits, "bytes_down": down.nbytes, "bytes_up": up.nbytes,
            "quantized_values": sum(q.shape.numel() for q in down.quantized.values()),
            "float32_values": sum(t.numel() for t in down.tensors.values()),
            "ratio_vs_full": 2 * full / (down.nbytes + up.nbytes)})
    sparse = cfg.compression.prune > 0 or upload_density(cfg) > 0
    if sparse:
        messages.append(sparse_message(cfg, {**params, **bufs}, {**sent, **bufs}, bufs, full))
    sampled = num_sampled(cfg.participation.fraction, cfg.data.num_clients)
    mine = messages[-1] if sparse else \
        next(m for m in messages if m["bits"] == cfg.compression.bits)
    return {
        "backbone": cfg.model.backbone, "adapter": cfg.model.adapter, "norm": cfg.model.norm,
        "data": cfg.data.name, "in_channels": channels, "classes_per_task": classes,
        "total_params": sum(p.numel() for p in model.parameters()),
        "backbone_params": sum(p.numel() for p in model.backbone.parameters()),
        "trainable_params": sum(by_part.values()), "trainable_by_part": dict(by_part),
        "buffer_values": sum(t.numel() for t in bufs.values()),
        "full_model_bytes": full, "client_model_bytes": client_model_nbytes(model, cfg),
        # FedWeIT without its knowledge bases (the other methods hold none: the same)
        "client_model_bytes_own": client_model_nbytes(model, cfg, knowledge=False),
        # the rank of each low-rank layer (FedPara's R), in module order ([]: none)
        "layer_ranks": spec.layer_ranks(task) if spec.layer_ranks else [],
        "messages": messages, "bits": cfg.compression.bits, "prune": cfg.compression.prune,
        "rounds": cfg.rounds, "clients_per_round": sampled,
        # TCC of the planned run (no stragglers): every round, each sampled client gets one
        # message and sends one
        "tcc_bytes": cfg.rounds * sampled * (mine["bytes_down"] + mine["bytes_up"]),
        "full_fedavg_tcc_bytes": cfg.rounds * sampled * 2 * full,
    }


def upload_density(cfg: RunConfig) -> float:
    """The method's top-K share of each conv kernel in the uplink (ZeroFL; 0: dense)."""
    return method(cfg.model.adapter).upload_density(cfg.model)


def sparse_message(cfg: RunConfig, state: Params, upload: Params, buffers: Params,
                   full: int) -> dict:
    """Both links' bytes of a sparse message for the initial state, at `compression.prune`
    (the uplink, and the downlink with `prune_server`) or ZeroFL's top-K uplink (each conv
    kernel at `upload_density`; the downlink dense); a sparse message's size depends on its
    values (ties, kept counts), so on a trained model the bytes move a little. The values-only
    sizes beside them."""
    codec = Codec.from_config(32, cfg.compression.payload, cfg.compression.prune,
                              cfg.compression.prune_server, upload_density(cfg))
    down = codec.message(state, buffers, down=True)
    up = codec.message(upload, buffers)
    how = {"prune": cfg.compression.prune} if cfg.compression.prune > 0 else \
        {"top_k": upload_density(cfg)}
    return {"bits": 32, **how, "bytes_down": down.nbytes,
            "bytes_up": up.nbytes, "values_bytes_down": down.values_nbytes,
            "values_bytes_up": up.values_nbytes, "quantized_values": 0,
            "float32_values": sum(t.numel() for t in state.values()),
            "ratio_vs_full": 2 * full / (down.nbytes + up.nbytes)}


def describe_adapter(cfg: RunConfig) -> str:
    return method(cfg.model.adapter).description(cfg.model)


def format_report(rep: dict, cfg: RunConfig) -> str:
    parts = ", ".join(f"{k} {v:,}" for k, v in rep["trainable_by_part"].items())
    own = method(cfg.model.adapter).messages
    lines = [
        f"full model  {rep['full_model_bytes'] // FLOAT_BYTES:,} values (backbone + FC head + "
        f"norm statistics: FedAvg's message) = {rep['full_model_bytes']:,} B in float32",
        f"model       {rep['backbone']} ({rep['norm']} norm) + {describe_adapter(cfg)}",
        *([f"ranks       R per FedPara layer, in module order: "
            f"{', '.join(map(str, rep['layer_ranks']))}"] if rep["layer_ranks"] else []),
        f"data        {rep['data']}: {rep['in_channels']} input channels, classes per task "
        f"{rep['classes_per_task']}",
        f"task 0      trainable {rep['trainable_params']:,} ({parts}); " + (
            own.sent if own else
            f"communicated per message {rep['trainable_params'] + rep['buffer_values']:,} "
            f"values ({rep['buffer_values']:,} of them norm statistics)"),
        f"in memory   {rep['total_params']:,} parameters (frozen backbone "
        f"{rep['backbone_params']:,}, its norms unused where tasks train their own, + "
        f"{len(rep['classes_per_task'])} task module(s))",
        f"stored      {rep['client_model_bytes']:,} B in float32 per client (its model with "
        f"every task: Table 4's model size)" + (
            f"; {rep['client_model_bytes_own']:,} B without the knowledge bases"
            if rep["client_model_bytes_own"] != rep["client_model_bytes"] else ""),
        "",
        f"bytes per message, each link ({own.links})" if own
        else f"bytes per message, each link (down: the task's server state; up: the client's "
        f"{'trained values' if cfg.compression.payload == 'values' else 'delta'} + norm "
        "statistics)",
        f"{'bits':>5} {'quantized values':>17} {'float32 values':>15} {'down B':>12} "
        f"{'up B':>12} {'vs full':>8}",
    ]
    last = rep["messages"][-1]
    sparse = "prune" in last or "top_k" in last        # the run's own message is the last row
    for m in rep["messages"]:
        mine = m is last if sparse else m["bits"] == rep["bits"]
        mark = " *" if mine else ""
        bits = f"p{m['prune']:g}" if "prune" in m else \
            f"k{m['top_k']:g}" if "top_k" in m else m["bits"]
        lines.append(f"{bits:>5} {m['quantized_values']:>17,} {m['float32_values']:>15,} "
                     f"{m['bytes_down']:>12,} {m['bytes_up']:>12,} "
                     f"{m['ratio_vs_full']:>7.2f}x{mark}")
    prune_note = f", compression.prune={rep['prune']:g}" if "prune" in last else \
        f", top-K upload density {last['top_k']:g}" if "top_k" in last else ""
    if "prune" in last:
        lines.append(f"p{last['prune']:g}: compression.prune on the initial state, sparse "
                     f"(count + values + bitmap or indices); values only: down "
                     f"{last['values_bytes_down']:,} B, up {last['values_bytes_up']:,} B")
    if "top_k" in last:
        lines.append(f"k{last['top_k']:g}: the method's top-K uplink (ZeroFL's) on the initial "
                     f"state, each conv kernel at its top {last['top_k']:g} by magnitude, sparse "
                     f"(count + values + bitmap or indices), the downlink dense; values only: "
                     f"up {last['values_bytes_up']:,} B")
    lines += ["",
              f"run (* = compression.bits={rep['bits']}{prune_note}): {rep['rounds']} rounds x "
              f"{rep['clients_per_round']} clients, no stragglers: TCC "
              f"{rep['tcc_bytes'] / 1e6:,.3f} MB vs full FedAvg "
              f"{rep['full_fedavg_tcc_bytes'] / 1e6:,.3f} MB"]
    return "\n".join(lines)
