"""Property (issue 21, item 9): every command line, `fcl run|params|bench` and a study's
`--dry-run`, ends in exit 0 or in exactly one line `error: ...` with exit 2, never a traceback.

Keys are drawn from the config vocabulary (`fcl.config.field_types`) and unknown ones, values
valid-looking, out of range, of the wrong type, empty or unicode, flags valid and not. Called
in-process (`main(argv)`; stdout/stderr captured) and stopped where the work would start:
`fcl run` once its data and model are built (`fcl.engine.start`), `fcl bench` once every
workload x mode config is built, a study at its dry run. How many cases ran is printed.
"""
from __future__ import annotations

import contextlib
import io
import os
import runpy
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fcl.config import RunConfig, field_types, iter_fields
from fcl.presets import PRESETS

STUDY_SCRIPT = Path(__file__).parents[1] / "studies" / "ablation_lr.py"
TYPES = field_types()
CHOICES = {k: m["choices"] for k, _, m, _ in iter_fields(RunConfig()) if m.get("choices")}
ODD = ["", " ", "nan", "inf", "-inf", "1e400", "0x10", "1_0", "２", "٣", "é", "∞", "none", "[]",
       "None", "true", "-0", "1.5", "-1", "0", "2147483648", "9" * 30, "a=b", "\x00", "🙂"]
STEPS = {"run": 0, "params": 0, "bench": 0, "study": 0}
TALLY = {"exit 0": 0, "exit 2": 0}


def values(key: str):
    typ = TYPES.get(key, str)
    if key in CHOICES:
        good = st.sampled_from([str(c) for c in CHOICES[key]])
    elif typ is int:
        good = st.one_of(st.integers(-3, 64), st.sampled_from([2 ** 31, 10 ** 12])).map(str)
    elif typ is float:
        good = st.floats(allow_nan=True, allow_infinity=True, width=32).map(repr)
    elif typ is bool:
        good = st.sampled_from(["true", "false", "yes", "0", "maybe"])
    else:
        good = st.text(max_size=12)
    return st.one_of(good, st.sampled_from(ODD), st.text(max_size=6))


KEY = st.one_of(st.sampled_from(sorted(TYPES)), st.sampled_from(sorted(TYPES)), st.text(max_size=8))


@st.composite
def sets(draw, max_size: int = 4) -> list[str]:
    out = []
    for _ in range(draw(st.integers(0, max_size))):
        key = draw(KEY)
        kind = draw(st.sampled_from(["pair", "pair", "pair", "no-equals", "spaced"]))
        value = draw(values(key))
        out.append({"pair": f"{key}={value}", "no-equals": key,
                    "spaced": f" {key} = {value} "}[kind])
    return out


def preset_flag(draw) -> list[str]:
    name = draw(st.one_of(st.just("smoke"), st.just("smoke"), st.sampled_from(sorted(PRESETS)),
                          st.text(max_size=5)))
    return draw(st.sampled_from([["--preset", name], [f"--preset={name}"], []]))


def set_flag(draw) -> list[str]:
    pairs = draw(sets())
    return ["--set", *pairs] if pairs else draw(st.sampled_from([[], ["--set"]]))


def flags(draw, choices: list[list[str]]) -> list[str]:
    out = []
    for flag in draw(st.lists(st.sampled_from(choices), max_size=3)):
        out += flag
    return out


class Reached(Exception):
    """The work would start here: the command line was accepted."""


