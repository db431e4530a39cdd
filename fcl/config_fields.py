"""What a config field is: its help, its allowed values and range (`opt`), and how a value
given as text (`--set`, JSON, Tune) is parsed into the field's type and checked (`parse_field`,
`check_value`), with "did you mean" for a typo. `fcl.config` builds the sections from these."""
from __future__ import annotations

import difflib
import math
from dataclasses import field
from typing import Any, Callable, Iterable

from fcl.config_error import ConfigError
from fcl.methods import registry


class Registered:
    """The allowed values of a key that names a registered thing (model.adapter: the methods
    in `fcl.methods.registry`), read when asked, so a method registered later is allowed."""

    def __init__(self, names: Callable[[], tuple[str, ...]]):
        self._names = names

    def __iter__(self):
        return iter(self._names())

    def __contains__(self, value: Any) -> bool:
        return value in self._names()

    def __len__(self) -> int:
        return len(self._names())

    def __str__(self) -> str:
        return ", ".join(self._names())


class MethodsHelp:
    """model.adapter's help: every registered method's own summary, read when asked."""

    def __str__(self) -> str:
        return "the continual method (fcl/methods/<name>/): " + "; ".join(
            m.summary for m in registry.methods().values())


def opt(default: Any, help: str, choices: tuple | None = None,
        check: Callable[[Any], bool] | None = None, allowed: str | None = None,
        aliases: dict[str, Any] | None = None) -> Any:
    """A config field with its documentation and its range check; `aliases` are words a user
    may type for a value (eval.batch_size=auto is 0), turned into it where the value is parsed."""
    meta = {"help": help, "choices": choices, "check": check, "aliases": aliases or {},
            "allowed": allowed or (choices if isinstance(choices, Registered) else
                                   ", ".join(map(str, choices)) if choices else None)}
    return field(default=default, metadata=meta)


POSITIVE = dict(check=lambda v: v > 0, allowed="> 0")
NON_NEGATIVE = dict(check=lambda v: v >= 0, allowed=">= 0")
PROBABILITY = dict(check=lambda v: 0 <= v < 1, allowed="0 <= p < 1")
BETA = dict(check=lambda v: 0 <= v < 1, allowed="0 <= beta < 1")
# a field that takes true, false or auto (run.channels_last, run.client_batching): the words of
# a bool are aliases, and a Python bool given for such a field reads as its word
BOOL_WORDS = {**dict.fromkeys(("true", "1", "yes", "on"), "true"),
              **dict.fromkeys(("false", "0", "no", "off"), "false")}
BOOL_OR_AUTO = dict(choices=("auto", "true", "false"), aliases={**BOOL_WORDS, "auto": "auto"})


def check_value(key: str, value: Any, meta: dict) -> None:
    choices, check = meta.get("choices"), meta.get("check")
    if choices and value not in choices:
        hint = did_you_mean(value, map(str, choices)) if isinstance(value, str) else ""
        raise ConfigError(key, value, "unknown value", hint + str(meta["allowed"]))
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(key, value, "not a finite number", meta.get("allowed") or "a number")
    if check and not check(value):
        raise ConfigError(key, value, "out of range", meta["allowed"])


TYPE_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def parse_value(key: str, text: Any, typ: type) -> Any:
    """Turn a `--set` string (or a JSON/Tune value) into the field's type, or raise ConfigError."""
    if not isinstance(text, str):
        if typ is float and isinstance(text, (int, float)) and not isinstance(text, bool):
            return float(text)
        if isinstance(text, typ) and not (typ is int and isinstance(text, bool)):
            return text
        raise ConfigError(key, text, f"not {TYPE_WORDS[typ]}", TYPE_WORDS[typ])
    try:
        if typ is bool:
            low = text.strip().lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return low in ("true", "1", "yes")
        if typ is int:
            return int(text)
        if typ is float:
            return float(text)
        return text
    except ValueError:
        raise ConfigError(key, text, f"not {TYPE_WORDS[typ]}",
                          "true or false" if typ is bool else TYPE_WORDS[typ]) from None


def parse_field(key: str, raw: Any, typ: type, meta: dict) -> Any:
    """`parse_value`, with the field's aliases (words for values) and its allowed values in
    the error of a value that is neither."""
    aliases = meta.get("aliases") or {}
    word = (raw.strip().lower() if isinstance(raw, str)
            else str(raw).lower() if isinstance(raw, bool) else None)
    if word in aliases:
        return aliases[word]
    try:
        return parse_value(key, raw, typ)
    except ConfigError as e:
        if not aliases:
            raise
        raise ConfigError(key, raw, e.why, meta["allowed"]) from None


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`did you mean client.lr? ` for a key close to a known one (a typo), else ''."""
    close = difflib.get_close_matches(key, list(known), n=2, cutoff=0.75)
    return f"did you mean {' or '.join(close)}? " if close else ""
