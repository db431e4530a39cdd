"""The one error a bad key or value raises, below every module that checks one (the config,
the methods' rules, the loaders), so none of them needs the config to raise it."""
from __future__ import annotations

from typing import Any


def one_line(text: str) -> str:
    """`text` with every unprintable character (newline, tab, U+001E, ...) escaped: what a user
    typed can make an error message no more than one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


class ConfigError(ValueError):
    """A bad key or value; `str()` is the one line the CLI prints after `error: `."""

    def __init__(self, key: str, value: Any, why: str, allowed: str):
        # allowed as text now: a live list (registered methods) read later, elsewhere, could
        # name values this process did not have
        self.key, self.value, self.why, self.allowed = key, value, why, str(allowed)
        super().__init__(one_line(f"{key}={value}: {why}; allowed: {allowed}"))

    def __reduce__(self):
        # pickle rebuilds an exception as cls(*self.args), one argument here: Ray does that to
        # bring a trial's error to the driver, which then saw a TypeError instead of this line
        return type(self), (self.key, self.value, self.why, self.allowed)
