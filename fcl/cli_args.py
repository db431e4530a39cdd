"""What every command line shares: `--preset P --set KEY=VALUE ...` into a `RunConfig`, the
checks made before any work (outputs writable, the device there), and the exit code of bad
input (one line `error: ...`, exit 2)."""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from fcl.config import ConfigError, RunConfig, one_line
from fcl.presets import PRESETS, preset

EXIT_USAGE = 2
EXIT_WRITE_FAILED = 1       # the work was done but its output could not be written
PROBE_BYTES = 64 * 1024     # written (and removed) in an output's folder before any work


class OneLineParser(argparse.ArgumentParser):
    """argparse, with its usage dump on a bad flag replaced by the one line `error: ...` and
    exit 2 that every other bad input gets (subcommands' parsers are of this class too)."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"error: {one_line(message)}; see `{self.prog} --help`\n")


def parse_sets(pairs: list[str]) -> dict[str, str]:
    """`["server.lr=0.5", ...]` -> `{"server.lr": "0.5"}`; a key given twice is refused (which
    one was meant is a guess)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(pair, "", "not of the form key=value",
                              "key=value, e.g. server.lr=0.5")
        key = key.strip()
        if key in out:
            raise ConfigError(key, value.strip(), f"given twice (also {key}={out[key]})",
                              "each key once")
        out[key] = value.strip()
    return out


def add_config_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default="local", choices=sorted(PRESETS),
                   help="starting point (default: local)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="override config keys (see the list below)")


def config_from_args(args: argparse.Namespace) -> RunConfig:
    return preset(args.preset, parse_sets(args.set))


def check_device(cfg: RunConfig) -> None:
    """`run.device=cuda` on a machine without one: refused before any work. (The config itself
    allows it: a study driver may plan trials for GPU workers it does not have.)"""
    import torch
    if cfg.run.device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("run.device", "cuda", "no CUDA device on this machine",
                          "auto, cpu")


NAME_MAX = 255        # bytes of one path component on Linux and macOS file systems


def check_name_lengths(flag: str, path: str) -> None:
    """A path component longer than the file system takes fails at the first write (OSError
    'File name too long', a traceback from deep in the work): refused in one line."""
    for part in Path(path).parts:
        if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX:
            raise ConfigError(flag, f"{part[:24]}...", f"a path component of "
                              f"{len(part.encode('utf-8', 'surrogateescape'))} bytes",
                              f"components of at most {NAME_MAX} bytes")


def check_output(flag: str, path: str, kind: str = "folder", need_bytes: int = 0) -> None:
    """Refuse (ConfigError) an output that cannot be written, before the work that fills it:
    `kind` folder (created if missing) or file; an existing path of the other kind, a path under
    a file, a folder that refuses a file (read-only, full), or less than `need_bytes` free.
    Leaves nothing behind: the probe is a temporary file in the nearest existing folder."""
    if not path:
        raise ConfigError(flag, path, "empty", f"a {kind} path")
    check_name_lengths(flag, path)
    target = Path(path).expanduser()
    if kind == "folder" and target.exists() and not target.is_dir():
        raise ConfigError(flag, path, "an existing file, not a folder", "a folder (new or "
                          "existing) where files can be written")
    if kind == "file" and target.is_dir():
        raise ConfigError(flag, path, "an existing folder, not a file", "a file path")
    folder = target if kind == "folder" else target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ConfigError(flag, path, f"{folder} is a file, not a folder", "a path whose "
                          "folders are folders")
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".tmp-probe-")
        try:
            os.write(fd, b"\0" * PROBE_BYTES)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as e:
        raise ConfigError(flag, path, f"cannot write in {folder} ({e.strerror or e})",
                          "a writable folder with free space") from None
    free = shutil.disk_usage(folder).free
    if free < need_bytes:
        raise ConfigError(flag, path, f"{free / 1e6:.1f} MB free in {folder}, about "
                          f"{need_bytes / 1e6:.1f} MB needed", "a folder with more free space")


def write_failed(flag: str, path: str, e: OSError) -> str:
    """The one line for an output that failed after the work (e.g. the disk filled meanwhile)."""
    return (f"error: {flag}={path}: writing failed after the work ({e.strerror or e}); what "
            "it holds is incomplete, the summary above is not")
