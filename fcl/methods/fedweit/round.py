"""FedWeIT's round (Yoon et al., ICML 2021; official code `wyjeong/FedWeIT`:
`models/fedweit/client.py`, `models/fedweit/server.py`, `modules/federated.py`, `config.py`),
`model.adapter=fedweit`. The layers are `fcl.methods.fedweit.layers`; the knowledge base and the sparse
byte counts are `fcl.methods.fedweit.knowledge_base`.

Round r, over the run's schedule, participation and server optimizer:
  down   every sampled client receives the server's B, dense float32. A client sampled for a task
         it has never trained starts it: its task state is the seeded initial one (every client
         builds the same, as the code's clients do; nothing is sent for it) and it receives the
         knowledge base (the server's slots, sparse) with a fresh attention vector, or none
         while the server holds no slot (its attention then stays zero and untrained).
  train  each reporting client (sampled, not straggling, holding data) trains K local epochs on
         B, m_t, A_t, alpha_t (with a knowledge base), its norms and head, with the loss
         cross-entropy + `fcl.methods.fedweit.layers.fedweit_penalty`. When it moves to a task other
         than the one it trained last, theta_i* = B sigmoid(m_i) + A_i of every other task it
         holds is taken with the B it received (the code takes its own B before receiving).
  up     B masked to the output channels `channel_mask` keeps (model.fedweit_channels), with the
         channel mask as positions; when its next round's task differs (the end of its task,
         never at the last round), also A_t thresholded at |A| > lambda_1, sparse, which fills
         the client's knowledge-base slot.
  server the pseudo-gradient of B is, per output channel, the mean over the clients that sent
         that channel of (B_c - B) (unweighted, as the code's `aggregate` divides by the count
         of senders), zero for a channel no one sent; the FedOpt step follows. FedSGD with
         eta 1 gives the code's per-channel mean; a channel no one sent keeps the server's
         value (the code's clients keep their own there, its global being zero).
  eval   every client's own model of task t (its B is the server's); task t's accuracy is the
         mean over the clients holding task t, or the initial model's while none does. BWT_f
         compares a task across a boundary on the clients that held it before (`held`, kept
         beside as `held_accuracy`): a client that starts the task at the boundary has had one
         round on it, and its low accuracy is not a drop (`fcl.metrics`;
         `model.fedweit_bwt_clients=all` compares every holder's mean instead).

Other readings, and where this departs from the code: only sampled clients train (the code's
unselected clients train on without sending); a client keeps no B of its own between rounds
(it trains from the server's); the client optimizer is a fresh Adam each round (Keras's
update: lr sqrt(1 - b2^s) / (1 - b1^s), eps 1e-7) at `client.lr`, or the other methods' SGD
(`model.fedweit_optimizer=sgd`), without the code's learning-rate cut on a validation plateau
(lr_patience 3, lr_factor 3); the code's lambda_mask is 0 and left out; the knowledge base has
one slot per client (the code: one per client selected in the task's last round, the same at
participation.fraction=1) and goes to a client when it starts a task (the code broadcasts it
at every task's first round); the paper's retroactive update of past A_i is
`model.fedweit_past=trained` (the code: frozen, the default).
Drift (Eq. 2) is measured on B, the federated part. `cos_module` is B's cosine distance to
the previous round's; `cos_head` is NaN (heads are private).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from fcl.federated.round import (
    Downlink,
    Plan,
    Report,
    RoundMethod,
    RunState,
    TaskChange,
    TaskServerState,
    Uplink,
    add_totals,
    diverged,
    holding_data,
    mean_drift,
    round_record,
)
from fcl.federated.aggregate import cosine_distance
from fcl.federated.client import local_epochs, sgd_step_
from fcl.federated.compression import float32_nbytes
from fcl.methods.fedweit.knowledge_base import (
    Slots,
    empty_slots,
    has_knowledge,
    knowledge_nbytes,
    masked_nbytes,
    sparse_nbytes,
    stacked,
    with_slot,
)
from fcl.federated.participation import participation
from fcl.federated.server_opt import OptState
from fcl.methods.fedweit.layers import anchor, channel_mask, fedweit_penalty, threshold, variance_scaling_
from fcl.methods.fedweit.keras_adam import adam
from fcl.methods.fedweit.scoring import scored
from fcl.models.task_state import Params, live_tensors, load_state_, read_state
from fcl.seeding import generator


@dataclass(frozen=True)
class ClientTasks:
    """One client's private state (never sent): per task it holds, its module's tensors; per
    task with a knowledge base, the frozen KB and the trained attention; theta_i* of its past
    tasks as of its last task switch; the task it trained last (-1: none)."""
    tasks: dict[int, Params]
    knowledge: dict[int, Params]
    attention: dict[int, Params]
    anchors: dict[int, Params]
    last: int = -1


@dataclass(frozen=True)
class FedWeITState:
    shared: Params                   # the server's B, per conv
    opt: OptState                    # the FedOpt state of B
    slots: Slots                     # per client: its latest thresholded A (None: none yet)
    clients: tuple[ClientTasks, ...]


@dataclass(frozen=True)
class Sent:
    """One client's uplink as the server decodes it."""
    shared: Params                   # B_c (the server reads only the kept channels)
    keep: dict[str, torch.Tensor]    # per conv: the channels sent (bool)
    nbytes: int


