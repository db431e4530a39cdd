"""Small real study results for the analysis tests, written without Ray: tiny engine runs
(2 tasks, 4 rounds, 20 images per class) stored with `fcl.results_io.trial_row`,
`trial_rounds_frame` and `trial_tasks_frame`, as a study exports them, under a temporary
results/ folder, each with its manifest (`study.json`, written last: the keys the fixture
varies, the smoke preset, the doc of the study script of the same name).

Built once per test session (memoised: several test modules share it); a run whose config
appears in several studies (the defaults) is run once.
"""
from __future__ import annotations

import ast
import functools
import itertools
import tempfile
from pathlib import Path

import pandas as pd
import pytest
import torch

from fcl.engine import prepare_data, run
from fcl.manifest import Manifest, dataset_label, write_manifest
from fcl.presets import preset
from fcl.results_io import EARLY_STOPPED
from fcl.results_io import trial_rounds_frame, trial_row, trial_tasks_frame, write_parquet_atomic

TINY = {"rounds": 4, "data.num_tasks": 2, "data.train_per_class": 20, "data.test_per_class": 10,
        "client.local_epochs": 1, "model.width": 8, "eval.every": 4, "run.device": "cpu"}
SEEDS = (0, 1)


def grid(**axes) -> list[dict]:
    keys = [k.replace("__", ".") for k in axes]
    return [dict(zip(keys, values)) for values in itertools.product(*axes.values())]


STUDIES: dict[str, list[dict]] = {
    "ablation_lr": grid(client__lr=[0.05, 0.2], server__lr=[0.5, 1.0]),
    "ablation_rounds_epochs": grid(rounds=[2, 4], client__local_epochs=[1, 2]),
    "scalability": grid(data__num_clients=[2, 3]),
    "noniid": [{"data.partition": "iid"}, {"data.partition": "dirichlet", "data.alpha": 1.0}],
    "stragglers": grid(participation__straggler_prob=[0.0, 0.5]),
    "optimizers": grid(server__optimizer=["fedsgd", "fedadam", "fedyogi"], server__lr=[1.0, 0.5]),
    "task_order": grid(schedule__order=["fmtl", "sync", "async"]),
}
# A search as studies/search.py exports it: Optuna-drawn configs (one seed each), trial numbers,
# and the trials ASHA stopped early (no final metrics; the round and ACC they had reached).
SEARCH = [{"client.lr": lr, "server.lr": slr, "client.local_epochs": k}
          for lr, slr, k in ((0.05, 1.0, 1), (0.2, 0.5, 2), (0.01, 0.8, 1), (0.1, 0.3, 2),
                             (0.03, 0.6, 1), (0.15, 0.9, 2))]
SEARCH_STOPPED = (2, 4)          # these trial numbers were stopped at round 1
FLOCORA_RANK_ALPHA = [{"model.adapter": "full"}] + [
    {"model.adapter": "lora", "model.lora_rank": r, "model.lora_alpha": r * k}
    for r in (4, 8) for k in (2, 16)]
FLOCORA_QUANT = [{"model.adapter": "lora", "model.lora_rank": 4, "model.lora_alpha": 64,
                  "compression.bits": b} for b in (32, 8, 2)]


REPO = Path(__file__).resolve().parent.parent


def script_doc(name: str) -> str:
    """The doc of the study `name` (its module in `fcl/studies/`)."""
    source = (REPO / "fcl" / "studies" / f"{name}.py").read_text()
    return ast.get_docstring(ast.parse(source)) or ""


def fixture_manifest(name: str, settings: list[dict], searcher: str | None = None,
                     seeds: tuple[int, ...] = SEEDS) -> Manifest:
    """What the export would write for the fixture's study: every key its settings set."""
    cfg = preset("smoke", TINY)
    varying = tuple(dict.fromkeys(k for setting in settings for k in setting))
    return Manifest(name, "smoke", dataset_label(cfg.data.name, cfg.data.root), cfg.to_flat(),
                    doc=script_doc(name), searcher=searcher, varying=varying,
                    axes={k: [k] for k in varying}, seeds=seeds,
                    num_samples=len(settings) if searcher else 1,
                    command="tests/study_fixture.py", fcl_git="fixture")


@functools.cache
def build_results() -> Path:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)   # tiny runs: a second thread only spins (45 s vs 2 s per run on
    try:                       # a loaded 2-core machine)
        return _build(Path(tempfile.mkdtemp(prefix="fcl-analysis-results-")))
    finally:
        torch.set_num_threads(threads)


def _build(root: Path) -> Path:
    data_cache, run_cache = {}, {}

    def one_run(overrides: dict):
        cfg = preset("smoke", {**TINY, **overrides})
        key = tuple(sorted(cfg.to_flat().items()))
        if key not in run_cache:
            dkey = (cfg.data, cfg.seed)
            if dkey not in data_cache:
                data_cache[dkey] = prepare_data(cfg)
            run_cache[key] = run(cfg, data=data_cache[dkey])
        return cfg, run_cache[key]

    def write_tables(name: str, rows: list[dict], finished: list[tuple[str, object]],
                     manifest: Manifest):
        """trials.parquet from `rows`; rounds and tasks from the (trial_id, result) pairs;
        then the manifest."""
        write_parquet_atomic(pd.DataFrame(rows), str(root / name / "trials.parquet"))
        for table, frame in (("rounds", trial_rounds_frame), ("tasks", trial_tasks_frame)):
            write_parquet_atomic(pd.concat([frame(name, tid, res) for tid, res in finished],
                                           ignore_index=True),
                                 str(root / name / f"{table}.parquet"))
        write_manifest(root / name, manifest)

    def write_study(name: str, settings: list[dict]):
        rows, finished = [], []
        for i, (setting, seed) in enumerate(itertools.product(settings, SEEDS)):
            cfg, result = one_run({**setting, "seed": seed})
            trial_id = f"{name}_{i:05d}"
            rows.append(trial_row(name, trial_id, result, cfg.to_flat()))
            finished.append((trial_id, result))
        write_tables(name, rows, finished, fixture_manifest(name, settings))

    def write_search():
        rows, finished = [], []
        for number, setting in enumerate(SEARCH):
            cfg, result = one_run({**setting, "seed": 0})
            trial_id = f"search_{number:05d}"
            tune = {"tune_trial_id": f"abcde_{number:05d}", "optuna_trial": number,
                    "tune_trial_dir": f"/tmp/.tune/search/train_trial_abcde_{number:05d}"}
            if number in SEARCH_STOPPED:
                seen = [r["mean_acc"] for r in result.records[:2] if r["evaluated"]]
                rows.append({**trial_row("search", trial_id, None, cfg.to_flat(),
                                         EARLY_STOPPED), **tune, "round_reached": 1,
                             "acc_reached": seen[-1] if seen else 50.0})
                continue
            rows.append({**trial_row("search", trial_id, result, cfg.to_flat()), **tune,
                         "round_reached": cfg.rounds - 1, "acc_reached": result.summary["acc"]})
            finished.append((trial_id, result))
        write_tables("search", rows, finished, fixture_manifest("search", SEARCH, "optuna", (0,)))

    for name, settings in {**STUDIES, "flocora_rank_alpha": FLOCORA_RANK_ALPHA,
                           "flocora_quantization": FLOCORA_QUANT}.items():
        write_study(name, settings)
    write_search()
    return root


@pytest.fixture(scope="session")
def study_results() -> Path:
    return build_results()
