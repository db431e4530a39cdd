"""What fcl asks of a continual method, as one value (`Method`): everything outside a method's
folder that must know about it (the model factory, the engine, the config's checks, `fcl params`,
`--save-model`, the trial id, the figures' labels) reads a `Method` and never compares its name.

A method's folder (`fcl/methods/<name>/`) holds its modules and, in its `__init__.py`, its
`METHOD`; `fcl.methods.registry` lists them. The value imports nothing heavy: `build` (and a
method's own round) import their modules when called, so the config can check a run without
loading torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from torch import nn

    from fcl.config import ModelConfig, RunConfig
    from fcl.federated.round import RoundMethod


def no_rules(cfg: "RunConfig") -> None:
    """A method that puts no rule across the config's sections."""


def dense_upload(cfg: "ModelConfig") -> float:
    """Every tensor uploaded dense (no top-K of its own)."""
    return 0.0


@dataclass(frozen=True)
class OwnMessages:
    """A method whose messages are not its task module's tensors through the codec (FedWeIT:
    the shared B): what `fcl params` prints for it."""
    rows: Callable[["nn.Module", "RunConfig", int], list[dict]]   # (model, cfg, full bytes)
    sent: str                        # what a task's trainable state is to the messages
    links: str                       # what each link carries
    client_nbytes: Callable[["nn.Module", "RunConfig", bool], int]   # (model, cfg, knowledge)


@dataclass(frozen=True)
class Method:
    """One continual method (`model.adapter=<name>`)."""
    name: str                        # its model.adapter value
    summary: str                     # model.adapter's help: what it is, its paper, its folder
    build: Callable[["ModelConfig", "nn.Module", list[int]], "nn.Module"]
    #                                  (cfg, frozen backbone, classes per task) -> a TaskModel
    describe: Callable[["ModelConfig"], str] | None = None   # `fcl params`' model line
    label: str = ""                  # its name in figures and tables (default: `name`)
    keys: tuple[str, ...] = ()       # the config keys it alone reads (`check_read`)
    # its keys enter a trial id even at their defaults: true only for the methods whose keys
    # every stored trial id already holds (a method added later leaves its keys out at their
    # defaults, so adding it changes no stored id)
    keys_always_hashed: bool = False
    check: Callable[["RunConfig"], None] = no_rules   # rules across sections: ConfigError
    upload_density: Callable[["ModelConfig"], float] = dense_upload   # each conv kernel's
    #                                  top-K share in the uplink (ZeroFL), 0: dense
    round: Callable[[], "RoundMethod"] | None = None   # its own round (FedWeIT), None: the
    #                                  engine's round over its task modules
    messages: OwnMessages | None = None   # its own messages, None: the codec's
    layer_ranks: Callable[["nn.Module"], list[int]] | None = None   # a task module's rank
    #                                  per low-rank layer (FedPara's R), for `fcl params`
    whole_model: bool = True         # one model holds every task (false: a model per client,
    #                                  so `--save-model` has none to save)
    hashed_as: str = ""              # the model.adapter its stored trials were hashed under
    spelled_before: Callable[[dict[str, Any]], bool] | None = None   # a stored flat config
    #                                  that ran it before it had its own name (then hashed_as)

    def label_or_name(self) -> str:
        return self.label or self.name

    def description(self, cfg: "ModelConfig") -> str:
        return self.describe(cfg) if self.describe else self.name
