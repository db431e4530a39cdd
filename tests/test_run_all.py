"""studies/run_all.py: every study at one preset in one command (dry run here: the wiring;
tests/test_tune.py runs studies through Ray), and the CIFAR-10 presets each study maps to."""
import runpy
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
from fcl.tune.plan import base_config  # noqa: E402
from fcl.tune.study import StudyOptions  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "studies"))
import run_all  # noqa: E402


def test_every_study_script_is_in_run_all():
    scripts = {p.stem for p in (REPO / "studies").glob("*.py")} - {"run_all"}
    assert set(run_all.STUDIES) == scripts


def test_run_all_dry_runs_every_study_at_smoke(capsys):
    assert run_all.main(["--preset", "smoke", "--dry-run", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    for name in run_all.STUDIES:
        assert f"== {name}: exit 0" in out
    assert "scheduler: asha" in out.split("== search\n")[1]     # the search runs with ASHA


def test_a_refused_command_line_stops_before_the_next_study(capsys):
    """A flag every study refuses is reported once, not once per study."""
    assert run_all.main(["--preset", "smoke", "--dry-run", "--only", "optimizers", "noniid",
                         "--set", "client.lr=-1"]) == 2
    captured = capsys.readouterr()
    assert "== optimizers: exit 2" in captured.out and "== noniid" not in captured.out
    assert captured.err.count("error: ") == 1
    assert "run_all: stopped at optimizers: not started: noniid" in captured.err


@pytest.mark.parametrize("preset,want", [("cifar10-local", "resnet_tiny"),
                                         ("cifar10-gpu", "resnet8")])
def test_cifar10_presets_reach_every_study(preset, want):
    for name in run_all.STUDIES:
        study = runpy.run_path(str(REPO / "studies" / f"{name}.py"))["STUDY"]
        cfg = base_config(study, StudyOptions(preset=preset))
        assert cfg.data.name == "cifar10" and cfg.data.root == "data"
        flocora = study.family == "flocora"
        assert cfg.data.num_tasks == (1 if flocora else 5)
        if flocora:
            assert cfg.model.backbone == want and cfg.data.partition == "lda"


def test_a_failed_study_does_not_stop_the_next_and_the_last_line_names_it(monkeypatch, capsys):
    """A study whose trials failed exits 1: the next study runs, and run_all exits 1 naming it."""
    import fcl.tune
    codes = {"optimizers": 1, "noniid": 0}
    monkeypatch.setattr(fcl.tune, "run_study_cli", lambda study, argv: codes[study.name])
    assert run_all.main(["--preset", "smoke", "--only", "optimizers", "noniid"]) == 1
    captured = capsys.readouterr()
    assert "== noniid: exit 0" in captured.out
    assert captured.err.strip().splitlines()[-1] == \
        "run_all: 1 of 2 studies failed: optimizers (exit 1)"
