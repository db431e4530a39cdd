"""torchvision's `download=True`, where the network allows it, as one policy for every loader.

A loader whose files are missing calls `try_download`; it runs torchvision's downloader (which
checks the archive's MD5) unless the environment says `FCL_OFFLINE=1`, and turns any failure
into a one-line `DataError` that says what was expected and how to get it by hand.
"""
from __future__ import annotations

import os
from typing import Callable

from fcl.data.image_dataset import DataError


def offline() -> bool:
    """`FCL_OFFLINE=1`: never touch the network (clusters without it, and the tests)."""
    return os.environ.get("FCL_OFFLINE", "").strip().lower() not in ("", "0", "false", "no")


def try_download(fetch: Callable[[], object], missing: str) -> None:
    """Run `fetch()` (a torchvision download); `missing` is the error line's text when the files
    are not there and cannot be fetched."""
    if offline():
        raise DataError(f"{missing} (not downloaded: FCL_OFFLINE is set)")
    try:
        fetch()
    except Exception as e:  # noqa: BLE001  (URLError, socket errors, a bad MD5, a full disk)
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DataError(f"{missing} (download failed: {why[:160]})") from None
