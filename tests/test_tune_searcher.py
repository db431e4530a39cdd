"""The Optuna searcher (`fcl.tune.searchers`) driven by hand through Tune's callbacks, against a
temporary SQLite storage and no Ray cluster: the states and intermediate values it leaves there,
its pickling, and Tune's save/restore continuing the same study."""
import pickle

import pytest

pytest.importorskip("ray")
optuna = pytest.importorskip("optuna")

from ray import tune
from ray.tune.search import ConcurrencyLimiter
from ray.tune.search.search_generator import SearchGenerator

from fcl.tune.searchers import (
    TRIAL_NUMBER,
    TUNE_TRIAL_ID,
    DefineByRun,
    FclOptunaSearch,
    optuna_searcher,
)
from fcl.tune.optuna_storage import optuna_study_name, storage_url
from fcl.tune.space import given

State = optuna.trial.TrialState
SPACE = {"client.lr": tune.loguniform(0.01, 0.1),
         "model.adapter": tune.choice(["nettailor", "lora"]),
         "model.lora_rank": given("model.adapter", "lora", tune.choice([4, 8])),
         "data.partition": "dirichlet"}
DONE = {"done": True, "finished": True}          # a trial's last report when it ran all rounds


def sqlite_searcher(tmp_path, objective: str = "acc", seed: int = 0) -> FclOptunaSearch:
    """The searcher `optuna_searcher` builds, unwrapped from its ConcurrencyLimiter."""
    return optuna_searcher("s", objective, str(tmp_path), seed, 2, SPACE).searcher


def stored(tmp_path, objective: str = "acc") -> list:
    """The study's trials as another process (optuna-dashboard, the export) reads them."""
    return optuna.load_study(study_name=optuna_study_name("s", objective),
                             storage=storage_url(str(tmp_path))).trials


def test_callbacks_leave_complete_pruned_and_failed_trials_in_the_storage(tmp_path):
    s = sqlite_searcher(tmp_path)
    configs = {tid: s.suggest(tid) for tid in ("done", "stopped", "failed")}
    for tid in ("done", "stopped"):
        s.on_trial_result(tid, {"acc": float("nan"), "round": 0})    # not evaluated yet
        s.on_trial_result(tid, {"acc": 40.0, "round": 1})
        s.on_trial_result(tid, {"acc": 41.0, "round": 1})            # replayed after a resume
    s.on_trial_result("done", {"acc": 45.0, "round": 2})
    s.on_trial_complete("done", {"acc": 55.0, "round": 4, **DONE})
    s.on_trial_complete("stopped", {"acc": 44.0, "round": 2, "done": True})   # ASHA's stop
    s.on_trial_complete("failed", {"acc": 30.0, "round": 1}, error=True)
    s.on_trial_complete("done", {"acc": 99.0, "round": 4, **DONE})   # a second word: ignored
    s.on_trial_result("done", {"acc": 99.0, "round": 5})
    done, stopped, failed = stored(tmp_path)
    assert (done.state, done.value, done.intermediate_values) == (State.COMPLETE, 55.0,
                                                                  {1: 40.0, 2: 45.0})
    assert (stopped.state, stopped.intermediate_values) == (State.PRUNED, {1: 40.0, 2: 44.0})
    assert (failed.state, failed.value, failed.intermediate_values) == (State.FAIL, None, {})
    assert [t.user_attrs[TUNE_TRIAL_ID] for t in (done, stopped, failed)] == list(configs)
    assert [c[TRIAL_NUMBER] for c in configs.values()] == [0, 1, 2]


def test_a_finished_trial_without_its_metric_fails_and_a_forgotten_one_is_pruned(tmp_path):
    s = sqlite_searcher(tmp_path)
    for tid in ("no_acc", "pending", "running"):
        s.suggest(tid)
    s.on_trial_complete("no_acc", {"round": 4, **DONE})
    s.on_trial_complete("pending")               # Tune's stop of a PENDING trial: no result
    s.on_trial_complete("not_ours", {"acc": 1.0, **DONE})
    states = [t.state for t in stored(tmp_path)]
    assert states == [State.FAIL, State.PRUNED, State.RUNNING]


def test_pareto_trials_complete_with_both_values_and_keep_no_intermediate_values(tmp_path):
    s = sqlite_searcher(tmp_path, "pareto")
    assert (s.metric, s.mode) == (["acc", "bytes"], ["max", "min"])
    s.suggest("a"), s.suggest("b")
    for tid in ("a", "b"):
        s.on_trial_result(tid, {"acc": 40.0, "bytes": 1e6, "round": 1})
    s.on_trial_complete("a", {"acc": 55.0, "bytes": 2e6, "round": 2, **DONE})
    s.on_trial_complete("b", {"acc": 41.0, "bytes": 1e6, "round": 1, "done": True})
    a, b = stored(tmp_path, "pareto")
    assert (a.state, a.values, a.intermediate_values) == (State.COMPLETE, [55.0, 2e6], {})
    assert (b.state, b.intermediate_values) == (State.PRUNED, {})
    directions = optuna.load_study(study_name="s-pareto",
                                   storage=storage_url(str(tmp_path))).directions
    assert directions == [optuna.study.StudyDirection.MAXIMIZE,
                          optuna.study.StudyDirection.MINIMIZE]