def init(plan: Plan) -> FedWeITState:
    shared = read_state(plan.model.shared, list(plan.model.shared.keys()))
    n = plan.data.num_clients
    return FedWeITState(shared, plan.server.init(shared), empty_slots(n),
                        (ClientTasks({}, {}, {}, {}),) * n)


def run_round(plan: Plan, state: RunState, r: int):
    t_start = time.perf_counter()
    cfg, fs = plan.cfg, state.method
    held_before = [set(c.tasks) for c in fs.clients]
    part = participation(r, plan.data.num_clients, cfg.participation, cfg.seed)
    tasks_of = plan.schedule[r].tolist()
    clients = list(fs.clients)
    down_bytes, kb = 0, None
    for c in part.sampled:
        down_bytes += float32_nbytes(fs.shared)
        if tasks_of[c] not in clients[c].tasks:
            if kb is None and has_knowledge(fs.slots):    # one stack a round, shared by all
                kb = stacked(fs.slots, fs.shared)         # who start a task in it
            clients[c], nbytes = start_task(plan, state, fs.slots, kb, clients[c], c,
                                            tasks_of[c])
            down_bytes += nbytes
    reporting = holding_data(plan, part.reporting, tasks_of)
    down = Downlink(part.sampled, reporting, tasks_of, {}, {}, down_bytes,
                    sum(plan.full_nbytes[tasks_of[c]] for c in part.sampled))

    reports, sent, slots, up_bytes = [], [], fs.slots, 0
    for c in reporting:
        t = tasks_of[c]
        clients[c], report, msg = train_client(plan, fs.shared, clients[c], c, t, r)
        if ends_task(plan, c, r):
            adaptives = {n: threshold(clients[c].tasks[t][f"adaptive.{n}"],
                                      cfg.model.fedweit_lambda_l1) for n in fs.shared}
            slots = with_slot(slots, c, adaptives)
            up_bytes += sum(sparse_nbytes(a) for a in adaptives.values())
        reports.append(report)
        sent.append(msg)
        up_bytes += msg.nbytes
    up = uplink(plan, state, reports, up_bytes)

    shared, opt, changes = fs.shared, fs.opt, {}
    first = list(state.first_update)
    if sent:
        shared, opt = plan.server.step(fs.shared, channel_mean(fs.shared, sent), fs.opt)
        cos = cosine_distance(shared, fs.shared)
        for t in sorted({rep.task for rep in reports}):
            changes[t] = TaskChange(sum(rep.task == t for rep in reports),
                                    torch.tensor(math.nan), cos)
            first[t] = min(first[t], r)
    fs = FedWeITState(shared, opt, slots, tuple(clients))
    totals = add_totals(state.totals, down, up)
    if totals.diverged_round < 0 and diverged(up, [TaskServerState(shared, {}, opt)] if sent
                                              else [], cfg.run.divergence_loss):
        totals = replace(totals, diverged_round=r)
    state = replace(state, next_round=r + 1, first_update=tuple(first), totals=totals, method=fs)
    if r in plan.due:
        state = scored(plan, state, r, held_before)
    load_state_(plan.model.shared, shared)        # the model mirrors the server's B
    return state, round_record(plan, state, down, up, changes, r, t_start)


def uplink(plan: Plan, state: RunState, reports: list[Report], nbytes: int):
    return Uplink(tuple(reports), nbytes, sum(plan.full_nbytes[rep.task] for rep in reports),
                  sum(rep.weight for rep in reports) * plan.cfg.client.local_epochs,
                  mean_drift(plan, reports), state.algorithm)


def ends_task(plan: Plan, client: int, r: int) -> bool:
    """Whether round r is the client's last round of its task (a different one follows)."""
    schedule = plan.schedule
    return r + 1 < plan.cfg.rounds and bool(schedule[r + 1, client] != schedule[r, client])


