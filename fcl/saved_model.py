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

Both files vouch for each other: model.json holds a sha256 of every task module's tensors and of
the input statistics, model.pt one of the class lists, so that a model whose weights or classes
were changed after the run is refused on load (`SavedModelError`). A folder saved before these
digests existed (none in either file) loads with a warning that it cannot be verified; one
whose digests were removed from one file only is refused.

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
import warnings

import torch
from torch import nn

from fcl import __version__
from fcl.atomic_file import write_text_atomic, write_torch_atomic
from fcl.config import RunConfig, from_flat
from fcl.data.federated import FederatedData
from fcl.models.factory import build_model
from fcl.models.pretrained import input_stats
from fcl.manifest import sha256 as file_sha256
from fcl.records import RunSummary
from fcl.shipped_weights import weights_file

MODEL_FILE, META_FILE, FORMAT = "model.pt", "model.json", 1


class SavedModelError(ValueError):
    """A saved model that is not what its run saved (a file changed, or one file replaced by
    another run's); `str()` is one line naming the folder and the part that differs."""


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
    return state_sha256(module.state_dict())


def state_sha256(state: dict[str, torch.Tensor]) -> str:
    """A hash of named tensors (names, dtypes, shapes and bytes, in name order): the same for
    the same values whatever file format or torch version stored them."""
    h = hashlib.sha256()
    for name, t in sorted(state.items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def backbone_identity(cfg: RunConfig) -> dict:
    m = cfg.model
    if m.weights:
        path = weights_file(m.weights)     # a shipped backbone stays `fcl:NAME`, portable
        return {"init": "file", "path": m.weights if path != m.weights else os.path.abspath(path),
                "sha256": file_sha256(path), "pretrained": m.pretrained}
    if m.pretrained != "none":
        return {"init": m.pretrained, "source": "torchvision resnet18 IMAGENET1K_V1"}
    return {"init": "random", "seed": cfg.seed}


def run_stats(cfg: RunConfig, data: FederatedData) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, std) the run normalised its inputs with (`engine.start`'s choice)."""
    d = data.with_stats(input_stats(cfg.model, data.image_shape[0]))
    return d.mean.detach().cpu().float(), d.std.detach().cpu().float()


def classes_sha256(task_classes: list[list[int]]) -> str:
    return hashlib.sha256(json.dumps(task_classes).encode()).hexdigest()


def summary_json(summary: RunSummary) -> dict:
    """The summary's fields, NaN as None (JSON has no NaN: a strict reader refuses the file)."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v
            for k, v in summary.row().items()}


def holds_model(folder: str) -> bool:
    return any(os.path.exists(os.path.join(folder, f)) for f in (MODEL_FILE, META_FILE))


def save_model(folder: str, cfg: RunConfig, model: nn.Module, data: FederatedData,
               summary: RunSummary | None = None, replace: bool = False) -> list[str]:
    """Write the trained `model` of a run of `cfg` on `data` to `folder`, with the run's
    `summary` in model.json when given; returns the paths. A folder that already holds a model
    is refused (FileExistsError) unless `replace`: a study's trial rewrites its own."""
    if not replace and holds_model(folder):
        raise FileExistsError(f"{folder} already holds a saved model")
    os.makedirs(folder, exist_ok=True)
    mean, std = run_stats(cfg, data)
    tasks = [{k: v.detach().cpu().contiguous().clone() for k, v in m.state_dict().items()}
             for m in model.tasks]
    task_classes = [[int(c) for c in t.classes] for t in data.tasks]
    blob = {"format": FORMAT, "tasks": tasks, "mean": mean, "std": std,
            "backbone_sha256": tensors_sha256(model.backbone),
            "classes_sha256": classes_sha256(task_classes)}
    meta = {"format": FORMAT, "fcl_version": __version__, "config": cfg.to_flat(),
            "image_shape": list(data.image_shape), "task_classes": task_classes,
            "backbone": backbone_identity(cfg), "backbone_sha256": blob["backbone_sha256"],
            "tasks_sha256": [state_sha256(t) for t in tasks],
            "stats_sha256": state_sha256({"mean": mean, "std": std})}
    if summary is not None:
        meta["summary"] = summary_json(summary)
    paths = [os.path.join(folder, MODEL_FILE), os.path.join(folder, META_FILE)]
    write_torch_atomic(blob, paths[0])
    write_text_atomic(json.dumps(meta, indent=1) + "\n", paths[1])
    return paths


def verify(folder: str, meta: dict, blob: dict) -> None:
    """Refuse (SavedModelError) a model whose tensors or classes are not those its run saved."""
    fix = "save the run's model again (fcl run --save-model), or restore both files"
    present = {f"{META_FILE} {k}": k in meta for k in ("tasks_sha256", "stats_sha256")}
    present[f"{MODEL_FILE} classes_sha256"] = "classes_sha256" in blob
    if not any(present.values()):
        # a one-line warning (no source line), as fcl.data.cache's
        warnings.warn_explicit(f"{folder}: saved without digests (an older fcl), so its "
                               f"weights and classes cannot be verified", UserWarning,
                               filename=__name__, lineno=0)
        return
    if not all(present.values()):      # an fcl with digests wrote both: some were removed
        gone = ", ".join(k for k, v in present.items() if not v)
        raise SavedModelError(f"{folder}: {gone} missing while the other digests are there, so "
                              f"a file was edited after the run; {fix}")
    if classes_sha256(meta["task_classes"]) != blob["classes_sha256"]:
        raise SavedModelError(f"{folder}: the task classes in {META_FILE} are not those the "
                              f"run saved with {MODEL_FILE}; {fix}")
    if len(meta["tasks_sha256"]) != len(blob["tasks"]):
        raise SavedModelError(f"{folder}: {MODEL_FILE} holds {len(blob['tasks'])} tasks, "
                              f"{META_FILE} {len(meta['tasks_sha256'])}; {fix}")
    for t, (state, digest) in enumerate(zip(blob["tasks"], meta["tasks_sha256"])):
        if state_sha256(state) != digest:
            raise SavedModelError(f"{folder}: task {t}'s weights in {MODEL_FILE} are not those "
                                  f"the run saved (sha256 differs); {fix}")
    if state_sha256({"mean": blob["mean"], "std": blob["std"]}) != meta["stats_sha256"]:
        raise SavedModelError(f"{folder}: the input statistics in {MODEL_FILE} are not those "
                              f"the run saved (sha256 differs); {fix}")


def _read_saved(folder: str) -> tuple[dict, dict]:
    """model.json and model.pt of a saved model; SavedModelError (one line naming the file)
    where one is missing, unreadable, or not what `fcl run --save-model` writes."""
    meta_path, model_path = os.path.join(folder, META_FILE), os.path.join(folder, MODEL_FILE)
    for path in (meta_path, model_path):
        if not os.path.isfile(path):
            raise SavedModelError(f"{path}: not found (a folder that fcl run --save-model "
                                  "wrote holds model.json and model.pt)")
    try:
        with open(meta_path) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        raise SavedModelError(f"{meta_path}: not readable JSON ({type(e).__name__})") from None
    try:
        blob = torch.load(model_path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises several types for a file that is not its pickle
        raise SavedModelError(f"{model_path}: not a model torch can load "
                              f"({type(e).__name__})") from None
    if not isinstance(meta, dict) or not isinstance(blob, dict):
        raise SavedModelError(f"{folder}: model.json or model.pt is not what fcl run "
                              "--save-model writes")
    return meta, blob


def load_model(folder: str, device: str | torch.device = "cpu") -> list[TaskClassifier]:
    """The model `fcl run --save-model folder` wrote: one `TaskClassifier` per task (sharing one
    backbone), in eval mode on `device`. Raises SavedModelError (a ValueError) if a task's
    weights, the classes or the input statistics are not those the run saved, and ValueError
    if the rebuilt backbone differs from the run's (another weights file at that path, another
    torch init). A missing, unreadable or foreign file raises SavedModelError, one line."""
    meta, blob = _read_saved(folder)
    try:
        cfg = from_flat(meta["config"])
        ident = meta["backbone"]
        classes = meta["task_classes"]
    except (KeyError, TypeError, ValueError) as e:
        raise SavedModelError(f"{folder}/{META_FILE}: not the description fcl run --save-model "
                              f"writes ({type(e).__name__}: {e})") from None
    if ident["init"] == "file" and file_sha256(weights_file(ident["path"])) != ident["sha256"]:
        raise ValueError(f"{ident['path']}: not the backbone weights file of this run "
                         f"(sha256 differs)")
    verify(folder, meta, blob)
    model = build_model(cfg.model, tuple(meta["image_shape"]), [len(c) for c in classes],
                        cfg.seed)
    if tensors_sha256(model.backbone) != blob["backbone_sha256"]:
        raise ValueError(f"{folder}: the rebuilt backbone differs from the run's")
    for module, state in zip(model.tasks, blob["tasks"]):
        module.load_state_dict(state)
    model.to(device).eval()
    return [TaskClassifier(model, t, c, blob["mean"], blob["std"]).to(device).eval()
            for t, c in enumerate(classes)]
