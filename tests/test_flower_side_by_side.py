"""benchmarks/flower_side_by_side.py without Flower's simulation (the tests do not install the
bench extra): its one-line exit 2 when flwr is missing, and the rates it derives from round
records. A second or two in all."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "flower_side_by_side.py"


def _module():
    spec = importlib.util.spec_from_file_location("flower_side_by_side", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_exits_2_in_one_line_without_flower():
    if importlib.util.find_spec("flwr") is not None:
        pytest.skip("flwr is installed: the missing-Flower path cannot be taken")
    done = subprocess.run([sys.executable, str(SCRIPT), "--smoke"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert len(done.stdout.strip().splitlines()) == 1 and "flwr" in done.stdout


def test_measure_counts_rounds_after_the_first():
    m = _module()
    run = {"rounds": [{"start": 0.0, "end": 9.0, "wall_s": 9.0, "samples": 100},    # warm-up
                      {"start": 9.0, "end": 11.0, "wall_s": 2.0, "samples": 100},
                      {"start": 11.0, "end": 14.0, "wall_s": 3.0, "samples": 100}],
           "evals": [{"s": 1.0, "batch": 32, "nhwc": False, "images": 50}],
           "precision": "fp32", "layout": "nchw", "threads": 1}
    one = m.measure([run])
    assert one["train"] == pytest.approx(200 / 4.0) and one["eval"] == pytest.approx(50.0)
    assert one["whole"] == pytest.approx(200 / 5.0) and one["samples"] == 200
    # two runs at once: rates summed, the whole run over the span of both
    later = {**run, "rounds": [{**r, "start": r["start"] + 1, "end": r["end"] + 1}
                               for r in run["rounds"]]}
    two = m.measure([run, later])
    assert two["train"] == pytest.approx(100.0) and two["eval"] == pytest.approx(100.0)
    assert two["whole"] == pytest.approx(400 / 6.0)
