"""Config parsing and validation: one clear error per bad key or value."""
import pytest

from fcl.config import ConfigError, RunConfig, describe_keys, from_flat, with_overrides
from fcl.presets import PRESETS, preset


def test_overrides_parse_by_field_type():
    cfg = with_overrides(RunConfig(), {"server.lr": "0.25", "rounds": "20",
                                       "server.bias_correction": "true", "schedule.order": "sync"})
    assert cfg.server.lr == 0.25 and cfg.rounds == 20 and cfg.server.bias_correction is True
    assert cfg.schedule.order == "sync"


@pytest.mark.parametrize("key,value,fragment", [
    ("data.alpha", "0", "data.alpha=0.0: out of range; allowed: 0 < alpha <= 1e6"),
    ("participation.fraction", "1.5", "allowed: 0 < fraction <= 1"),
    ("rounds", "7", "not a multiple of data.num_tasks"),
    ("client.lr", "-0.1", "client.lr=-0.1: out of range"),
    ("server.optimizer", "adam", "allowed: fedsgd, fedadam, fedadagrad, fedyogi"),
    ("nope.key", "1", "unknown key"),
    ("client.local_epochs", "two", "not an integer"),
    ("server.lr", "nan", "not a finite number"),
    ("eval.batch_size", "big", "eval.batch_size=big: not an integer; allowed: auto or a positive "
                               "integer"),
    ("eval.batch_size", "-1", "eval.batch_size=-1: out of range; allowed: auto or a positive "
                              "integer"),
])
def test_bad_values_raise_one_line(key, value, fragment):
    with pytest.raises(ConfigError) as e:
        with_overrides(RunConfig(), {key: value})
    assert fragment in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("text", ["auto", "AUTO", " auto", 0])
def test_eval_batch_size_auto_is_stored_as_0_and_round_trips(text):
    cfg = with_overrides(RunConfig(), {"eval.batch_size": text})
    assert cfg.eval.batch_size == 0 and from_flat(cfg.to_flat()) == cfg
    assert with_overrides(RunConfig(), {"eval.batch_size": "256"}).eval.batch_size == 256


def test_help_shows_the_word_of_an_aliased_value():
    from fcl.config import describe_keys
    auto = with_overrides(RunConfig(), {"eval.batch_size": "auto"})
    line = next(x for x in describe_keys(auto).splitlines() if "eval.batch_size" in x)
    assert "default 'auto'" in line and "auto or a positive integer" in line


def test_flat_round_trip():
    cfg = preset("smoke", {"server.tau": "0.1"})
    assert from_flat(cfg.to_flat()) == cfg


def test_every_preset_is_valid_and_every_key_documented():
    for name in PRESETS:
        preset(name)
    text = describe_keys()
    for key in RunConfig().to_flat():
        assert key in text


def test_config_is_frozen_and_picklable():
    import pickle
    cfg = preset("local")
    with pytest.raises(Exception):
        cfg.rounds = 3
    assert pickle.loads(pickle.dumps(cfg)) == cfg


@pytest.mark.parametrize("backbone,width,norm,groups,allowed", [
    ("resnet_tiny", 16, "group", 3, ("does not divide 16, the channels of a resnet_tiny layer "
                                     "at model.width=16; allowed: a divisor of 16")),
    ("resnet_tiny", 6, "group", 4, "does not divide 6"),
    ("resnet8", 16, "group", 128, "a resnet8 layer; allowed: a divisor of 64"),
    ("resnet_tiny", 16, "batch", 3, None),                               # no GroupNorm at all
    ("resnet18", 16, "group", 64, None),
    ("resnet_tiny", 6, "group", 6, None),
])
def test_norm_groups_is_checked_with_the_config_by_the_rule_the_model_applies(
        backbone, width, norm, groups, allowed):
    from fcl.models.backbone import build_backbone
    sets = {"model.backbone": backbone, "model.width": width, "model.norm": norm,
            "model.norm_groups": groups}
    if allowed is None:
        cfg = with_overrides(RunConfig(), sets)
        build_backbone(backbone, 1, norm, width, 0, norm_groups=groups)   # and the model builds
        assert cfg.model.norm_groups == groups
        return
    with pytest.raises(ConfigError) as e:
        with_overrides(RunConfig(), sets)
    assert e.value.key == "model.norm_groups" and allowed in str(e.value)
    with pytest.raises(ValueError, match="model.norm_groups"):            # the model agrees
        build_backbone(backbone, 1, norm, width, 0, norm_groups=groups)


