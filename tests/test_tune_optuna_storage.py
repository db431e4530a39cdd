"""A search's Optuna storage other than the default SQLite (`--optuna-storage`,
`fcl.tune.searchers`): a journal file that several drivers share. A real small search on one,
read back, resumed and joined by a second driver; two processes asking and telling on one
journal at once, no trial lost; the searcher's pickled state reopening the journal; the
one-line errors, before Ray starts."""
import io
import json
import os
import pickle
import runpy
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("ray")
optuna = pytest.importorskip("optuna")

from ray import tune  # noqa: E402
from ray.tune.search import ConcurrencyLimiter  # noqa: E402
from ray.tune.search.search_generator import SearchGenerator  # noqa: E402

from fcl.config import ConfigError  # noqa: E402
from fcl.manifest import read_manifest  # noqa: E402
from fcl.tune import Study, StudyOptions, grid, run_study  # noqa: E402
from fcl.tune.cli import run_study_cli  # noqa: E402
from fcl.tune.optuna_storage import open_storage, optuna_study_name  # noqa: E402
from fcl.tune.searchers import TRIAL_NUMBER, TUNE_TRIAL_ID, optuna_searcher  # noqa: E402

State = optuna.trial.TrialState
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPACE = {"client.lr": tune.loguniform(0.01, 0.1)}
DONE = {"done": True, "finished": True}
# the smoke study at its cheapest (tests/test_tune.py's SMALL): Tune's mechanics, no learning
SMALL = {"model.weights": "", "model.width": "8", "rounds": "5", "data.test_per_class": "10"}


def journal(tmp_path) -> str:
    return f"journal://{tmp_path}/shared/optuna.journal"


def trials_in(url: str, name: str) -> list:
    """The study's trials as another process (optuna-dashboard, a second driver) reads them."""
    return optuna.load_study(study_name=name, storage=open_storage(url)).trials


# ---- a real search on a journal, then --resume ------------------------------------------------

def test_a_search_on_a_journal_lands_its_trials_there_resume_reopens_it_another_joins(
        local_ray, tmp_path):
    url, results = journal(tmp_path), tmp_path / "results"
    study = Study("search", SPACE, searcher="optuna")
    out = io.StringIO()
    outcome = run_study(study, StudyOptions(preset="smoke", sets=SMALL, num_samples=2,
                                            results=str(results), optuna_storage=url), out)
    assert (outcome.trials, outcome.finished, outcome.failed) == (2, 2, 0)
    assert f"optuna: optuna-dashboard {tmp_path}/shared/optuna.journal" in out.getvalue()
    done = trials_in(url, "search-acc")
    assert [t.state for t in done] == [State.COMPLETE] * 2
    rows = outcome.frames["trials"].set_index("optuna_trial")
    for t in done:
        assert t.value == pytest.approx(rows.loc[t.number, "acc"])
        assert t.params["client.lr"] == rows.loc[t.number, "client.lr"]
    assert not (results / "optuna.db").exists()              # the default SQLite is untouched
    assert read_manifest(results / "search").optuna_storage == url

    # --resume without the flag: the storage the study's Tune state records, the same study
    out = io.StringIO()
    again = run_study(study, StudyOptions(preset="smoke", sets=SMALL, num_samples=2,
                                          results=str(results), resume=True), out)
    assert (again.trials, again.finished) == (2, 2)
    assert f"optuna: optuna-dashboard {tmp_path}/shared/optuna.journal" in out.getvalue()
    assert [(t.number, t.state, t.value) for t in trials_in(url, "search-acc")] == \
        [(t.number, t.state, t.value) for t in done]
    assert not (results / "optuna.db").exists()
    assert read_manifest(results / "search").optuna_storage == url

    # a second driver (its own results, no Tune state) joins the search with --resume
    other = run_study(study, StudyOptions(preset="smoke", sets=SMALL, num_samples=2,
                                          results=str(tmp_path / "other"), resume=True,
                                          optuna_storage=url), io.StringIO())
    assert (other.trials, other.finished) == (2, 2)
    joined = trials_in(url, "search-acc")
    assert [(t.number, t.state) for t in joined] == [(n, State.COMPLETE) for n in range(4)]
    assert sorted(other.frames["trials"]["optuna_trial"]) == [2, 3]
    assert not (tmp_path / "other" / "optuna.db").exists()

    # --resume naming another storage: one line, nothing run
    with pytest.raises(ConfigError, match=r"--optuna-storage=sqlite:///.*: study search was "
                                        r"started on journal://.*; allowed: "):
        run_study(study, StudyOptions(preset="smoke", sets=SMALL, num_samples=2,
                                      results=str(results), resume=True,
                                      optuna_storage=f"sqlite:///{tmp_path}/other.db"))
    assert not (tmp_path / "other.db").exists()


