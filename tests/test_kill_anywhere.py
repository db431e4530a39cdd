"""A study killed at random moments and resumed each time ends with the rows of a study that
never stopped (`tests/kill_anywhere.py`; `python tests/kill_anywhere.py --kills 200 --folder
DIR` for many more kills than the suite affords): with `kill -9`, and with SIGTERM."""
import signal

import pytest

from kill_anywhere import differences, kill_anywhere


@pytest.mark.parametrize("sig, kills", [(signal.SIGKILL, 5), (signal.SIGTERM, 2)],
                         ids=["kill-9", "sigterm"])
def test_killed_anywhere_and_resumed_the_rows_are_the_uninterrupted_runs(local_ray, tmp_path,
                                                                         sig, kills):
    tally = kill_anywhere(tmp_path, local_ray, kills, seed=int(sig), sig=sig)
    assert tally.kills == kills
    assert set(tally.exits) <= {0}            # a driver that ended before its kill finished
    assert differences(tmp_path) == []
