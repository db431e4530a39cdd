"""ACC and BWT_f on hand-made accuracy matrices."""
import math

import pytest
import torch

from fcl.metrics import acc, bwt_f, bwt_f_literal, eval_rounds


def test_acc_is_mean_of_last_column():
    A = torch.tensor([[10.0, 50.0], [20.0, 70.0]])
    assert acc(A) == 60.0


def test_bwt_f_on_a_matrix_worked_by_hand():
    # T = 3 tasks, Q = 2, R = 6: boundaries at rounds 2 and 4 (0-based), terms A[:,2]-A[:,1]
    # and A[:,4]-A[:,3].
    A = torch.tensor([
        # r: 0    1    2    3    4    5
        [50., 80., 70., 75., 60., 65.],   # task 0: trained from round 0; drops -10, -15
        [50., 50., 80., 85., 84., 86.],   # task 1: first trained at round 2; +30 (first), -1
        [50., 50., 50., 50., 90., 92.],   # task 2: first trained at round 4; 0, +40 (first)
    ])
    first = [0, 2, 4]
    # seen before boundary 2: task 0 only -> -10; before boundary 4: tasks 0, 1 -> -15 - 1
    assert bwt_f(A, 2, first) == pytest.approx((-10 - 15 - 1) / 9)
    # literal: every task at every boundary: (-10 + 30 + 0) + (-15 - 1 + 40) = 44
    assert bwt_f_literal(A, 2) == pytest.approx(44 / 9)


def test_bwt_f_never_trained_task_is_excluded():
    A = torch.tensor([[50., 60., 40., 45.], [50., 50., 55., 50.]])
    assert bwt_f(A, 2, [0, math.inf]) == pytest.approx(-20 / 4)


def test_eval_rounds_include_both_sides_of_every_boundary_and_last():
    due = eval_rounds(rounds=20, q=5, every=7)
    assert {4, 5, 9, 10, 14, 15, 19} <= set(due)
    assert 6 in due and 13 in due                   # every 7th round (1-based 7, 14)
    assert 0 not in due and 2 not in due
    assert eval_rounds(10, 2, 1) == list(range(10))