@pytest.mark.parametrize("key,value,fragment", [
    ("model.width", "257", "allowed: 1 <= width <= 256"),      # 10**12 asked for 36 TB
    ("model.lora_rank", "1025", "allowed: 1 <= r <= 1024"),
    ("model.input_size", "1025", "allowed: 0 <= S <= 1024"),
])
def test_sizes_that_cannot_be_allocated_are_out_of_range(key, value, fragment):
    with pytest.raises(ConfigError, match=fragment):
        with_overrides(RunConfig(), {key: value})


def test_an_error_is_one_line_whatever_the_value_holds():
    from fcl.config import one_line
    assert one_line("plain é ∞") == "plain é ∞"
    assert one_line("a\nb\x1ec\td") == "a\\nb\\x1ec\\td"
    e = ConfigError("data.root", "x\ny\u2028z", "no such file", "a path")
    assert str(e) == "data.root=x\\ny\\u2028z: no such file; allowed: a path"


@pytest.mark.parametrize("raw, stored", [("auto", "auto"), ("AUTO", "auto"), ("true", "true"),
                                         ("yes", "true"), ("1", "true"), (True, "true"),
                                         ("false", "false"), ("off", "false"), (False, "false")])
@pytest.mark.parametrize("key", ["run.channels_last", "run.client_batching"])
def test_bool_or_auto_keys_take_auto_and_the_words_of_a_bool(key, raw, stored):
    """A Python bool reads as its word, so stored results that hold a bool column (the studies
    before `auto`) and code that passes True/False give the same config."""
    cfg = with_overrides(RunConfig(), {key: raw})
    assert cfg.to_flat()[key] == stored and from_flat(cfg.to_flat()) == cfg


def test_bad_channels_last_names_the_allowed_values():
    with pytest.raises(ConfigError) as e:
        with_overrides(RunConfig(), {"run.channels_last": "nhwc"})
    assert str(e.value) == "run.channels_last=nhwc: unknown value; allowed: auto, true, false"


def test_a_key_that_took_auto_keeps_the_trial_id_of_its_bool():
    import hashlib
    import json
    from fcl.results_io import config_hash
    cfg = with_overrides(RunConfig(), {"run.client_batching": "true",
                                       "run.channels_last": "false"})
    flat = {**cfg.to_flat(), "run.client_batching": True, "run.channels_last": False}
    from fcl.results_io import added_keys
    for key in added_keys():                   # keys added later, left out at their defaults
        del flat[key]
    old = hashlib.blake2b(json.dumps(flat, sort_keys=True, default=str).encode(),
                          digest_size=6).hexdigest()
    assert config_hash(cfg) == old
    assert config_hash(with_overrides(cfg, {"run.client_batching": "auto"})) != old


def test_run_divergence_loss_at_its_default_keeps_the_trial_id_of_a_config_without_it():
    """Studies stored before run.divergence_loss existed keep their trial ids; another bound
    is another trial."""
    import hashlib
    import json
    from fcl.results_io import config_hash
    cfg = with_overrides(RunConfig(), {"run.channels_last": "false"})
    from fcl.results_io import added_keys    # the others were added later still
    flat = {k: v for k, v in cfg.to_flat().items() if k not in added_keys()}
    flat.update({"run.client_batching": False, "run.channels_last": False})
    old = hashlib.blake2b(json.dumps(flat, sort_keys=True, default=str).encode(),
                          digest_size=6).hexdigest()
    assert config_hash(cfg) == old
    assert config_hash(with_overrides(cfg, {"run.divergence_loss": 0.0})) != old


def test_a_mistyped_value_gets_the_close_allowed_one():
    with pytest.raises(ConfigError) as e:
        with_overrides(RunConfig(), {"server.optimizer": "fedadm"})
    assert str(e.value) == ("server.optimizer=fedadm: unknown value; allowed: did you mean "
                            "fedadam? fedsgd, fedadam, fedadagrad, fedyogi")
