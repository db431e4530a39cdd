import os
from pathlib import Path

import pandas as pd
import pytest

from fcl.atomic_file import atomic_path
from fcl.results_io import write_parquet_atomic


def test_written_file_has_the_umask_mode_and_no_temp_is_left(tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "sub" / "rows.parquet"
        write_parquet_atomic(pd.DataFrame({"a": [1, 2]}), str(path))
    finally:
        os.umask(old)
    assert pd.read_parquet(path)["a"].tolist() == [1, 2]
    assert path.stat().st_mode & 0o777 == 0o644          # not mkstemp's 0600
    assert [p.name for p in path.parent.iterdir()] == ["rows.parquet"]


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path):
    path = tmp_path / "page.html"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(path) as tmp:
            Path(tmp).write_text("half")
            raise RuntimeError("disk full")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]


def test_write_torch_atomic_gives_the_same_bytes_whatever_the_temp_name(tmp_path):
    import torch

    from fcl.atomic_file import write_torch_atomic
    obj = {"w": torch.arange(6.0).reshape(2, 3)}
    a = write_torch_atomic(obj, tmp_path / "a.pt")
    b = write_torch_atomic(obj, tmp_path / "sub.pt")
    assert a == b == (tmp_path / "a.pt").read_bytes() == (tmp_path / "sub.pt").read_bytes()
    assert torch.equal(torch.load(tmp_path / "a.pt", weights_only=True)["w"], obj["w"])
