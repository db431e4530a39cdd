"""fcl's own stops of a study (`fcl.tune.stop_request`): why is recorded, and the driver gets
SIGINT (Tune's way to stop and keep its state) once, but again at each SIGTERM."""
import signal

import pytest

from fcl.tune import stop_request as sr


@pytest.fixture
def sent(monkeypatch):
    signals: list[tuple[int, int]] = []
    monkeypatch.setattr(sr.os, "kill", lambda pid, sig: signals.append((pid, sig)))
    sr.clear()
    yield signals
    sr.clear()


def test_the_first_request_signals_and_later_ones_only_record(sent):
    sr.request_stop(sr.DISK_FULL, "trial t1", ("/staging", "/storage"))
    sr.note_tune_stopping()
    sr.request_stop(sr.NO_NODE, "stopped: no live node can hold a trial")
    assert [s for _, s in sent] == [signal.SIGINT]
    assert [s.reason for s in sr.stops()] == [sr.DISK_FULL, sr.TUNE_STOPPING, sr.NO_NODE]
    assert sr.stops(sr.DISK_FULL)[0].paths == ("/staging", "/storage")
    assert sr.stops(sr.NO_NODE)[0].detail.startswith("stopped: no live node")
    assert sr.stops(sr.SIGTERM) == []


def test_each_sigterm_signals_as_a_second_ctrl_c_does(sent):
    sr.request_stop(sr.SIGTERM)
    sr.request_stop(sr.SIGTERM)
    assert [s for _, s in sent] == [signal.SIGINT, signal.SIGINT]


def test_a_stop_tune_reported_is_recorded_once_and_sends_nothing(sent):
    sr.note_tune_stopping()
    sr.note_tune_stopping()
    assert [s.reason for s in sr.stops()] == [sr.TUNE_STOPPING] and sent == []
    sr.request_stop(sr.DISK_FULL, "trial t2")      # after a Ctrl-C: fcl's first request signals
    assert [s for _, s in sent] == [signal.SIGINT]
    sr.clear()
    assert sr.stops() == []


def test_the_infeasible_watch_stops_once_no_live_node_holds_a_trial(sent, monkeypatch):
    from types import SimpleNamespace

    from fcl.tune import nodes
    live = [nodes.Node("10.0.0.1", 4.0, head=True), nodes.Node("10.0.0.2", 2.0)]
    monkeypatch.setattr(nodes, "alive_nodes", lambda: live)
    watch = nodes.InfeasibleWatch(cpus=3.0, gpus=0.0, every_s=0.0)
    trials = [SimpleNamespace(status="RUNNING"), SimpleNamespace(status="PENDING"),
              SimpleNamespace(status="TERMINATED")]
    watch.on_step_begin(0, trials)
    assert sent == [] and sr.stops() == []                 # the 4-CPU head holds one
    live.pop(0)                                            # the head is gone
    watch.on_step_begin(1, trials)
    watch.on_step_begin(2, trials)                         # stopped already: no second signal
    assert [s for _, s in sent] == [signal.SIGINT]
    (stop,) = sr.stops(sr.NO_NODE)
    assert stop.detail == ("stopped: no live node can hold a trial of 3 CPUs (the live nodes "
                           "have 2 CPUs); 2 trials unfinished, kept for --resume. Add a node "
                           "that size (or lower --cpus-per-trial / --gpus-per-trial)")