def test_the_config_holds_sampled_keys_constants_and_the_trial_number_only(tmp_path):
    s = sqlite_searcher(tmp_path)
    configs = [s.suggest(f"t{i}") for i in range(12)]
    assert {c["model.adapter"] for c in configs} == {"nettailor", "lora"}
    for number, (c, t) in enumerate(zip(configs, stored(tmp_path))):
        assert c == {**t.params, "data.partition": "dirichlet", TRIAL_NUMBER: number}
        assert ("model.lora_rank" in c) == (c["model.adapter"] == "lora")


def test_same_seed_same_suggestions_other_seed_other_suggestions():
    def draws(seed: int) -> list:
        s = FclOptunaSearch(DefineByRun(SPACE), metric="acc", mode="max", seed=seed)
        return [s.suggest(f"t{i}")["client.lr"] for i in range(5)]
    assert draws(0) == draws(0) and draws(0) != draws(1)


def test_a_pickled_searcher_carries_no_study_and_continues_it_from_the_storage(tmp_path):
    s = sqlite_searcher(tmp_path)
    s.suggest("t0")
    s.on_trial_result("t0", {"acc": 40.0, "round": 1})
    blob = pickle.dumps(ConcurrencyLimiter(s, max_concurrent=2))     # Tune pickles the wrapper
    assert b"sqlalchemy" not in blob and b"t0" not in blob            # only how to reopen it
    copy = pickle.loads(blob).searcher
    copy.on_trial_result("t0", {"acc": 40.0, "round": 1})             # replayed: once
    copy.on_trial_result("t0", {"acc": 50.0, "round": 2})
    copy.on_trial_complete("t0", {"acc": 50.0, "round": 2, **DONE})
    assert copy.suggest("t1")[TRIAL_NUMBER] == 1
    t0, t1 = stored(tmp_path)
    assert (t0.state, t0.value, t0.intermediate_values) == (State.COMPLETE, 50.0,
                                                            {1: 40.0, 2: 50.0})
    assert t1.state == State.RUNNING


def test_an_in_memory_searcher_pickles_with_its_study():
    s = FclOptunaSearch(DefineByRun(SPACE), metric="acc", mode="max", seed=0)
    s.suggest("t0")
    copy = pickle.loads(pickle.dumps(s))
    copy.on_trial_complete("t0", {"acc": 50.0, "round": 2, **DONE})
    assert [(t.number, t.state) for t in copy.study.trials] == [(0, State.COMPLETE)]


def test_tunes_save_and_restore_continue_the_same_study(tmp_path):
    """What Tune does at a snapshot (SearchGenerator.save_to_dir) and on --resume (a searcher
    built again, restore_from_dir): trial numbers keep counting, no trial is asked twice."""
    first = SearchGenerator(optuna_searcher("s", "acc", str(tmp_path), 0, 2, SPACE))
    limiter = first.searcher
    limiter.suggest("t0"), limiter.suggest("t1")
    limiter.on_trial_complete("t0", {"acc": 50.0, "round": 2, **DONE})
    limiter.on_trial_result("t1", {"acc": 30.0, "round": 1})
    first.save_to_dir(str(tmp_path), session_str="s")
    again = SearchGenerator(optuna_searcher("s", "acc", str(tmp_path), 0, 2, SPACE))
    again.restore_from_dir(str(tmp_path))
    limiter = again.searcher
    assert limiter.live_trials == {"t1"}
    limiter.on_trial_result("t1", {"acc": 30.0, "round": 1})            # the resumed trial
    limiter.on_trial_result("t1", {"acc": 35.0, "round": 2})
    limiter.on_trial_complete("t1", {"acc": 35.0, "round": 2, **DONE})
    numbers = [limiter.suggest(f"t{i}")[TRIAL_NUMBER] for i in (2, 3)]
    trials = stored(tmp_path)
    assert numbers == [2, 3] and [t.number for t in trials] == [0, 1, 2, 3]
    assert [t.user_attrs[TUNE_TRIAL_ID] for t in trials] == ["t0", "t1", "t2", "t3"]
    assert [t.state for t in trials] == [State.COMPLETE, State.COMPLETE, State.RUNNING,
                                         State.RUNNING]
    assert trials[1].intermediate_values == {1: 30.0, 2: 35.0}


def test_tunes_param_space_is_refused_the_define_by_run_space_is_the_searchers(tmp_path):
    s = sqlite_searcher(tmp_path)
    assert s.set_search_properties("acc", "max", {}) is True
    assert s.set_search_properties("acc", "max", {"client.lr": tune.uniform(0, 1)}) is False


def test_an_error_in_the_space_fails_the_asked_trial_instead_of_leaving_it_running(tmp_path):
    s = FclOptunaSearch(DefineByRun({"x": tune.sample_from(lambda _: 1)}), metric="acc",
                        mode="max", seed=0, storage=storage_url(str(tmp_path)), study_name="e")
    with pytest.raises(ValueError):
        s.suggest("t0")
    assert [t.state for t in s.study.trials] == [State.FAIL]


@pytest.mark.parametrize("objective, names", [("acc", ["acc"]), ("pareto", ["acc", "tcc_bytes"])])
def test_the_objectives_are_named_for_the_dashboard(tmp_path, objective, names):
    """optuna-dashboard shows "Objective 0" for an unnamed objective; the names are the
    metrics' (`bytes` is the TCC: trials.parquet's `tcc_bytes`), kept when the study reopens."""
    sqlite_searcher(tmp_path, objective)
    again = pickle.loads(pickle.dumps(sqlite_searcher(tmp_path, objective)))
    assert again.study.metric_names == names
    assert optuna.load_study(study_name=optuna_study_name("s", objective),
                             storage=storage_url(str(tmp_path))).metric_names == names
