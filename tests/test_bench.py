"""`fcl bench`: the table's rows, ratios and target lines."""
import pytest
from synthetic import one_thread  # noqa: F401  (a fixture)

from fcl.bench import Row, bench_table, format_table, target_lines
from fcl.bench_eval import EvalRow, bench_eval
from fcl.cli import main

pytestmark = pytest.mark.usefixtures("one_thread")


def test_bench_table_measures_every_mode_of_every_workload():
    tiny = {"tiny": ("smoke", {"data.num_tasks": 1, "schedule.order": "sync",
                               "data.train_per_class": 4, "data.test_per_class": 2,
                               "model.width": 8, "eval.batch_size": 1024})}
    both = bench_table(tiny, ["fp32", "fp32+batch"], rounds=2, warmup=False)
    rows = [r for r in both if isinstance(r, Row)]
    evals = [r for r in both if isinstance(r, EvalRow)]
    assert [(r.workload, r.mode, r.rounds) for r in rows] == [("tiny", "fp32", 2),
                                                              ("tiny", "fp32+batch", 2)]
    # one evaluation row per mode: all 10 classes x 2 test images, at the config's batch
    assert [(r.workload, r.mode, r.images, r.batch) for r in evals] == [
        ("tiny", "fp32", 20, 1024), ("tiny", "fp32+batch", 20, 1024)]
    assert all(r.evaluate_ips > 0 and r.bare_ips > 0 for r in evals)
    # T = 1: all 10 classes, 4 images each, over 3 clients; x 2 epochs x 2 rounds
    assert all(r.samples == 10 * 4 * 2 * 2 for r in rows)
    assert all(r.run_sps > 0 and r.bare_sps > 0 and r.ratio == r.run_sps / r.bare_sps
               for r in rows)
    table = format_table(both)
    assert table.count("\n| tiny |") == 4 and "run / bare" in table
    assert "| tiny | fp32 | 1024 |" in table and "evaluate / bare" in table


def test_targets_are_checked_on_the_rows_present():
    rows = [Row("fedavg-full-resnet8", "fp32", 2, 100, 90.0, 100.0, 1.0, 1.0),
            Row("flocora-lora-resnet8", "bf16+cl", 2, 100, 200.0, 100.0, 1.0, 1.0),
            Row("flocora-lora-resnet8", "fp32", 2, 100, 50.0, 100.0, 1.0, 1.0),
            Row("flocora-lora-resnet8", "fp32+batch", 2, 100, 65.0, 100.0, 1.0, 1.0)]
    lines = target_lines(rows)
    assert lines == [
        "target fp32 full-model FedAvg run / bare loop: 0.90 (goal >= 0.95) MISSED",
        "target LoRA ResNet-8 fp32 / fp32 full-model run: 0.56 (goal >= 2.0) MISSED",
        "target LoRA ResNet-8 fp32+batch / fp32 full-model run: 0.72 (goal >= 2.0) MISSED",
        "target LoRA ResNet-8 bf16+cl / fp32 full-model run: 2.22 (goal >= 2.0) met",
        "target LoRA ResNet-8 batched / sequential (fp32): 1.30 (goal >= 1.2) met",
    ]


@pytest.mark.parametrize("argv,line", [
    (["--rounds", "-1"], "error: --rounds=-1: out of range; allowed: 0 <= rounds <= 10000"),
    (["--repeats", "0"], "error: --repeats=0: out of range; allowed: >= 1"),
    (["--set", "run.device=bogus"], ("error: run.device=bogus: unknown value; allowed: auto, "
                                     "cpu, cuda")),
    (["--set", "run.threads=-1"], "error: run.threads=-1: out of range; allowed: 0 <= n <= 1024"),
    (["--device", "cpu", "--set", "run.device=auto"], ("error: --device=cpu: contradicts "
                                                       "--set run.device=auto; allowed: one of "
                                                       "the two")),
    (["--set", "rounds=1", "rounds=2"], ("error: rounds=2: given twice (also rounds=1); "
                                         "allowed: each key once")),
])
def test_bad_flags_are_one_line_and_exit_2_before_any_output(argv, line, capsys):
    assert main(["bench", *argv]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", line + "\n")


@pytest.mark.parametrize("native, skipped", [(True, []),
                                             (False, ["bf16", "bf16+cl", "bf16+cl+batch"])])
def test_default_modes_skip_bf16_only_on_a_cpu_without_native_kernels(monkeypatch, native,
                                                                     skipped):
    import fcl.compute_mode
    from fcl.bench import MODES, default_modes
    monkeypatch.setattr(fcl.compute_mode, "native_cpu_bf16", lambda: native)
    modes, skip = default_modes("cpu")
    assert skip == skipped and modes == [m for m in MODES if m not in skip]


def test_profile_covers_the_run_batched_clients_included():
    from fcl.bench import MODES, profile_run, workload_config
    from fcl.config import with_overrides
    from fcl.engine import prepare_data
    cfg = workload_config(("smoke", {"data.num_tasks": 1, "schedule.order": "sync",
                                     "data.train_per_class": 4, "data.test_per_class": 2,
                                     "model.width": 8}), rounds=1)
    table = profile_run(with_overrides(cfg, MODES["fp32+batch"]), prepare_data(cfg))
    assert "aten::convolution_backward" in table and "Self CPU time total" in table


def test_bare_eval_counts_what_evaluate_counts():
    from fcl.bench import workload_config
    from fcl.bench_eval import bare_eval, eval_setup
    cfg = workload_config(("smoke", {"data.train_per_class": 4, "data.test_per_class": 3,
                                     "model.width": 8, "eval.batch_size": "auto"}), rounds=5)
    (row,) = bench_eval("tiny", {"fp32": cfg}, repeats=1)
    assert row.batch == 256 and row.images == 5 * 2 * 3
    from fcl.engine import evaluate
    plan, forward = eval_setup(cfg)
    percent = evaluate(plan.model, plan.data, 4, forward, True)
    assert [round(p * 6 / 100) for p in percent.tolist()] == bare_eval(plan.model, plan.data, 4)
