"""FedWeIT (Yoon et al., ICML 2021): decomposed layers (`layers.py`), its own round
(`round.py`), its knowledge base and sparse byte counts (`knowledge_base.py`), what its messages
and clients weigh (`sizes.py`)."""
from __future__ import annotations

from fcl.config_error import ConfigError
from fcl.methods.contract import Method, OwnMessages

KEYS = tuple(f"model.fedweit_{k}" for k in ("lambda_l1", "lambda_l2", "weight_decay", "sparsity",
                                            "channels", "past", "optimizer", "bwt_clients"))


def build(cfg, backbone, classes_per_task):
    from fcl.methods.fedweit.layers import FedWeITNet
    return FedWeITNet(backbone, classes_per_task, cfg.fedweit_lambda_l1)


def describe(m) -> str:
    return (f"fedweit (B sent on {m.fedweit_channels} channels at sparsity "
            f"{m.fedweit_sparsity:g}, lambda_1 {m.fedweit_lambda_l1:g}, lambda_2 "
            f"{m.fedweit_lambda_l2:g}; per round below: B dense down, masked B up, without "
            f"a task end's thresholded A or a task start's knowledge base)")


def check(cfg) -> None:
    """Its own sparse float32 messages with its own client loss."""
    for key, value, want in (("compression.bits", cfg.compression.bits, 32),
                             ("client.algorithm", cfg.client.algorithm, "sgd")):
        if value != want:
            raise ConfigError(key, value, "model.adapter=fedweit sends its own sparse float32 "
                              "messages with its own client loss", str(want))
    if cfg.compression.prune > 0:
        raise ConfigError("compression.prune", cfg.compression.prune, "model.adapter=fedweit "
                          "sends its own sparse messages", "0")


def own_round():
    from fcl.methods.fedweit.round import METHOD as ROUND
    return ROUND


def rows(model, cfg, full):
    from fcl.methods.fedweit.sizes import message_rows
    return message_rows(model, cfg, full)


def client_nbytes(model, cfg, knowledge=True):
    from fcl.methods.fedweit.sizes import client_nbytes as stored
    return stored(model, cfg, knowledge)


METHOD = Method(
    name="fedweit", label="FedWeIT",
    summary="fedweit = FedWeIT's decomposed layers (Yoon et al. 2021; fcl/methods/fedweit/)",
    build=build, describe=describe, check=check, keys=KEYS, round=own_round,
    messages=OwnMessages(rows, sent="private to the client, the shared B is what is sent",
                         links="down: B; up: B's kept channels + their mask",
                         client_nbytes=client_nbytes),
    whole_model=False)
