"""The trained model of a run, written by `fcl run --save-model DIR` and read by
`fcl.load_model(DIR)`.

    DIR/model.pt     torch.save of plain dicts and tensors (loads with weights_only=True): every
                     task module's state_dict, the input statistics (mean, std) the run
                     normalised with, and a sha256 of the frozen backbone's tensors
    DIR/model.json   what rebuilds the model: the run's flat config, the image shape, the classes
                     of every task (data set labels, in head order), and the backbone's identity:
                     its random init from `seed`, or the weights file (`model.weights`, with its
                     sha256) / torchvision's ImageNet weights it was loaded from; and under
                     "summary" the run's summary (`RunSummary`: acc, bwt_f, bytes_up, tcc_bytes,
                     rounds, wall_s, ...; NaN written as null), so a saved model says how well
                     it did

The backbone is not stored: it is frozen, so `fcl.models.factory.build_model` rebuilds it
bit-identically from the config (checked against the stored sha256 on load); only the task
modules, the part the federation trained, are stored. Evaluating the loaded model on the run's
test sets gives the run's last accuracy column exactly (tests/test_saved_model.py), for runs in
fp32 (`run.precision=bf16` evaluated under autocast; the loaded model computes in fp32).
"""
from __future__ import annotations

import hashlib
import json
import math
import os

import torch
from torch import nn

from fcl import __version__
from fcl.atomic_file import write_text_atomic, write_torch_atomic
from fcl.config import RunConfig, from_flat
from fcl.data.federated import FederatedData
from fcl.models.factory import build_model
from fcl.models.pretrained import input_stats
from fcl.records import RunSummary

MODEL_FILE, META_FILE, FORMAT = "model.pt", "model.json", 1


class TaskClassifier(nn.Module):
    """One task of a saved run: the shared backbone + task `task`'s module. `forward(x)` gives
    that task's logits (its classes: `classes`, data set labels in logit order) for uint8
    images (N, C, H, W) as the data set holds them, normalised with the run's statistics;
    a float `x` is taken as already normalised."""

    def __init__(self, model: nn.Module, task: int, classes: list[int], mean: torch.Tensor,
                 std: torch.Tensor):
        super().__init__()
        self.model, self.task, self.classes = model, task, list(classes)
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.uint8:
            x = (x.float() * (1.0 / 255.0) - self.mean) / self.std
        return self.model(x, self.task)


def tensors_sha256(module: nn.Module) -> str:
    """A hash of a module's state (names, dtypes, shapes and bytes, in name order)."""
    h = hashlib.sha256()
    for name, t in sorted(module.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def backbone_identity(cfg: RunConfig) -> dict:
    m = cfg.model
    if m.weights:
        return {"init": "file", "path": os.path.abspath(m.weights),
                "sha256": file_sha256(m.weights), "pretrained": m.pretrained}
    if m.pretrained != "none":
        return {"init": m.pretrained, "source": "torchvision resnet18 IMAGENET1K_V1"}
    return {"init": "random", "seed": cfg.seed}


def run_stats(cfg: RunConfig, data: FederatedData) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, std) the run normalised its inputs with (`engine.start`'s choice)."""
    d = data.with_stats(input_stats(cfg.model, data.image_shape[0]))
    return d.mean.detach().cpu().float(), d.std.detach().cpu().float()


def summary_json(summary: RunSummary) -> dict:
    """The summary's fields, NaN as None (JSON has no NaN: a strict reader refuses the file)."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v
            for k, v in summary.row().items()}


def save_model(folder: str, cfg: RunConfig, model: nn.Module, data: FederatedData,
               summary: RunSummary | None = None) -> list[str]:
    """Write the trained `model` of a run of `cfg` on `data` to `folder`, with the run's
    `summary` in model.json when given; returns the paths."""
    os.makedirs(folder, exist_ok=True)
    mean, std = run_stats(cfg, data)
    blob = {"format": FORMAT,
            "tasks": [{k: v.detach().cpu().contiguous().clone()
                       for k, v in m.state_dict().items()} for m in model.tasks],
            "mean": mean, "std": std, "backbone_sha256": tensors_sha256(model.backbone)}
    meta = {"format": FORMAT, "fcl_version": __version__, "config": cfg.to_flat(),
            "image_shape": list(data.image_shape),
            "task_classes": [[int(c) for c in t.classes] for t in data.tasks],
            "backbone": backbone_identity(cfg), "backbone_sha256": blob["backbone_sha256"]}
    if summary is not None:
        meta["summary"] = summary_json(summary)
    paths = [os.path.join(folder, MODEL_FILE), os.path.join(folder, META_FILE)]
    write_torch_atomic(blob, paths[0])
    write_text_atomic(json.dumps(meta, indent=1) + "\n", paths[1])
    return paths


def load_model(folder: str, device: str | torch.device = "cpu") -> list[TaskClassifier]:
    """The model `fcl run --save-model folder` wrote: one `TaskClassifier` per task (sharing one
    backbone), in eval mode on `device`. Raises ValueError if the rebuilt backbone differs
    from the run's (another weights file at that path, another torch init)."""
    with open(os.path.join(folder, META_FILE)) as f:
        meta = json.load(f)
    blob = torch.load(os.path.join(folder, MODEL_FILE), map_location="cpu", weights_only=True)
    cfg = from_flat(meta["config"])
    ident = meta["backbone"]
    if ident["init"] == "file" and file_sha256(ident["path"]) != ident["sha256"]:
        raise ValueError(f"{ident['path']}: not the backbone weights file of this run "
                         f"(sha256 differs)")
    classes = meta["task_classes"]
    model = build_model(cfg.model, tuple(meta["image_shape"]), [len(c) for c in classes],
                        cfg.seed)
    if tensors_sha256(model.backbone) != blob["backbone_sha256"]:
        raise ValueError(f"{folder}: the rebuilt backbone differs from the run's")
    for module, state in zip(model.tasks, blob["tasks"]):
        module.load_state_dict(state)
    model.to(device).eval()
    return [TaskClassifier(model, t, c, blob["mean"], blob["std"]).to(device).eval()
            for t, c in enumerate(classes)]
