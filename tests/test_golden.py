"""Byte-identical metrics of the golden smoke configs (tests/golden.py) against the stored JSON:
a refactor of the engine, the records or the Tune layer must not move a single number."""
import json

import pytest

from tests.golden import CONFIGS, GOLDEN, _exact, metrics


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_golden_metrics_unchanged(name):
    stored = json.loads(GOLDEN.read_text())[name]
    assert json.dumps(_exact(metrics(name)), sort_keys=True) == json.dumps(stored, sort_keys=True)
