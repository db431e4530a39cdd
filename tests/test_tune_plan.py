"""Study declarations without starting Ray: every script's trial count (`--dry-run`), one-line
errors with exit 2 before any trial, space checks, trial resources, and the Parquet schema of
a study whose trials all failed."""
import glob
import os
import pickle
import runpy

import pytest
import torch

pytest.importorskip("ray")
from ray import tune  # noqa: E402

from fcl.config import ConfigError, field_types  # noqa: E402
from fcl.presets import preset  # noqa: E402
from fcl.tune import Study, StudyOptions, grid, run_study  # noqa: E402
from fcl.tune.cli import run_study_cli  # noqa: E402
from fcl.tune.cluster import trial_resources  # noqa: E402
from fcl.results_io import STUDY_SUMMARY_TYPES  # noqa: E402
from fcl.tune.export import TrialOutcome, study_frames, trial_ids  # noqa: E402
from fcl.tune.plan import load_datasets  # noqa: E402
from fcl.tune.data_sharing import data_signature, dataset_key  # noqa: E402
from fcl.tune.space import check_space, trial_overrides  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUDY_FILES = sorted(f for f in glob.glob(os.path.join(REPO, "studies", "*.py"))
                     if not f.endswith("run_all.py"))      # the driver of all, not a study


def load_study(name: str):
    return runpy.run_path(os.path.join(REPO, "studies", f"{name}.py"))["STUDY"]


# grid points at `local` and at `smoke` (one seed), from the grids the scripts declare
COUNTS = {
    "ablation_lr": (4 * 3, 4 * 3),
    "ablation_rounds_epochs": (4 * 5, 2 * 5),
    "scalability": (4, 2),
    "noniid": (6, 6),
    "stragglers": (5, 5),
    "optimizers": (4 * 3, 4 * 3),
    "task_order": (3 * 2 * 2, 3 * 2 * 2),
    "flocora_rank_alpha": (9, 9),
    "flocora_quantization": (7, 7),          # 32-bit, then 8/4/2 bits x two payloads
    "search": (20, 20),                      # draws, not grid points
    "drift_correction": (8 * 2, 8 * 2),
    "fcl_methods": (3, 3),                   # NetTailor + FedAdam / FedSGD, FedWeIT + FedSGD
    "flocora_layers": (3, 3),                # Table II: vanilla, + norm layers, + final FC
    "flocora_compare": (13, 13),             # FedAvg, LoRA x 4 bits, pruning x 4, FedPara x 2,
    #                                          ZeroFL x 2
}


def test_every_study_script_is_counted():
    assert sorted(os.path.basename(f)[:-3] for f in STUDY_FILES) == sorted(COUNTS)


@pytest.mark.parametrize("name", sorted(COUNTS))
@pytest.mark.parametrize("which", ["local", "smoke"])
def test_dry_run_prints_the_trial_table_and_counts(name, which, capsys):
    small = ["--set", "data.train_per_class=30", "data.test_per_class=5"]     # counts only
    code = run_study_cli(load_study(name), ["--preset", which, "--dry-run", "--seeds", "1",
                                            *small])
    out = capsys.readouterr().out
    assert code == 0
    expected = COUNTS[name][0 if which == "local" else 1]
    assert f"\n{expected} trials" in out
    if load_study(name).searcher is None:
        assert out.count("\n") == expected + 3        # study line, header, rows, cost


