"""The study presets (`fcl.presets.STUDY_PRESETS`): every study at every preset resolves to the
base config (and the space with its seeds) it had before the presets became one table, stored
in tests/tune_base_configs.json (captured from the code before the change; each base config as
the keys where it differs from `RunConfig()`; a shipped backbone, `fcl:NAME`, as the path in the
repository of the file it names);
`--help` lists every preset a study accepts."""
import json
import runpy
from pathlib import Path

import pytest

pytest.importorskip("ray")
from fcl.config import ConfigError, RunConfig  # noqa: E402
from fcl.presets import PRESETS, STUDY_PRESETS, study_preset  # noqa: E402
from fcl.shipped_weights import weights_file  # noqa: E402
from fcl.tune import space as spaces  # noqa: E402
from fcl.tune.cli import build_parser  # noqa: E402
from fcl.tune.plan import base_config, study_space  # noqa: E402
from fcl.tune.study import Study, StudyOptions  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
STORED = json.loads((REPO / "tests" / "tune_base_configs.json").read_text())
STUDIES = {s.name: s for s in (runpy.run_path(str(p))["STUDY"]
                               for p in sorted((REPO / "studies").glob("*.py"))
                               if p.stem != "run_all")}


def resolved(study, preset: str) -> dict:
    """What tests/tune_base_configs.json holds for (study, preset): the base config's keys
    that differ from the defaults, the space Tune runs (values described), or the error."""
    opts = StudyOptions(preset=preset)
    try:
        cfg = base_config(study, opts)
    except ConfigError as e:
        return {"error": str(e)}
    try:
        space = study_space(study.space_for(preset), cfg, opts, study.searcher)
        described = {k: [spaces.describe_value(x) for x in v["grid_search"]] if spaces.is_grid(v)
                     else spaces.describe_value(v) for k, v in space.items()}
    except ConfigError as e:
        described = {"error": str(e)}
    default = RunConfig().to_flat()
    base = {k: v for k, v in cfg.to_flat().items() if v != default[k]}
    if "model.weights" in base:         # fcl:NAME: the file it names, in this checkout
        base["model.weights"] = Path(weights_file(base["model.weights"])).relative_to(REPO
                                                                               ).as_posix()
    return json.loads(json.dumps({"base": base, "space": described}, default=str))


def test_every_study_and_preset_is_stored():
    assert set(STUDY_PRESETS) == set(PRESETS)            # every run preset is a study preset
    assert set(STORED) == {f"{s}/{p}" for s in STUDIES for p in STUDY_PRESETS}


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_base_configs_equal_the_stored_ones_at_every_preset(name):
    for preset in STUDY_PRESETS:
        assert resolved(STUDIES[name], preset) == STORED[f"{name}/{preset}"], preset


def test_a_family_starts_from_its_own_run_preset_at_its_own_sizes():
    local = study_preset("local", {}, "flocora")
    assert (local.rounds, local.model.backbone) == (20, "resnet_tiny")    # flocora-local
    assert study_preset("local").rounds == 25                             # study sizes
    assert study_preset("smoke", {}, "flocora") == study_preset("smoke")  # no own preset
    with pytest.raises(ConfigError, match="--preset=huge: unknown preset"):
        study_preset("huge")
    with pytest.raises(ValueError, match="unknown family 'flocorra'"):
        Study("x", {}, family="flocorra")


def test_help_lists_every_preset_and_what_a_family_runs(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")            # argparse wraps at hyphens otherwise
    text = " ".join(build_parser(STUDIES["flocora_rank_alpha"]).format_help().split())
    for name in STUDY_PRESETS:
        assert name in text
    assert "local (runs flocora-local), paper (runs flocora)," in text
    grid_help = " ".join(build_parser(STUDIES["ablation_lr"]).format_help().split())
    assert "local (a laptop)," in grid_help and "(default: 1 at smoke, 5 at cifar10-drift, else 3)" in grid_help