def start_task(plan: Plan, state: RunState, slots: Slots, kb: Params | None, own: ClientTasks,
               client: int, task: int) -> tuple[ClientTasks, int]:
    """The client's state for a task it starts, and the bytes of the knowledge base sent
    (`kb`: the slots stacked, None while all are empty)."""
    ts = state.tasks[task]
    initial = {**ts.params, **ts.buffers}     # shared, never written in place
    if kb is None:
        return replace(own, tasks={**own.tasks, task: initial}), 0
    g = generator(plan.cfg.seed, "fedweit_attention", client, task)
    alpha = {n: variance_scaling_(torch.empty(len(slots)), g).to(kb[n].device) for n in kb}
    return replace(own, tasks={**own.tasks, task: initial},
                   knowledge={**own.knowledge, task: kb},
                   attention={**own.attention, task: alpha}), knowledge_nbytes(slots)


def channel_mean(server: Params, sent: list[Sent]) -> Params:
    """Per conv and output channel: the mean of B_c - B over the clients that sent it (0 for a
    channel nobody sent)."""
    grad = {}
    for n, b in server.items():
        shape = (-1,) + (1,) * (b.dim() - 1)
        total = torch.zeros_like(b)
        count = torch.zeros(b.shape[0], device=b.device)
        for msg in sent:
            keep = msg.keep[n].to(b.dtype)
            total += keep.view(shape) * (msg.shared[n] - b)
            count += keep
        grad[n] = total / count.clamp_min(1).view(shape)
    return grad


def train_client(plan: Plan, shared: Params, own: ClientTasks, client: int, task: int, r: int
                 ) -> tuple[ClientTasks, Report, Sent]:
    """K local epochs of FedWeIT's client on `task` from the server's B."""
    model, cfg, mcfg = plan.model, plan.cfg.client, plan.cfg.model
    names = plan.names[task]
    anchors, alpha = load_client(plan, shared, own, task)
    module = model.tasks[task]
    base = [model.shared[n] for n in shared]
    params = base + live_tensors(module, names.trainable) + list(alpha.values())
    if mcfg.fedweit_past == "trained":      # the paper: past A_i move under the term too
        params += [model.tasks[i].adaptive[n] for i in anchors for n in shared]
    start = [p.detach().clone() for p in base]
    adam_step = adam() if mcfg.fedweit_optimizer == "adam" else None
    momentum: list[torch.Tensor] = []
    shard = plan.data.tasks[task].shards[client]

    def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with plan.trainer.forward():
            ce = F.cross_entropy(model(x, task), y)
        return ce + fedweit_penalty(model, task, anchors, mcfg.fedweit_weight_decay,
                                    mcfg.fedweit_lambda_l1, mcfg.fedweit_lambda_l2)

    def step(params: list[torch.Tensor], grads: list[torch.Tensor]) -> None:
        if adam_step is not None:
            adam_step(params, grads, cfg.lr)
        else:
            sgd_step_(params, grads, momentum, cfg)

    model.train()
    drift, mean_loss = local_epochs(plan.data, task, shard, cfg,
                                    generator(plan.cfg.seed, "batches", r, client), loss,
                                    params, step, moving=base, start=start, fill_unused=True)
    tasks = {**own.tasks, task: read_state(module, names.trainable + names.buffers)}
    if mcfg.fedweit_past == "trained":
        for i in anchors:
            tasks[i] = {**tasks[i], **{f"adaptive.{n}": model.tasks[i].adaptive[n].detach()
                                       .clone() for n in shared}}
    attention = {**own.attention, task: {n: a.detach() for n, a in alpha.items()}} if alpha \
        else own.attention
    b_c = read_state(model.shared, list(shared))
    keep = {n: channel_mask(tasks[task][f"masks.{n}"], mcfg.fedweit_sparsity,
                            mcfg.fedweit_channels) for n in shared}
    nbytes = sum(masked_nbytes(b_c[n], keep[n]) for n in shared)
    own = ClientTasks(tasks, own.knowledge, attention, anchors, task)
    report = Report(client, task, {}, len(shard), {}, drift, mean_loss)
    return own, report, Sent(b_c, keep, nbytes)


def load_client(plan: Plan, shared: Params, own: ClientTasks, task: int
                ) -> tuple[dict, dict[str, torch.Tensor]]:
    """The model set to the client's view for training `task` on the server's B: its task
    states and knowledge base loaded; returns the anchors of its other tasks (theta_i*,
    taken again at a task switch) and its attention on `task` as trainable tensors."""
    model = plan.model
    load_state_(model.shared, shared)
    for i, tensors in own.tasks.items():
        load_state_(model.tasks[i], tensors)
    anchors = own.anchors
    if own.last != task:                  # a task switch: theta_i* of every other task
        anchors = {i: anchor(model, i) for i in own.tasks if i != task}
    alpha = {n: a.clone().requires_grad_(True) for n, a in own.attention.get(task, {}).items()}
    model.set_knowledge(task, own.knowledge.get(task), alpha or None)
    for i in own.tasks:
        if i != task:
            model.set_knowledge(i, None, None)     # past kernels: B sigmoid(m) + A only
    return anchors, alpha


METHOD = RoundMethod(init, run_round)