def call(main, argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:                    # argparse: --help (0) or a bad flag (2)
            code = e.code if isinstance(e.code, int) else 1
        except Reached:
            code = 0
    return code, out.getvalue(), err.getvalue()


def check(argv: list[str], code: int, out: str, err: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code in (0, 2), (argv, code, err[-2000:])
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("error: "), (argv, err[-2000:])
    else:
        assert not [line for line in lines if "error" in line.lower()], (argv, err[-2000:])
    TALLY[f"exit {code}"] += 1


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """The CLI with its work replaced: `fcl run` stops after `engine.start` (data and model
    built), `fcl bench` after building every config it would measure; FCL_OFFLINE: no
    downloads. Yields (fcl main, a writable folder, a file)."""
    import fcl.bench
    import fcl.cli
    from fcl.config import with_overrides
    from fcl.engine import start
    mp = pytest.MonkeyPatch()
    mp.setenv("FCL_OFFLINE", "1")

    import fcl.engine                  # fcl.cli imports a command's modules when it runs
    prepare = fcl.engine.prepare_data

    def run(cfg, on_round=None, **_):
        start(cfg, prepare(cfg), None, None)
        raise Reached

    def table(workloads, modes, rounds, overrides, repeats, out=None, **_):
        for spec in workloads.values():
            cfg = fcl.bench.workload_config(spec, rounds, overrides)
            for m in modes:
                with_overrides(cfg, fcl.bench.MODES[m])
        return []

    mp.setattr(fcl.engine, "run", run)
    mp.setattr(fcl.engine, "prepare_data", lambda cfg: None)
    mp.setattr(fcl.bench, "bench_table", table)
    mp.setattr(fcl.bench, "profile_run", lambda cfg, data: "")
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "a-file").write_text("x")
    yield fcl.cli.main, folder
    mp.undo()


# examples per test (FCL_FUZZ_EXAMPLES=1500 for a longer hunt); ~45 s for the three on 2 cores
FUZZ = settings(max_examples=int(os.environ.get("FCL_FUZZ_EXAMPLES", "150")), deadline=None,
                database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@FUZZ
@given(st.data())
def test_fcl_run_and_params_end_in_exit_0_or_one_error_line(stopped, data):
    main, folder = stopped
    draw = data.draw
    command = draw(st.sampled_from(["run", "params"]))
    argv = [command, *preset_flag(draw), *set_flag(draw)]
    outs = [["--out", str(folder / "out")], ["--out", str(folder / "a-file")],
            ["--out", str(folder / "a-file" / "x")], ["--out", ""], ["--out"]]
    argv += flags(draw, [["--json"], ["--quiet"], *outs, ["--bogus"], ["-h"], ["--rounds", "1"]]
                  if command == "run" else [["--json"], ["--out", "x"], ["--bogus"]])
    STEPS[command] += 1
    check(argv, *call(main, argv))


@FUZZ
@given(st.data())
def test_fcl_bench_ends_in_exit_0_or_one_error_line(stopped, data):
    main, _ = stopped
    draw = data.draw
    number = st.one_of(st.integers(-2, 12).map(str), st.sampled_from(ODD))
    argv = ["bench", *set_flag(draw)]
    argv += flags(draw, [["--rounds", draw(number)], ["--repeats", draw(number)],
                         ["--device", draw(st.sampled_from(["auto", "cpu", "cuda", "gpu"]))],
                         ["--workloads", draw(st.sampled_from(["nettailor-local", "x"]))],
                         ["--modes", draw(st.sampled_from(["fp32", "bf16+cl", "fp16"]))],
                         ["--preset", draw(st.sampled_from(["smoke", "local", "nope"]))],
                         ["--profile"]])
    STEPS["bench"] += 1
    check(argv, *call(main, argv))


@FUZZ
@given(st.data())
def test_study_dry_run_ends_in_exit_0_or_one_error_line(stopped, data):
    from fcl.tune.cli import run_study_cli
    study = runpy.run_path(str(STUDY_SCRIPT))["STUDY"]      # not run as __main__: no main()
    _, folder = stopped
    draw = data.draw
    number = st.one_of(st.integers(-2, 6).map(str), st.sampled_from(ODD))
    argv = ["--dry-run", "--results", str(folder / "results"), *set_flag(draw),
            *draw(st.sampled_from([["--preset", "smoke"], ["--preset", "local"],
                                   ["--preset", "nope"], []]))]
    argv += flags(draw, [["--seeds", draw(number)], ["--num-samples", draw(number)],
                         ["--max-concurrent", draw(number)], ["--cpus-per-trial", draw(number)],
                         ["--gpus-per-trial", draw(number)], ["--grace-rounds", draw(number)],
                         ["--reduction-factor", draw(number)],
                         ["--scheduler", draw(st.sampled_from(["fifo", "asha", "x"]))],
                         ["--resume"], ["--fresh"], ["--bogus"]])
    STEPS["study"] += 1
    check(argv, *call(lambda a: run_study_cli(study, a), argv))


# Refused cases (issue 34, items 4 and 5): each one line `error: ...` naming the value, exit 2,
# nothing written in the output folder
FLOATS = sorted(k for k, t in TYPES.items() if t is float)
INTS = sorted(k for k, t in TYPES.items() if t is int and k not in CHOICES)
BOUNDED = {"data.min_client_samples": "1000000000", "model.proxy_depth": "1000000000",
           "client.local_epochs": "1000000000", "rounds": "1000000000",
           "seed": "100000000000000000000", "run.threads": "1000000000"}
LONG = "x" * 300
REFUSED_SETS = (
    [(k, v) for k in FLOATS for v in ("nan", "inf", "-inf", "1e400", "-1e308", "abc", "", "🙂")]
    + [(k, "1e308") for k in FLOATS if k != "run.divergence_loss"]     # a loss bound of 1e308
    + [(k, v) for k in INTS for v in ("1.5", "abc", "", "9" * 30 + "x", "٣x")]
    + list(BOUNDED.items()))


def refused(argv, code, out, err, folder=None, before=None):
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (argv, code, err[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), (argv, err[-2000:])
    if folder is not None:
        assert sorted(p.name for p in folder.iterdir()) == before, argv
    TALLY["exit 2"] += 1
    STEPS["refused"] = STEPS.get("refused", 0) + 1
    return lines[0]


@pytest.mark.parametrize("key,value", REFUSED_SETS)
@pytest.mark.parametrize("command", ["run", "params"])
def test_a_value_out_of_range_or_of_the_wrong_type_is_refused(stopped, command, key, value):
    main, folder = stopped
    before = sorted(p.name for p in folder.iterdir())
    argv = [command, "--preset", "smoke", "--set", f"{key}={value}"]
    line = refused(argv, *call(main, argv), folder, before)
    assert key in line


@pytest.mark.parametrize("argv,says", [
    (["bench", "--rounds", "1000000000000"], "--rounds"),
    (["bench", "--rounds", "-1"], "--rounds"),
    (["bench", "--repeats", "0"], "--repeats"),
    (["pretrain", "--out", "x.pt", "--skip-per-class", "1000000000"], "--skip-per-class"),
    (["pretrain", "--out", "x.pt", "--skip-per-class", "-1"], "--skip-per-class"),
    (["run", "--preset", "smoke", "--out", LONG], "components of at most 255 bytes"),
    (["run", "--preset", "smoke", "--out", f"sub/{LONG}/x"], "255 bytes"),
    (["run", "--preset", "smoke", "--out", ""], "--out"),
    (["run", "--preset", "smoke", "--set", "model.weights=/nonexistent/ü.pt"], "model.weights"),
    (["run", "--preset", "smoke", "--set", "data.name=npz"], ""),
    (["run", "--preset", "smoke", "--set", "data.name=npz", "data.path=/nonexistent.npz"], ""),
    (["run", "--preset", "nope"], "nope"),
    (["run", "--preset", "smoke", "--set", "ключ=1"], "ключ"),
])
def test_a_command_line_beyond_its_range_is_refused(stopped, tmp_path, monkeypatch, argv, says):
    main, _ = stopped
    monkeypatch.chdir(tmp_path)
    line = refused(argv, *call(main, argv), tmp_path, [])
    assert says in line


STUDY_REFUSED = [
    (["--results", ""], "--results"),
    (["--results", LONG], "255 bytes"),
    (["--storage", "foo://x"], "unknown scheme foo://"),
    (["--storage", "ftp://host/x"], "s3://"),
    (["--storage", ""], "--storage"),
    (["--storage", f"/tmp/{LONG}"], "255 bytes"),
    (["--seeds", "1000000"], "1..100"),
    (["--seeds", "0"], "--seeds"),
    (["--num-samples", "1000000"], "1..100000"),
    (["--num-samples", "0"], "--num-samples"),
    (["--set", "server.lr=0.1"], "the study varies server.lr"),
]


@pytest.mark.parametrize("dry", [True, False])
@pytest.mark.parametrize("flags_,says", STUDY_REFUSED)
def test_a_study_flag_beyond_its_range_is_refused(stopped, tmp_path, monkeypatch, flags_, says,
                                                  dry):
    from fcl.tune.cli import run_study_cli
    study = runpy.run_path(str(STUDY_SCRIPT))["STUDY"]
    monkeypatch.chdir(tmp_path)
    argv = ["--preset", "smoke", *(["--dry-run"] if dry else []), *flags_]
    if "--results" not in flags_:
        argv += ["--results", str(tmp_path / "results")]
    line = refused(argv, *call(lambda a: run_study_cli(study, a), argv), tmp_path, [])
    assert says in line


@settings(max_examples=300, deadline=None, database=None)
@given(st.data())
def test_a_value_inside_a_keys_range_parses_and_one_outside_is_refused(data):
    """Property over the config vocabulary: a number either passes the key's declared check and
    builds a config, or is refused with a ConfigError naming the key; no float key takes 1e308
    (each has a finite range)."""
    from fcl.config import ConfigError, with_overrides
    meta = {k: m for k, _, m, _ in iter_fields(RunConfig())}
    key = data.draw(st.sampled_from(FLOATS + INTS))
    typ = TYPES[key]
    value = data.draw(st.floats(-1e12, 1e12) if typ is float else st.integers(-10 ** 12, 10 ** 12))
    check_ = meta[key].get("check")
    try:
        with_overrides(RunConfig(), {key: str(value)})
        error = None
    except ConfigError as e:
        error = e
    if check_ is not None and not check_(value):
        assert error is not None and error.key == key and error.allowed, (key, value)
    elif error is not None:              # inside the range, refused by a rule across keys
        assert error.why and error.allowed, (key, value, str(error))
    if key != "run.divergence_loss":
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            with_overrides(RunConfig(), {key: "1e308"})


@pytest.mark.parametrize("command", ["figures", "claims"])
def test_an_analysis_over_a_folder_without_a_study_is_refused(tmp_path, command):
    from analysis.__main__ import main
    argv = [command, "--results", str(tmp_path)] + (
        ["--out", str(tmp_path / "out")] if command == "figures" else [])
    line = refused(argv, *call(main, argv), tmp_path, [])
    assert "no study found" in line


def test_zz_report_the_case_count():
    """Runs last in this file: how many command lines the fuzz tests tried (the closing note's
    number); `pytest -s` shows it."""
    print(f"\nfuzz: {sum(STEPS.values())} command lines ({STEPS}), {TALLY}")
    assert sum(STEPS.values()) == 0 or all(n > 0 for n in STEPS.values())
