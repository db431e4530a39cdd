"""NetTailor task modules (Morgado & Vasconcelos 2019) on a frozen backbone.

For task t, block l's output is a gated mix of the frozen path and proxies from the k previous
nodes (FCL paper, Eq. 4):

    x_l = a_l^l G_l(x_{l-1}) + sum_{l'=max(l-k,0)}^{l-1} a_{l'}^l P_t^{(l',l)}(x_{l'})

A proxy P is max-pool (when the two nodes differ in resolution) + 1x1 conv + norm. The gates
a^l are a softmax over the paths of block l, logits initialised to +g for the frozen path and -g
for proxies (NetTailor's code, g = 2), so a new task starts close to the backbone. Node 0 is the
stem output, which the FCL paper's sum from l'=1 counts as layer 1.

Optional (off by default): NetTailor's complexity loss, the gate mass on each proxy times that
proxy's share of the block's cost (`model.complexity_penalty`). NetTailor's later pruning of
low-gate paths is not implemented: all paths stay, which is what the FCL paper trains and sends.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fcl.models.backbone import Backbone, make_norm


class Proxy(nn.Module):
    def __init__(self, cin: int, cout: int, pool: int, norm: str):
        super().__init__()
        self.factor = pool
        self.conv = nn.Conv2d(cin, cout, 1, bias=False)
        self.norm = make_norm(norm, cout)

    def project(self, pooled: torch.Tensor) -> torch.Tensor:
        """The proxy on its source node already max-pooled by `factor`."""
        return self.norm(self.conv(pooled))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.project(NodePyramid([x]).pooled(0, self.factor))


class NodePyramid:
    """Max-pooled copies of the nodes, made once per forward pass and shared by the proxies.

    A node feeds proxies into up to k later blocks, pooled by 2, 4, 8, ...; pooling by 2f is
    pooling by 2 of the copy pooled by f (with ceil_mode the 2x2 windows of the 2x2 windows are
    exactly the 4x4 windows, partial edge windows included), so each level reads a quarter of
    the previous one instead of the full-resolution node (the `local` model's training step got
    1.075x faster). ceil_mode matches the size of a stride-2, padding-1 conv on odd inputs.
    """

    def __init__(self, nodes: list[torch.Tensor]):
        self.nodes = nodes
        self._pooled: dict[tuple[int, int], torch.Tensor] = {}

    def pooled(self, node: int, factor: int) -> torch.Tensor:
        if factor == 1:
            return self.nodes[node]
        key = (node, factor)
        if key not in self._pooled:
            if factor % 2 == 0:
                x, k = self.pooled(node, factor // 2), 2
            else:                      # not a power of two: pool the node directly
                x, k = self.nodes[node], factor
            self._pooled[key] = F.max_pool2d(x, k, ceil_mode=True)
        return self._pooled[key]


class NetTailorTask(nn.Module):
    """One task's trainable state: proxies and gate logits per block, and the head."""

    def __init__(self, backbone: Backbone, num_classes: int, depth: int, gate_init: float,
                 norm: str):
        super().__init__()
        self.sources: list[list[int]] = []
        proxies, gates = [], []
        for l in range(1, len(backbone.channels)):
            src = list(range(max(l - depth, 0), l))
            self.sources.append(src)
            proxies.append(nn.ModuleList(
                Proxy(backbone.channels[s], backbone.channels[l],
                      backbone.reduction[l] // backbone.reduction[s], norm) for s in src))
            logits = torch.full((1 + len(src),), -gate_init)
            logits[0] = gate_init
            gates.append(nn.Parameter(logits))
        self.proxies = nn.ModuleList(proxies)
        self.gates = nn.ParameterList(gates)
        self.head = nn.Linear(backbone.out_channels, num_classes)
        # Proxy cost relative to its block (1x1 conv vs two 3x3 convs), for the complexity loss.
        self._cost = [torch.tensor([backbone.channels[s] / (9.0 * 2 * backbone.channels[l])
                                    for s in src]) for l, src in enumerate(self.sources, start=1)]

    def complexity(self) -> torch.Tensor:
        terms = [torch.softmax(g, 0)[1:] @ c.to(g.device) for g, c in zip(self.gates, self._cost)
                 if len(c)]
        return torch.stack(terms).sum() if terms else self.head.weight.new_zeros(())


class NetTailorNet(nn.Module):
    """A frozen backbone shared by all tasks, plus one `NetTailorTask` per task."""

    def __init__(self, backbone: Backbone, classes_per_task: list[int], depth: int = 3,
                 gate_init: float = 2.0, norm: str = "group"):
        super().__init__()
        self.backbone = backbone
        self.tasks = nn.ModuleList(NetTailorTask(backbone, n, depth, gate_init, norm)
                                   for n in classes_per_task)

    def train(self, mode: bool = True):
        super().train(mode)
        self.backbone.eval()   # frozen: BatchNorm statistics must never move
        return self

    def forward(self, x: torch.Tensor, task: int) -> torch.Tensor:
        module = self.tasks[task]
        nodes = [self.backbone.stem(x)]
        pyramid = NodePyramid(nodes)
        for l, block in enumerate(self.backbone.blocks):
            weights = torch.softmax(module.gates[l], 0)
            out = weights[0] * block(nodes[-1])
            for j, (src, proxy) in enumerate(zip(module.sources[l], module.proxies[l])):
                out = out + weights[j + 1] * proxy.project(pyramid.pooled(src, proxy.factor))
            nodes.append(out)
        return module.head(nodes[-1].mean(dim=(2, 3)))

    def extra_loss(self, task: int, cfg) -> torch.Tensor | None:
        if cfg.complexity_penalty > 0:
            return cfg.complexity_penalty * self.tasks[task].complexity()
        return None
