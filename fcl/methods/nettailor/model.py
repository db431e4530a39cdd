"""NetTailor task modules (Morgado & Vasconcelos 2019) on a frozen backbone.

For task t, block l's output is a gated mix of the frozen path and proxies from the k previous
nodes. Two readings, `model.node_relu`:

    after_sum (default, NetTailor's node):
        x_l = ReLU( a_l^l G_l(x_{l-1}) + sum_{l'=max(l-k,0)}^{l-1} a_{l'}^l P_t^{(l',l)}(x_{l'}) )
    in_block (the FCL paper's Eq. 4 read literally, with G_l a whole block, ReLU included):
        x_l = a_l^l ReLU(G_l(x_{l-1})) + sum_{l'} a_{l'}^l P_t^{(l',l)}(x_{l'})

G_l is the block's residual sum before its last ReLU. NetTailor defines the node as the ReLU of
the gated sum, so proxies act through the nonlinearity and nodes are never negative; the FCL
paper writes Eq. 4 without the ReLU, which read literally lets node values go negative and the
proxies only add linearly.

A proxy P is max-pool (when the two nodes differ in resolution) + 1x1 conv + norm. The pool of a
stride-s jump is NetTailor's `MaxPool2d(kernel=s+1, stride=s, padding=s//2)`: overlapping
windows, output size ceil(H / s) like log2(s) stride-2 convs. The gates a^l are a softmax over
the paths of block l, logits initialised to +g for the frozen path and -g for proxies (NetTailor's
code, g = 2), so a new task starts close to the backbone. Node 0 is the stem output, which the
FCL paper's sum from l'=1 counts as layer 1. Proxy convs are initialised as the backbone's
(Kaiming-normal, fan_out).

Optional (off by default): NetTailor's complexity loss, the gate mass on each proxy times that
proxy's share of the block's cost (`model.complexity_penalty`). NetTailor's later pruning of
low-gate paths is not implemented: all paths stay, which is what the FCL paper trains and sends.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fcl.models.backbone import Backbone, init_weights_, make_norm


class Proxy(nn.Module):
    def __init__(self, cin: int, cout: int, pool: int, norm: str, groups: int = 2):
        super().__init__()
        self.factor = pool
        self.conv = nn.Conv2d(cin, cout, 1, bias=False)
        self.norm = make_norm(norm, cout, groups)

    def project(self, pooled: torch.Tensor) -> torch.Tensor:
        """The proxy on its source node already max-pooled by `factor`."""
        return self.norm(self.conv(pooled))


def proxy_pool(x: torch.Tensor, stride: int) -> torch.Tensor:
    """NetTailor's pool of a stride-s jump: windows of s + 1, stride s, padding s // 2."""
    return F.max_pool2d(x, stride + 1, stride, stride // 2)


class NodePyramid:
    """Max-pooled copies of the nodes, made once per forward pass: proxies from the same node
    with the same stride (e.g. into both blocks of a ResNet-18 stage) share one pooled copy.
    Each copy pools the node itself: the overlapping windows of a pool by 4 (5 wide) are not
    the windows of two pools by 2 (7 wide), so pools are not chained."""

    def __init__(self, nodes: list[torch.Tensor]):
        self.nodes = nodes
        self._pooled: dict[tuple[int, int], torch.Tensor] = {}

    def pooled(self, node: int, factor: int) -> torch.Tensor:
        if factor == 1:
            return self.nodes[node]
        key = (node, factor)
        if key not in self._pooled:
            self._pooled[key] = proxy_pool(self.nodes[node], factor)
        return self._pooled[key]


class NetTailorTask(nn.Module):
    """One task's trainable state: proxies and gate logits per block, and the head."""

    def __init__(self, backbone: Backbone, num_classes: int, depth: int, gate_init: float,
                 norm: str):
        groups = backbone.norm_groups
        super().__init__()
        self.sources: list[list[int]] = []
        proxies, gates = [], []
        for l in range(1, len(backbone.channels)):
            src = list(range(max(l - depth, 0), l))
            self.sources.append(src)
            proxies.append(nn.ModuleList(
                Proxy(backbone.channels[s], backbone.channels[l],
                      backbone.reduction[l] // backbone.reduction[s], norm, groups)
                for s in src))
            logits = torch.full((1 + len(src),), -gate_init)
            logits[0] = gate_init
            gates.append(nn.Parameter(logits))
        self.proxies = nn.ModuleList(proxies)
        init_weights_(self.proxies)
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
                 gate_init: float = 2.0, norm: str = "group", node_relu: str = "after_sum",
                 complexity_penalty: float = 0.0):
        super().__init__()
        self.backbone = backbone
        self.complexity_penalty = complexity_penalty
        self.relu_after_sum = node_relu == "after_sum"
        self.tasks = nn.ModuleList(NetTailorTask(backbone, n, depth, gate_init, norm)
                                   for n in classes_per_task)

    def train(self, mode: bool = True):
        super().train(mode)
        self.backbone.eval()   # frozen: BatchNorm statistics must never move
        return self

    def forward(self, x: torch.Tensor, task: int) -> torch.Tensor:
        return self.tasks[task].head(self.nodes(x, task)[-1].mean(dim=(2, 3)))

    def nodes(self, x: torch.Tensor, task: int) -> list[torch.Tensor]:
        """Node 0 (the stem output) and every block's node x_l for `task`."""
        module = self.tasks[task]
        nodes = [self.backbone.stem(x)]
        pyramid = NodePyramid(nodes)
        for l, block in enumerate(self.backbone.blocks):
            weights = torch.softmax(module.gates[l], 0)
            main = block.preactivation(nodes[-1]) if self.relu_after_sum else block(nodes[-1])
            out = weights[0] * main
            for j, (src, proxy) in enumerate(zip(module.sources[l], module.proxies[l])):
                out = out + weights[j + 1] * proxy.project(pyramid.pooled(src, proxy.factor))
            nodes.append(torch.relu(out) if self.relu_after_sum else out)
        return nodes

    def extra_loss(self, task: int) -> torch.Tensor | None:
        if self.complexity_penalty > 0:
            return self.complexity_penalty * self.tasks[task].complexity()
        return None
