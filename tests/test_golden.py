"""Byte-identical metrics of the golden smoke configs (tests/golden.py) against the stored JSON of
this machine's kind: a refactor of the engine, the records or the Tune layer must not move a
single number. On a machine kind the file does not hold, counts and bytes must still be equal
and floats equal to 1e-4 (other CPU kernels sum in another order)."""
import json

import pytest

from tests.golden import CONFIGS, _exact, close, machine_kind, metrics, stored

KINDS = stored()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_golden_metrics_unchanged(name):
    now = _exact(metrics(name))
    if machine_kind() in KINDS:
        expected = KINDS[machine_kind()][name]
        assert json.dumps(now, sort_keys=True) == json.dumps(expected, sort_keys=True)
    else:
        other = sorted(KINDS)[0]
        differences = close(now, KINDS[other][name])
        assert not differences, f"{machine_kind()} against {other}: {differences[:10]}"


def test_the_stored_kinds_agree_to_1e4():
    """Every machine kind's golden set holds the same counts and near-equal floats."""
    kinds = sorted(KINDS)
    for kind in kinds[1:]:
        for name in CONFIGS:
            assert not close(KINDS[kind][name], KINDS[kinds[0]][name]), (kind, name)
