"""A small tmpfs for tests that need a disk root cannot write or fill (CI runs as root, which
ignores mode bits: a read-only or a full disk has to be a real mount)."""
import contextlib
import os
import subprocess

import pytest


@contextlib.contextmanager
def tmpfs(folder, options="ro,size=1m"):
    """A tmpfs mounted at `folder` with `options`, unmounted after the block; skips the test
    where mount is refused."""
    os.makedirs(folder, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                       capture_output=True, text=True, check=False)
    if p.returncode:
        pytest.skip(f"mount -t tmpfs not permitted here: {p.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