# ---- two processes on one journal at once -----------------------------------------------------

ASK_AND_TELL = textwrap.dedent("""
    import pathlib, sys, time
    from ray import tune
    from fcl.tune.searchers import optuna_searcher
    me, peer, url, n, root = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    searcher = optuna_searcher("shared", "acc", root, int(me[1:]),  1,
                               {"client.lr": tune.loguniform(0.01, 0.1)}, url).searcher
    pathlib.Path(root, me + ".ready").touch()
    deadline = time.monotonic() + 120          # both start asking together, or the test fails
    while not pathlib.Path(root, peer + ".ready").exists():
        if time.monotonic() > deadline:
            sys.exit(f"{peer} never got ready")
        time.sleep(0.01)
    for i in range(n):
        tid = f"{me}_{i:05d}"
        config = searcher.suggest(tid)
        searcher.on_trial_complete(tid, {"acc": config["client.lr"], "round": 1,
                                         "done": True, "finished": True})
""")


def test_two_processes_asking_and_telling_on_one_journal_lose_no_trial(tmp_path):
    """Two drivers' searchers (fcl's, on one journal file, one Optuna study) each ask for and
    tell N trials at the same time: the journal ends with exactly 2N, numbered 0..2N-1, each
    COMPLETE with the value its process told."""
    url, n = journal(tmp_path), 20
    (tmp_path / "shared").mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", ASK_AND_TELL, me, peer, url, str(n),
                               str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
             for me, peer in (("p0", "p1"), ("p1", "p0"))]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
    trials = trials_in(url, optuna_study_name("shared", "acc"))
    assert len(trials) == 2 * n
    assert sorted(t.number for t in trials) == list(range(2 * n))
    assert sorted(t.user_attrs[TUNE_TRIAL_ID] for t in trials) == \
        sorted(f"p{k}_{i:05d}" for k in (0, 1) for i in range(n))
    assert all(t.state == State.COMPLETE and t.value == t.params["client.lr"] for t in trials)


# ---- the searcher's pickled state on a journal ------------------------------------------------

def test_a_pickled_journal_searcher_carries_no_storage_and_continues_the_study(tmp_path):
    url = journal(tmp_path)
    os.makedirs(tmp_path / "shared")
    s = optuna_searcher("s", "acc", str(tmp_path), 0, 2, SPACE, url).searcher
    s.suggest("t0")
    s.on_trial_result("t0", {"acc": 40.0, "round": 1})
    blob = pickle.dumps(ConcurrencyLimiter(s, max_concurrent=2))     # Tune pickles the wrapper
    assert b"JournalStorage" not in blob and b"t0" not in blob        # only how to reopen it
    copy = pickle.loads(blob).searcher
    copy.on_trial_result("t0", {"acc": 40.0, "round": 1})             # replayed: once
    copy.on_trial_complete("t0", {"acc": 50.0, "round": 2, **DONE})
    # Tune's snapshot and a searcher built again on --resume (restore_from_dir)
    gen = SearchGenerator(ConcurrencyLimiter(copy, max_concurrent=2))
    gen.searcher.suggest("t1")
    gen.save_to_dir(str(tmp_path), session_str="s")
    again = SearchGenerator(optuna_searcher("s", "acc", str(tmp_path), 0, 2, SPACE, url))
    again.restore_from_dir(str(tmp_path))
    again.searcher.on_trial_complete("t1", {"acc": 60.0, "round": 2, **DONE})
    assert again.searcher.suggest("t2")[TRIAL_NUMBER] == 2
    t0, t1, t2 = trials_in(url, "s-acc")
    assert (t0.state, t0.value, t0.intermediate_values) == (State.COMPLETE, 50.0, {1: 40.0})
    assert (t1.state, t1.value, t2.state) == (State.COMPLETE, 60.0, State.RUNNING)


