"""A key only one method reads is refused, in one line naming that method, where a user sets
it for a run of another method (`fcl.config.check_read`); a study checks its `--set` against
the methods its trials run."""
from __future__ import annotations

import pytest

from fcl.config import ConfigError, RunConfig, check_read, method_keys
from fcl.presets import preset

DEFAULTS = RunConfig().to_flat()
OWN = {"zerofl": {"model.zerofl_sparsity": "0.5"}}    # ZeroFL is itself only when sparse


@pytest.mark.parametrize("picker,method,key", [(p, m, k) for (p, m), keys in method_keys().items()
                                               for k in keys])
def test_every_method_key_is_refused_under_another_method_and_read_under_its_own(picker,
                                                                                 method, key):
    assert key in DEFAULTS and picker in DEFAULTS
    value = str(DEFAULTS[key])
    other = "sgd" if picker == "client.algorithm" else (
        "full" if method != "full" else "lora")
    with pytest.raises(ConfigError, match=f"^{key}={value}: read only by {picker}={method}; "
                                          f"this run has {picker}={other}, which ignores it"):
        preset("smoke", {picker: other, key: value})
    preset("smoke", {picker: method, key: value, **OWN.get(method, {})})   # its own reads it
    preset("smoke", {picker: other})                        # unset: nothing to refuse


def test_a_preset_may_set_them_for_every_method():
    cfg = preset("flocora-cifar10-lowrank", {"model.adapter": "full"})   # LoRA's rank is there
    assert cfg.model.lora_rank == 32 and cfg.model.adapter == "full"


def test_a_study_set_is_checked_against_its_trials():
    lora, full = preset("smoke", {"model.adapter": "lora"}), preset("smoke")
    check_read([full, lora], {"model.lora_rank": "8"})          # one trial reads it
    with pytest.raises(ConfigError, match="its trials have model.adapter=nettailor,"):
        check_read([full, full], {"model.lora_rank": "8"})
