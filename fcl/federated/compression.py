"""What goes over the wire. `encode(params) -> Message`, `decode(Message) -> params`, and
`Message.nbytes` counts exactly what would be sent. The codec here sends float32 tensors
as they are (4 bytes per element); quantized codecs plug in behind the same contract."""
from __future__ import annotations

from dataclasses import dataclass

from fcl.models.task_state import Params


@dataclass(frozen=True)
class Message:
    tensors: Params
    nbytes: int


def encode(params: Params) -> Message:
    tensors = {n: t.float() for n, t in params.items()}
    return Message(tensors, sum(4 * t.numel() for t in tensors.values()))


def decode(message: Message) -> Params:
    return message.tensors


def float32_nbytes(params: Params) -> int:
    return sum(4 * t.numel() for t in params.values())

