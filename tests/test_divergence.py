"""A run whose loss or server state blows up is flagged (`diverged`, `diverged_round`), warned
about, and never picked as a study's best; it still runs to its end and exits 0."""
import pandas as pd

import fcl
from fcl.cli import main
from fcl.tune.export import summary_line
from fcl.tune.progress import best_line

TINY = {"rounds": 3, "data.num_tasks": 3, "data.train_per_class": 20, "data.test_per_class": 10,
        "model.width": 8, "run.threads": 1}


def test_a_huge_server_lr_is_flagged_with_its_round():
    s = fcl.run("smoke", {**TINY, "server.lr": 1e6}).summary
    assert s.diverged and 0 <= s.diverged_round < 3


def test_a_huge_client_lr_is_flagged():
    assert fcl.run("smoke", {**TINY, "client.lr": 1e4}).summary.diverged


def test_an_ordinary_run_is_not_flagged():
    s = fcl.run("smoke", TINY).summary
    assert not s.diverged and s.diverged_round == -1


def test_the_cli_warns_in_one_line_and_exits_0(capsys):
    sets = [f"{k}={v}" for k, v in {**TINY, "server.lr": 1e6}.items()]
    assert main(["run", "--preset", "smoke", "--quiet", "--set", *sets]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: the run diverged at round ")
    assert "run.divergence_loss=1000 " in err


def test_a_study_never_calls_a_diverged_trial_best():
    df = pd.DataFrame({"status": ["TERMINATED"] * 3, "server.lr": [0.1, 1.0, 1e6],
                       "acc": [60.0, 70.0, 90.0], "diverged": [False, False, True],
                       "wall_s": [1.0, 1.0, 1.0]})
    assert "the highest ACC, 70.0%: server.lr=1 " in best_line(df, ["server.lr"])
    assert summary_line(df).startswith(
        "3 trials finished (1 diverged), 0 failed; highest trial ACC 70.00%")
    stored = df.drop(columns="diverged")              # results stored before the flag
    assert "the highest ACC, 90.0%: server.lr=1e+06 " in best_line(stored, ["server.lr"])


def test_the_bound_is_a_key_and_the_json_says_it(capsys):
    """run.divergence_loss is the bound; 0 turns it off, leaving only a loss or server state
    that is not finite flagged."""
    import json
    sets = [f"{k}={v}" for k, v in {**TINY, "server.lr": 1e6}.items()]
    assert main(["run", "--preset", "smoke", "--json", "--set", *sets]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["diverged"] is True and 0 <= row["diverged_round"] < 3
    assert row["config"]["run.divergence_loss"] == 1e3
    s = fcl.run("smoke", {**TINY, "server.lr": 1e6, "run.divergence_loss": 0}).summary
    assert not s.diverged and s.diverged_round == -1   # its loss (~1e6) and state stay finite