def test_local_runs_three_seeds_of_every_grid_point(capsys):
    assert run_study_cli(load_study("optimizers"), ["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "\n36 trials; 720,000 training samples" in out and "(preset local)" in out


def test_dry_run_seeds_and_samples_multiply_the_grid(capsys):
    study = load_study("ablation_lr")
    assert run_study_cli(study, ["--preset", "smoke", "--seeds", "2", "--num-samples", "3",
                                 "--dry-run"]) == 0
    assert "\n72 trials x 3 samples" in capsys.readouterr().out


@pytest.mark.parametrize("argv,line", [
    (["--set", "bogus=1"], "error: bogus=1: unknown key"),
    (["--set", "client.momentum=-1"], "error: client.momentum=-1.0: out of range; allowed: "
                                      "0 <= beta < 1"),
    (["--set", "client.lr=0.5"], "error: --set=client.lr=0.5: the study varies client.lr"),
    (["--set", "rounds=7"], "error: rounds=7: not a multiple of data.num_tasks=5"),
    (["--gpus-per-trial", "0.5"], "error: --gpus-per-trial=0.5: the cluster has 0 GPUs; "
                                  "allowed: 0"),
    (["--cpus-per-trial", "64"], "error: --cpus-per-trial=64.0: the cluster has"),
    (["--seeds", "0"], "error: argument --seeds: 0 is not > 0"),
    (["--preset", "huge"], "error: argument --preset: invalid choice: 'huge'"),
    (["--resume", "--fresh"], "error: --fresh=on: contradicts --resume"),
    (["--set", "data.name=npz", "data.root=/nonexistent.npz"], "error: /nonexistent.npz: no such"),
])
def test_bad_flags_fail_before_any_trial_with_one_line_and_exit_2(argv, line, capsys, tmp_path):
    if "--gpus-per-trial" in argv:
        import torch
        if torch.cuda.is_available():
            pytest.skip("this machine has a GPU")
    with pytest.raises(SystemExit) as exit_:
        code = run_study_cli(load_study("ablation_lr"), ["--results", str(tmp_path), *argv])
        raise SystemExit(code)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(line) and err.count("\n") == 1, err
    assert not os.listdir(tmp_path)                    # nothing ran, nothing written


@pytest.mark.parametrize("space,fragment", [
    ({"client.lrr": grid(0.1)}, "client.lrr=0.1: unknown key"),
    ({"client.lr": grid(0.1, -1.0)}, "client.lr=-1.0: out of range"),
    ({"server.optimizer": grid("fedsgd", "sgd")}, "server.optimizer=sgd: unknown value"),
    ({"participation.straggler_prob": tune.uniform(0.0, 1.0)},
     "participation.straggler_prob=1.0: out of range"),
    ({"rounds": grid(10, 12)}, "rounds=12: not a multiple of data.num_tasks=5"),
    ({"x": grid({"server.optimizer": "fedsgd"}, {"server.lr": 0})}, "server.lr=0.0: out of range"),
    ({"client.lr": grid()}, "client.lr=[]: empty grid"),
])
def test_bad_spaces_fail_before_any_trial(space, fragment, tmp_path):
    with pytest.raises(ConfigError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        run_study(Study("bad", space), StudyOptions(preset="smoke", results=str(tmp_path)))
    assert not os.listdir(tmp_path)


def test_a_partition_that_cannot_be_cut_fails_before_any_trial(tmp_path):
    from fcl.data.datasets import DataError
    with pytest.raises(DataError, match="data.num_clients=500"):
        run_study(Study("bad", {"data.num_clients": grid(3, 500)}),
                  StudyOptions(preset="smoke", results=str(tmp_path), dry_run=True))


def test_variant_axes_and_data_keys():
    trial = {"client.lr": 0.1, "opt": {"server.optimizer": "fedadam", "server.tau": 0.1},
             "seed": 2}
    assert trial_overrides(trial) == {"client.lr": 0.1, "server.optimizer": "fedadam",
                                      "server.tau": 0.1, "seed": 2}
    a = preset("smoke", {"seed": 0})
    b = preset("smoke", {"seed": 1, "data.alpha": 0.3, "client.lr": 0.2})
    assert data_signature(a) != data_signature(b)                 # never share prepared data
    assert data_signature(a) == data_signature(preset("smoke", {"client.lr": 0.2}))
    assert dataset_key(a) == dataset_key(b)                       # one loaded copy for both
    configs = check_space({"opt": grid({"server.optimizer": "fedsgd"},
                                       {"server.optimizer": "fedyogi", "server.tau": 0.1}),
                           "client.lr": tune.loguniform(0.01, 0.1)}, a)
    assert [(c.server.optimizer, c.client.lr) for c in configs] == [
        ("fedsgd", 0.01), ("fedsgd", 0.1), ("fedyogi", 0.01), ("fedyogi", 0.1)]


def test_trial_resources_default_to_one_cpu_and_never_ask_for_missing_gpus():
    cpu_only = {"CPU": 16.0}
    r = trial_resources(cpu_only, None, None, None)
    assert (r.cpus, r.gpus, r.threads) == (1.0, 0.0, 1)
    assert trial_resources(cpu_only, 4, None, None).threads == 4
    gpus = {"CPU": 16.0, "GPU": 2.0}
    assert trial_resources(gpus, 4, None, None).gpus == 0.5      # 4 trials share 2 GPUs
    assert trial_resources(gpus, 1, None, 2).gpus == 1.0          # 2 at a time, one GPU each
    with pytest.raises(ConfigError, match="the cluster has 0 GPUs"):
        trial_resources(cpu_only, None, 0.25, None)
    with pytest.raises(ConfigError, match="fractions below 1"):
        trial_resources(gpus, None, 1.5, None)


def test_study_of_failed_trials_still_has_every_column_typed():
    cfgs = [preset("smoke", {"seed": s}) for s in (0, 1)]
    failed = [TrialOutcome(c, "ERROR", "RuntimeError: boom", None, {}, str(i))
              for i, c in enumerate(cfgs)]
    frames = study_frames("s", "smoke", failed, ["seed"])
    trials, rounds, tasks = frames["trials"], frames["rounds"], frames["tasks"]
    assert len(trials) == 2 and len(rounds) == 0 and len(tasks) == 0
    for col, dtype in STUDY_SUMMARY_TYPES.items():
        assert str(trials[col].dtype) == dtype and trials[col].isna().all()
    types = field_types()
    assert all(k in trials and k in rounds and k in tasks for k in types)
    assert str(trials["data.alpha"].dtype) == "float64" == str(rounds["data.alpha"].dtype)
    assert str(tasks["accuracy"].dtype) == "float64" and str(rounds["round"].dtype) == "int64"
    # the columns a finished run writes, even with no run to write them
    assert {"tcc_bytes", "compression_ratio", "tasks_trained", "wall_s"} <= set(rounds)


def test_trial_ids_hash_the_config_and_number_equal_configs():
    a, b = preset("smoke", {"seed": 0}), preset("smoke", {"seed": 1})
    outs = [TrialOutcome(c, "ERROR", "", None, {}, order)
            for c, order in ((a, "t2"), (b, "t0"), (a, "t1"))]
    ids = trial_ids(outs)
    assert ids[0].endswith("-2") and ids[2].endswith("-1") and "-" not in ids[1]
    assert ids[0][:-2] == ids[2][:-2] != ids[1]
    assert ids == trial_ids(outs)                                  # stable


def test_declarations_and_bound_parameters_pickle():
    study = load_study("task_order")
    assert pickle.loads(pickle.dumps(study)) == study
    cfg = preset("smoke")
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    # what tune.with_parameters binds to every trial besides the config: the loaded data sets
    datasets = load_datasets([cfg])
    (key, ds), = datasets.items()
    back = pickle.loads(pickle.dumps(datasets))[key]
    assert torch.equal(back.train_x, ds.train_x) and torch.equal(back.test_y, ds.test_y)
    assert (back.classes, back.task_classes) == (ds.classes, ds.task_classes)


def test_a_trial_is_checked_against_the_largest_node_not_the_cluster_total():
    """Nodes of 1, 2 and 2 CPUs: 5 CPUs in all, but a 3-CPU trial fits on none."""
    from fcl.tune.nodes import Node
    nodes = [Node("10.0.0.1", 1, head=True), Node("10.0.0.2", 2), Node("10.0.0.3", 2)]
    with pytest.raises(ConfigError, match=r"no node has 3 CPUs \(nodes: 1, 2 and 2 CPUs\); "
                                          r"allowed: 0 < cpus <= 2"):
        trial_resources({"CPU": 5.0}, 3, None, None, nodes=nodes)
    assert trial_resources({"CPU": 5.0}, 2, None, None, nodes=nodes).cpus == 2
    gpu = [Node("10.0.0.1", 4, 1.0), Node("10.0.0.2", 8)]
    with pytest.raises(ConfigError, match=r"--gpus-per-trial=1: no node has 8 CPUs and 1 GPUs"):
        trial_resources({"CPU": 12.0, "GPU": 1.0}, 8, 1, None, nodes=gpu)
    # an autoscaling cluster may add a larger node: the check is Ray's then
    assert trial_resources({"CPU": 5.0}, 3, None, None, True, nodes).cpus == 3


def test_trials_at_once_are_counted_per_node_and_a_gpu_share_says_how_to_use_cpu_nodes():
    from fcl.tune.nodes import Node, concurrency, placement_line
    nodes = [Node("10.0.0.1", 8, 1.0, head=True), Node("10.0.0.2", 16), Node("10.0.0.3", 3)]
    assert concurrency(nodes, 2, 0, None) == 4 + 8 + 1          # CPUs per node, floored
    assert concurrency(nodes, 2, 0, 5) == 5
    assert concurrency(nodes, 1, 0.2, None) == 5                # the GPU node only
    line = placement_line(nodes, 1, 0.2, None)
    assert line == ("5 trials at once (1 CPU + 0.2 GPU each): 5 on 10.0.0.1; none on the CPU "
                    "nodes 10.0.0.2, 10.0.0.3 (each trial asks for 0.2 GPU): --gpus-per-trial 0 "
                    "runs trials on every node's CPUs")
    assert placement_line(nodes, 4, 0, None) == ("6 trials at once (4 CPU each): 2 on "
                                                 "10.0.0.1, 4 on 10.0.0.2")


def test_a_failed_trial_is_one_line_with_its_config_its_error_and_rays_hint():
    from fcl.tune.export import error_hint, failed_lines
    storage = RuntimeError("Unable to set up cluster storage with the following settings:\n"
                           "StorageContext<...>\nCheck that all nodes in the cluster have "
                           "read/write access to the configured storage path. "
                           "`RunConfig(storage_path)` should be set to ...")
    hint = error_hint(storage)
    assert hint == ("Check that all nodes in the cluster have read/write access to the "
                    "configured storage path.")
    assert error_hint(RuntimeError("boom\nno advice here")) == ""
    cfgs = [preset("smoke", {"seed": s}) for s in (0, 1)]
    failed = [TrialOutcome(cfgs[0], "ERROR", "RuntimeError: Unable to set up cluster storage",
                           None, {}, "0", node={"node_ip": "10.0.0.2", "hostname": "w1"}),
              TrialOutcome(cfgs[1], "TERMINATED", "", None, {}, "1")]
    df = study_frames("s", "smoke", failed[:1], ["seed"])["trials"]
    assert list(df["node_ip"]) == ["10.0.0.2"] and list(df["hostname"]) == ["w1"]
    tid = df["trial_id"].iloc[0]
    assert failed_lines(df, ["seed"], {tid: hint}) == [
        f"failed: trial {tid} (seed=0) on 10.0.0.2: RuntimeError: Unable to set up cluster "
        f"storage [Ray: {hint}]"]


def test_a_relative_results_folder_inside_a_ray_job_is_refused(monkeypatch, tmp_path, capsys):
    """`ray job submit --working-dir . -- python studies/x.py`: relative paths would land in
    Ray's temporary copy of the working dir."""
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", "{}")
    study = Study("in_job", {"client.lr": grid(0.1)})
    assert run_study_cli(study, ["--preset", "smoke", "--results", "results"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --results=results: a relative path inside a Ray job ")
    assert len(err.strip().splitlines()) == 1
    assert run_study_cli(study, ["--preset", "smoke", "--results", str(tmp_path),
                                 "--storage", "tune"]) == 2
    assert capsys.readouterr().err.startswith("error: --storage=tune: a relative path")
