"""How long, as a log reader reads it: one formatter shared by a run's and a study's progress."""


def clock(seconds: float) -> str:
    """0:12, 4:05, 1:02:03."""
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
