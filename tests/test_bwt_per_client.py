"""BWT_f where each client keeps its own task model (FedWeIT): a task's term across a phase
boundary compares the clients that held it before the boundary, not the mean over holders that
grows by clients just starting it (`fcl.metrics`, `model.fedweit_bwt_clients`). Hand-built
per-client accuracy tables first, then FedWeIT runs in the asynchronous order."""
import math

import numpy as np
import torch

from fcl.engine import run
from fcl.methods.fedweit.scoring import held_mean, holders_mean
from fcl.forgetting import boundary_changes
from fcl.metrics import bwt_f
from fcl.presets import preset

NAN = math.nan


def test_a_client_starting_a_task_is_no_drop_of_the_clients_that_held_it():
    """T = 2, N = 2, Q = 2, R = 4, asynchronous: client 0 trains task 0 then task 1, client 1
    task 1 then task 0. Client 0 keeps task 0 at 80 across the boundary; client 1 starts task 0
    at round 2 and scores 30 after its first round on it."""
    # per_client[t, c] after round 2; client 1 held only task 1 before it, client 0 task 0
    after_2 = torch.tensor([[80.0, 30.0], [40.0, 70.0]], dtype=torch.float64)
    held_before = [{0}, {1}]
    initial = torch.full((2,), NAN, dtype=torch.float64)
    assert holders_mean(after_2, initial).tolist() == [55.0, 55.0]
    assert held_mean(after_2, held_before).tolist() == [80.0, 70.0]

    A = torch.tensor([[20.0, 80.0, 55.0, 60.0],        # task 0: every holder's mean
                      [30.0, 70.0, 55.0, 62.0]], dtype=torch.float64)
    held = torch.full_like(A, NAN)
    held[:, 2] = held_mean(after_2, held_before)
    first = [0.0, 0.0]
    # every holder: (55 - 80) + (55 - 70) over T^2 = 4, a drop no client suffered
    assert bwt_f(A, 2, first) == -10.0
    # the clients that held each task: 80 - 80 and 70 - 70
    assert bwt_f(A, 2, first, held) == 0.0
    assert boundary_changes(A.numpy(), 2, first, held.numpy()).tolist() == [0.0, 0.0]


def test_a_drop_on_the_clients_that_held_the_task_is_counted():
    """Client 0's task 0 falls from 80 to 50 when client 1 starts it (the shared B moved):
    that is the FCL paper's drop, and it is counted whether or not client 1 is averaged in."""
    after_2 = torch.tensor([[50.0, 30.0], [NAN, 70.0]], dtype=torch.float64)
    held_before = [{0}, {1}]
    held = held_mean(after_2, held_before)
    assert held.tolist() == [50.0, 70.0]
    A = torch.tensor([[20.0, 80.0, 40.0, 41.0], [30.0, 70.0, 70.0, 71.0]], dtype=torch.float64)
    H = torch.full_like(A, NAN)
    H[:, 2] = held
    assert bwt_f(A, 2, [0.0, 0.0], H) == (50.0 - 80.0) / 4


def test_a_task_no_client_held_before_the_boundary_is_left_out():
    """A held column NaN (no client held the task) drops that term, as a task never updated."""
    after = torch.tensor([[NAN, 30.0]], dtype=torch.float64)
    assert math.isnan(float(held_mean(after, [set(), set()])[0]))
    A = torch.tensor([[10.0, 10.0, 30.0, 35.0]], dtype=torch.float64)
    H = torch.tensor([[NAN, NAN, NAN, NAN]], dtype=torch.float64)
    assert bwt_f(A, 2, [0.0], H) == 0.0
    # the global-model reading is unchanged: no held matrix, every seen term counts
    assert bwt_f(A, 2, [0.0]) == 20.0


def test_every_holders_mean_falls_back_to_the_initial_model_where_none_holds_a_task():
    per_client = torch.tensor([[NAN, NAN], [60.0, NAN]], dtype=torch.float64)
    initial = torch.tensor([12.0, NAN], dtype=torch.float64)
    assert holders_mean(per_client, initial).tolist() == [12.0, 60.0]


# asynchronous order, 2 tasks of 5 classes, 2 clients, R = 4 (Q = 2): at round 2 each client
# starts the task the other one finished
ASYNC = {"model.adapter": "fedweit", "rounds": 4, "data.num_tasks": 2, "data.num_clients": 2,
         "data.train_per_class": 40, "data.test_per_class": 20, "client.local_epochs": 1,
         "model.width": 8, "schedule.order": "async", "client.lr": 3e-3, "run.threads": 1}


def test_fedweit_in_the_async_order_scores_a_boundary_on_the_clients_that_held_the_task():
    held = run(preset("smoke", ASYNC))
    every = run(preset("smoke", {**ASYNC, "model.fedweit_bwt_clients": "all"}))
    # the training is the same: only the scoring of the boundary terms differs
    assert torch.equal(held.accuracy, every.accuracy)
    rows = {(t.round, t.task): t for t in held.task_records}
    A = held.accuracy
    # round 2: each task is held by both clients, one of which has just started it
    H = torch.full_like(A, NAN)
    for (r, t), rec in rows.items():
        H[t, r] = rec.accuracy_held
    assert not math.isnan(H[0, 2]) and H[0, 2] != A[0, 2]
    first = [0.0, 0.0]
    assert held.summary.bwt_f == bwt_f(A, 2, first, H)
    assert every.summary.bwt_f == bwt_f(A, 2, first)
    assert held.summary.bwt_f != every.summary.bwt_f
    # with `all`, the held column is every holder's mean
    for t in every.task_records:
        if not math.isnan(t.accuracy):
            assert t.accuracy_held == t.accuracy


def test_a_global_model_stores_no_held_accuracy():
    res = run(preset("smoke", {"rounds": 2, "data.num_tasks": 2, "data.num_clients": 2,
                               "data.train_per_class": 20, "data.test_per_class": 10,
                               "run.threads": 1}))
    assert all(np.isnan(t.accuracy_held) for t in res.task_records)
