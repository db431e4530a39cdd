"""Ray Client connects are tried a few times before the one-line error, which says what was
tried (a head whose client server is still starting refuses a first connect)."""
import pytest

from fcl.config import ConfigError
from fcl.tune import cluster


class Flaky:
    """An `init` that fails `failures` times with Ray Client's ConnectionError, then works."""

    def __init__(self, failures: int):
        self.failures, self.calls = failures, 0

    def __call__(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError("ray client connection timeout")


def test_a_connect_that_fails_twice_then_works_is_retried(monkeypatch):
    monkeypatch.setattr(cluster.ray, "shutdown", lambda: None)
    init = Flaky(2)
    cluster.client_init(init, "ray://head:10001", tries=3, pause_s=0)
    assert init.calls == 3


def test_a_connect_that_never_works_is_one_line_saying_what_was_tried(monkeypatch):
    monkeypatch.setattr(cluster.ray, "shutdown", lambda: None)
    init = Flaky(5)
    with pytest.raises(ConfigError) as e:
        cluster.client_init(init, "ray://head:10001", tries=3, pause_s=0)
    assert init.calls == 3
    line = str(e.value)
    assert "\n" not in line and line.startswith(
        "--address=ray://head:10001: Ray Client could not connect in 3 tries, 0 s apart (the "
        "last: ray client connection timeout)")


def test_another_error_is_not_retried(monkeypatch):
    calls = []

    def init():
        calls.append(1)
        raise ValueError("not a connection problem")
    with pytest.raises(ValueError):
        cluster.client_init(init, "ray://head:10001", tries=3, pause_s=0)
    assert calls == [1]
