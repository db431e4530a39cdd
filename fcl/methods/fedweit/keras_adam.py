"""FedWeIT's client optimizer as the official code runs it: Keras's Adam, fresh each round."""
from __future__ import annotations

import math

import torch


def adam(beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-7):
    """A fresh Adam (Keras's form of the update); its moments start at zero each round."""
    m: list[torch.Tensor] = []
    v: list[torch.Tensor] = []
    count = [0]

    @torch.no_grad()
    def step(params: list[torch.Tensor], grads: list[torch.Tensor], lr: float) -> None:
        if not m:
            m.extend(torch.zeros_like(p) for p in params)
            v.extend(torch.zeros_like(p) for p in params)
        count[0] += 1
        s = count[0]
        torch._foreach_lerp_(m, grads, 1 - beta1)
        torch._foreach_mul_(v, beta2)
        torch._foreach_addcmul_(v, grads, grads, value=1 - beta2)
        lr_t = lr * math.sqrt(1 - beta2 ** s) / (1 - beta1 ** s)
        denom = torch._foreach_add(torch._foreach_sqrt(v), eps)
        torch._foreach_addcdiv_(params, m, denom, value=-lr_t)
    return step
