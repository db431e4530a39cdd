"""Reading stored studies faster changed no value: `methods_as_today` and `forgetting_columns`
equal the row-by-row references `benchmarks/analysis_load.py` keeps (on stored studies, and on
rows with the cases the stored ones may lack)."""
import importlib.util
import math
from pathlib import Path

import pandas as pd
import pytest

from analysis.forgetting import forgetting_columns
from fcl.results_io import methods_as_today

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def reference():
    spec = importlib.util.spec_from_file_location("analysis_load_benchmark",
                                                  ROOT / "benchmarks" / "analysis_load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_methods_as_today_equals_the_row_by_row_lookup_on_stored_tables(reference):
    tables = [t for t in reference.stored_tables(["results-lowrank", "results/flocora_compare"])
              if "model.adapter" in t]
    renamed = 0
    for table in tables:
        fast, slow = methods_as_today(table), reference.methods_row_by_row(table)
        assert fast.equals(slow)
        renamed += fast is not table
    # results/flocora_compare stored its ZeroFL trials as `full` with a sparsity: 3 tables
    assert len(tables) >= 15 and renamed == 3


def test_methods_as_today_renames_per_row_when_configs_repeat_and_differ():
    rows = pd.DataFrame({"model.adapter": ["full", "full", "full", "lora", "full"],
                         "model.zerofl_sparsity": [0.9, 0.0, 0.9, 0.0, math.nan],
                         "acc": [1, 2, 3, 4, 5]})
    out = methods_as_today(rows)
    assert out["model.adapter"].tolist() == ["zerofl", "full", "zerofl", "lora", "full"]
    assert rows["model.adapter"].tolist()[0] == "full"           # the input is not changed


def test_forgetting_equals_the_pandas_reference_on_stored_studies(reference):
    inputs = reference.forgetting_inputs(["results-drift"])
    assert inputs
    for trials, tasks in inputs:
        assert forgetting_columns(trials, tasks).equals(
            reference.forgetting_by_pandas(trials, tasks))


def test_forgetting_equals_the_pandas_reference_on_gaps(reference):
    """Unevaluated rounds (NaN accuracy), rounds without a report count (NA), a task never
    trained, a trial without tasks, and the held accuracy of a method whose clients keep their
    own models."""
    rows = []
    for r in range(8):
        for t in range(4):
            trained = t < 3 and r >= 2 * t
            rows.append({"trial_id": "a", "round": r, "task": t,
                         "accuracy": math.nan if r % 3 == 2 else 50.0 + r - 3 * t,
                         "reports": pd.NA if r == 5 else (2 if trained else 0),
                         "accuracy_held": 40.0 + r if trained else math.nan, "other.key": r})
    tasks = pd.DataFrame(rows).astype({"reports": "Int64"})
    trials = pd.DataFrame({"trial_id": ["a", "b"], "rounds": [8, 8], "data.num_tasks": [4, 4]})
    fast = forgetting_columns(trials, tasks)
    assert fast.equals(reference.forgetting_by_pandas(trials, tasks))
    assert fast.loc[1, ["mean_drop", "drop_share", "forgetting"]].isna().all()
    assert not math.isnan(fast.loc[0, "forgetting"])
