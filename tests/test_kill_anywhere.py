"""A study killed at random moments and resumed each time ends with the rows of a study that
never stopped (`tests/kill_anywhere.py`; `python tests/kill_anywhere.py --kills 200
--sigterm-every 4 --folder DIR` for many more kills than the suite affords): 30 kills, every
fourth a SIGTERM, after which the driver exits 143 with its line wherever it was."""
import signal

from kill_anywhere import differences, kill_anywhere

KILL, TERM = signal.SIGKILL, signal.SIGTERM


def test_killed_anywhere_and_resumed_the_rows_are_the_uninterrupted_runs(local_ray, tmp_path):
    tally = kill_anywhere(tmp_path, local_ray, 30, seed=0, signals=(KILL, KILL, KILL, TERM))
    assert tally.kills == 30 and tally.by_signal["SIGTERM"] >= 5, tally
    assert set(tally.exits) <= {0}, tally.odd  # a driver that ended before its kill finished
    assert tally.silent == []                 # SIGTERM: exit 143 and its line, every time
    assert differences(tmp_path) == []
