"""What goes over the wire. `encoder(bits)(params) -> Message`, `decode(Message) -> params`, and
`Message.nbytes` counts exactly what would be sent: the payload plus the per-channel scales and
zero points (tensor names and shapes are known to both sides and not counted).

bits = 32: every tensor as float32, 4 bytes per element.
bits in {8, 4, 2}: FLoCoRA's affine quantization, round to nearest. A tensor of two or more
dimensions is quantized per output channel (dim 0: a conv's or a LoRA factor's output channels,
a Linear's output units, i.e. the columns of W in y = x W; the paper's "per column for the FC"
is read that way), with a float32 scale and a float32 zero point per channel:

    lo, hi = min, max of the channel;   scale = (hi - lo) / (2^b - 1)   (1 for a constant channel)
    code  = round((x - lo) / scale)  in {0, ..., 2^b - 1};   x_hat = lo + code * scale

so |x - x_hat| <= scale / 2 (up to float rounding), values on the grid come back exactly, and a
constant channel comes back exactly (no 0 / 0). The zero point is sent as `lo`, the real value of
code 0 (a float zero point, as the paper sends its zero points in float). Codes are packed:
8 / b per byte, ceil(numel * b / 8) bytes per tensor. 1-D tensors (norm weights, biases, norm
statistics, NetTailor gates) go as float32, as in the paper.

compression.prune > 0 (float32 only): magnitude pruning, a sparse message (`fcl.federated.
pruning`: one global threshold, its byte encoding) on the uplink, and on the downlink too with
compression.prune_server.

ZeroFL's uplink (`model.adapter=zerofl`, `fcl.methods.zerofl`; the codec's `top_k`): every conv
kernel (4-D tensor) at its own top-K by magnitude, density (1 - s) + r, in the same sparse
encoding; the other tensors dense in float32; the downlink dense.
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import torch

from fcl.federated.pruning import prune, sparse_nbytes, top_k, values_nbytes
from fcl.models.task_state import Params

FLOAT_BYTES = 4


@dataclass(frozen=True)
class QuantizedTensor:
    codes: torch.Tensor      # uint8, packed 8 // bits codes per byte, row-major
    lo: torch.Tensor         # float32 (channels,): the zero point, real value of code 0
    scale: torch.Tensor      # float32 (channels,)
    shape: torch.Size
    bits: int

    @property
    def nbytes(self) -> int:
        return self.codes.numel() + FLOAT_BYTES * (self.lo.numel() + self.scale.numel())


@dataclass(frozen=True)
class Message:
    tensors: Params                    # sent as float32 (pruned ones zero-filled)
    nbytes: int
    quantized: dict[str, QuantizedTensor] = field(default_factory=dict)
    positions_nbytes: int = 0          # of a sparse message: its counts and positions

    @property
    def values_nbytes(self) -> int:
        """The bytes of the values alone (a sparse message without its counts and positions,
        the size papers often quote for pruning); every other message: `nbytes`."""
        return self.nbytes - self.positions_nbytes


def pack(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """uint8 codes < 2^bits, flat -> ceil(n * bits / 8) bytes; code j of a byte sits at bit j*b."""
    per = 8 // bits
    if per == 1:
        return codes
    pad = (-codes.numel()) % per
    groups = torch.nn.functional.pad(codes, (0, pad)).view(-1, per)
    out = groups[:, 0].clone()
    for j in range(1, per):
        out |= groups[:, j] << (bits * j)
    return out


def unpack(packed: torch.Tensor, bits: int, n: int) -> torch.Tensor:
    per = 8 // bits
    if per == 1:
        return packed[:n]
    shifts = torch.arange(0, 8, bits, dtype=torch.uint8, device=packed.device)
    return ((packed[:, None] >> shifts) & (2 ** bits - 1)).flatten()[:n]


def quantize(t: torch.Tensor, bits: int) -> QuantizedTensor:
    rows = t.detach().float().reshape(t.shape[0], -1)
    lo, hi = rows.amin(dim=1), rows.amax(dim=1)
    levels = 2 ** bits - 1
    scale = (hi - lo) / levels
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    codes = torch.round((rows - lo[:, None]) / scale[:, None]).clamp_(0, levels).to(torch.uint8)
    return QuantizedTensor(pack(codes.flatten(), bits), lo, scale, t.shape, bits)


def dequantize(q: QuantizedTensor) -> torch.Tensor:
    codes = unpack(q.codes, q.bits, q.shape.numel()).view(q.shape[0], -1).float()
    return (q.lo[:, None] + codes * q.scale[:, None]).view(q.shape)


def encode(params: Params) -> Message:
    """The float32 codec (bits = 32)."""
    tensors = {n: t.float() for n, t in params.items()}
    return Message(tensors, float32_nbytes(tensors))


def encode_quantized(params: Params, bits: int) -> Message:
    tensors = {n: t.float() for n, t in params.items() if t.dim() < 2}
    quantized = {n: quantize(t, bits) for n, t in params.items() if t.dim() >= 2}
    nbytes = float32_nbytes(tensors) + sum(q.nbytes for q in quantized.values())
    return Message(tensors, nbytes, quantized)


def encode_pruned(params: Params, rate: float, dense: Collection[str] = ()) -> Message:
    """Magnitude pruning at `rate` over every tensor not in `dense` (norm statistics, sent as
    float32), each pruned tensor counted in the sparse encoding of `fcl.federated.pruning`."""
    tensors = {n: t.float() for n, t in prune(params, rate, dense).items()}
    return sparse_message(tensors, [n for n in tensors if n not in dense])


def encode_top_k(params: Params, density: float, dense: Collection[str] = ()) -> Message:
    """ZeroFL's uplink: every conv kernel (4-D tensor) not in `dense` at its own top-K by
    magnitude (`fcl.federated.pruning.top_k` at `density`), in the sparse encoding of
    `fcl.federated.pruning`; every other tensor dense in float32."""
    names = [n for n, t in params.items() if n not in dense and t.dim() == 4]
    tensors = {n: t.float() for n, t in params.items()}
    tensors.update({n: top_k(tensors[n], density) for n in names})
    return sparse_message(tensors, names)


def sparse_message(tensors: Params, names: list[str]) -> Message:
    """The message of float32 `tensors` whose `names` go in the sparse encoding (their non-zero
    values counted) and the others dense."""
    counts = torch.stack([torch.count_nonzero(tensors[n]) for n in names]).tolist() \
        if names else []                                  # one host sync for all tensors
    kept = dict(zip(names, counts))
    sparse = sum(sparse_nbytes(tensors[n].numel(), k) for n, k in kept.items())
    values = sum(values_nbytes(k) for k in kept.values())
    dense_bytes = float32_nbytes({n: t for n, t in tensors.items() if n not in kept})
    return Message(tensors, dense_bytes + sparse, positions_nbytes=sparse - values)


def decode(message: Message) -> Params:
    if not message.quantized:
        return message.tensors
    return {**message.tensors, **{n: dequantize(q) for n, q in message.quantized.items()}}


def encoder(bits: int) -> Callable[[Params], Message]:
    """`compression.bits` -> the encoder of both links (decode reads any message)."""
    return encode if bits == 32 else partial(encode_quantized, bits=bits)


def float32_nbytes(params: Params) -> int:
    return sum(FLOAT_BYTES * t.numel() for t in params.values())


@dataclass(frozen=True)
class Codec:
    """`compression.*` resolved once per run: the encoder of both links, what the uplink
    carries (payload=values: trained tensors; delta: trained minus received) and the pruning
    rate of the uplink (and of the downlink with `prune_server`; 0: none); `top_k`: ZeroFL's
    upload density of every conv kernel (0: none)."""
    bits: int
    values: bool
    encode: Callable[[Params], Message]
    prune: float = 0.0
    prune_server: bool = False
    top_k: float = 0.0

    @classmethod
    def from_config(cls, bits: int, payload: str, prune: float = 0.0,
                    prune_server: bool = False, top_k: float = 0.0) -> "Codec":
        return cls(bits, payload == "values", encoder(bits), prune, prune_server, top_k)

    def message(self, params: Params, dense: Collection[str] = (), down: bool = False
                ) -> Message:
        """The message of `params` on the uplink (`down`: the downlink); `dense`: the names of
        norm statistics, which pruning leaves out."""
        if self.prune > 0 and (self.prune_server or not down):
            return encode_pruned(params, self.prune, dense)
        if self.top_k > 0 and not down:
            return encode_top_k(params, self.top_k, dense)
        return self.encode(params)

    def send(self, params: Params, dense: Collection[str] = (), down: bool = False
             ) -> tuple[Params, int]:
        """(what the receiver decodes, the bytes sent)."""
        msg = self.message(params, dense, down)
        return decode(msg), msg.nbytes

    def served(self, state: Params) -> Params:
        """The model evaluation sees (and clients receive, unless pruned): with payload=values
        the broadcast as decoded (quantized below 32 bits); with payload=delta the float32
        server state. Pruning runs at 32 bits: evaluation sees the dense server state, as the
        server of FLoCoRA's code evaluates its aggregate."""
        return state if self.bits == 32 or not self.values else self.send(state)[0]