# ---- one line, exit 2, before Ray ------------------------------------------------------------

def search_study():
    return runpy.run_path(os.path.join(REPO, "studies", "search.py"))["STUDY"]


@pytest.mark.parametrize("value, says", [
    ("redis://host:6379", "--optuna-storage=redis://host:6379: unknown scheme redis://; "
                          "allowed: sqlite:///PATH, postgresql://"),
    ("/shared/optuna.journal", "--optuna-storage=/shared/optuna.journal: not a storage URL; "
                               "allowed: "),
    ("postgresql://fcl:secret@db/fcl", "--optuna-storage=postgresql://fcl:***@db/fcl: holds "
                                       "a password"),
    ("sqlite://", "--optuna-storage=sqlite://: an in-memory database outlives no driver"),
    ("journal://", "--optuna-storage=journal://: a journal URL names a file"),
])
def test_a_bad_storage_url_is_one_line_before_anything_is_written(tmp_path, capsys, value, says):
    results = tmp_path / "results"
    code = run_study_cli(search_study(), ["--preset", "smoke", "--results", str(results),
                                          "--optuna-storage", value])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: " + says), err
    assert "secret" not in err and not results.exists()


def test_an_unwritable_journal_is_one_line_before_ray_starts(tmp_path, capsys, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("planned the study or started Ray before checking the journal")
    monkeypatch.setattr("fcl.tune.run.plan_study", never)
    monkeypatch.setattr("fcl.tune.cluster.connect", never)
    (tmp_path / "a-file").write_text("not a folder")
    (tmp_path / "a-folder").mkdir()
    for url, says in ((f"journal://{tmp_path}/a-file/optuna.journal", "cannot write there"),
                      (f"journal://{tmp_path}/a-folder", "is a folder, not a file")):
        code = run_study_cli(search_study(), ["--preset", "smoke", "--results",
                                              str(tmp_path / "results"), "--optuna-storage", url])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"error: --optuna-storage={url}: {says}"), err
    assert not (tmp_path / "results" / "optuna.db").exists()
    assert not (tmp_path / "results" / ".tune").exists()


def test_a_grid_has_no_optuna_storage_and_its_cli_no_flag(tmp_path, capsys):
    with pytest.raises(ConfigError, match="study g is a grid; only a search keeps an Optuna study"):
        run_study(Study("g", {"client.lr": grid(0.1)}),
                  StudyOptions(preset="smoke", results=str(tmp_path),
                               optuna_storage=journal(tmp_path)))
    with pytest.raises(SystemExit) as stop:          # argparse's own refusal, one line
        run_study_cli(Study("g", {"client.lr": grid(0.1)}),
                      ["--preset", "smoke", "--results", str(tmp_path), "--optuna-storage",
                       journal(tmp_path)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert err.startswith("error: unrecognized arguments: --optuna-storage")


def test_the_manifest_of_a_study_run_before_the_field_reads_as_default(tmp_path):
    from fcl.manifest import Manifest
    record = json.loads(Manifest("s", "smoke", "cifar10", {}).to_json())
    del record["optuna_storage"]
    assert Manifest.from_dict(record).optuna_storage is None


def test_the_default_storage_is_not_recorded_as_a_machine_path(tmp_path):
    """A search on RESULTS/optuna.db records null: a stored study.json names no absolute path;
    a storage given by the flag is recorded as given."""
    from fcl.tune.plan import plan_study
    from fcl.tune.optuna_storage import storage_url
    from fcl.tune.study import StudyOptions
    results = str(tmp_path / "r")
    default = plan_study(search_study(), StudyOptions(preset="smoke", results=results,
                                                      optuna_storage=storage_url(results)))
    given = plan_study(search_study(), StudyOptions(preset="smoke", results=results,
                                                    optuna_storage=journal(tmp_path)))
    assert default.manifest().optuna_storage is None
    assert given.manifest().optuna_storage == journal(tmp_path)
