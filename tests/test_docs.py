"""The documentation: the site builds strictly, the configuration reference is current, README
stays short, and every example of README.md and docs/ runs at smoke size (tests/docs_examples.py).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from docs_examples import (PAGES, ROOT, blocks, commands, excerpt_lines, is_set_up,
                           python_at_smoke_size, smoke_command)

EXAMPLE_TIMEOUT_S = 900          # a page's examples on a busy 2-core machine
README_MAX_LINES = 200


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_configuration_reference_is_current():
    hooks = _hooks()
    page = (ROOT / "docs" / "configuration.md").read_text()
    assert hooks.BEGIN in page and hooks.END in page
    assert hooks.with_reference(page) == page, \
        "docs/configuration.md is stale: run `python docs/hooks.py`"


def test_configuration_reference_has_every_key_of_run_help():
    """The reference and `fcl run --help` come from one source: every key of one is in the other."""
    from fcl.config import describe_keys, key_rows
    reference = _hooks().config_reference()
    for key, *_ in key_rows():
        assert f"`{key}`" in reference and f"  {key} " in describe_keys()


def test_site_builds_strictly(tmp_path):
    """`mkdocs build --strict`: a broken link, a missing page or a bad API reference fails it."""
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(site)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    home = (site / "index.html").read_text()
    assert "Set-up: two commands" in home                         # README is the home page
    assert (site / "figures" / "fig4a.png").is_file()              # the figures travel with it
    assert (site / "figures" / "drift" / "fig4a.png").is_file()    # README's, from the drift regime
    assert "run.precision" in (site / "configuration" / "index.html").read_text()
    assert "run_study" in (site / "api" / "index.html").read_text()


def test_every_block_says_whether_it_runs():
    """A block that is not run says why; a marker is one of the two forms."""
    for page in PAGES:
        for block in blocks(page):
            marker = block.marker or ""
            assert marker == "" or marker.startswith("not run: ") and len(marker) > 12 \
                or block.exit_code or block.dry_run or block.excerpt_of, \
                f"{block.where}: bad example marker {marker!r}"
            if block.dry_run:
                assert all(len(c) > 1 and c[1].startswith("studies/") for c in commands(block.code)), \
                    f"{block.where}: only study commands have a dry run"


def test_excerpts_match_their_source():
    """A block shown as an excerpt of a source file is still in that file, line for line."""
    excerpts = [b for page in PAGES for b in blocks(page) if b.excerpt_of]
    assert excerpts
    for block in excerpts:
        source = {line.strip() for line in block.excerpt_of.read_text().splitlines()}
        missing = [line for line in excerpt_lines(block.code) if line not in source]
        assert not missing, f"{block.where}: not in {block.excerpt_of.name}: {missing}"


def test_smoke_rules():
    tmp = Path("/x")
    env, argv = smoke_command(["RAY_ADDRESS=h:1", "fcl", "run", "--preset", "local"], tmp)
    assert env == {"RAY_ADDRESS": "h:1"} and argv[1:] == ["-m", "fcl", "run", "--preset", "smoke"]
    _, argv = smoke_command(["python", "studies/optimizers.py", "--results", "/tmp/d"], tmp)
    assert argv[1:] == ["studies/optimizers.py", "--results", "/x/d", "--preset", "smoke",
                        "--seeds", "1"]
    _, argv = smoke_command(["fcl", "study", "optimizers", "--results", "/tmp/d"], tmp)
    assert argv[1:] == ["-m", "fcl", "study", "optimizers", "--results", "/x/d", "--preset",
                        "smoke", "--seeds", "1"]
    assert commands("a b && c \\\n  d  # note\n") == [["a", "b"], ["c", "d"]]


def _workdir(tmp_path: Path) -> Path:
    """A folder that looks like the repository to the examples: code linked, stored results
    copied (an example may write beside them), figures/ empty."""
    work = tmp_path / "work"
    work.mkdir()
    for name in ("studies", "analysis", "benchmarks", "docs", "tests", "mkdocs.yml"):
        (work / name).symlink_to(ROOT / name)
    for name in ("results", "results-pretrained"):
        shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns(".tune", "*.db"))
    return work


def _run(argv: list[str], env: dict, cwd: Path, where: str, expect: int) -> None:
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=EXAMPLE_TIMEOUT_S)
    print(f"{where}: {time.perf_counter() - t0:.1f} s: {' '.join(argv[1:])[:100]}")
    tail = (done.stdout[-3000:] + done.stderr[-3000:])
    assert done.returncode == expect, f"{where}: {' '.join(argv)} exited {done.returncode}:\n{tail}"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_examples_run(page, tmp_path, local_ray):
    runnable = [b for b in blocks(page) if b.runs]
    if not runnable:
        pytest.skip(f"{page.name} has no runnable example")
    work = _workdir(tmp_path)
    env = {**os.environ, "FCL_OFFLINE": "1", "RAY_ADDRESS": local_ray,
           "PYTHONPATH": os.pathsep.join([str(work), os.environ.get("PYTHONPATH", "")])}
    for block in runnable:
        if block.language == "python":
            script = work / f"example_{block.line}.py"
            script.write_text(python_at_smoke_size(block.code, tmp_path))
            _run([sys.executable, str(script)], env, work, block.where, block.exit_code)
            continue
        steps = [c for c in commands(block.code) if not is_set_up(c)]
        for i, words in enumerate(steps):
            extra, argv = smoke_command(words, tmp_path)
            if block.dry_run:
                argv.append("--dry-run")
            expect = block.exit_code if i == len(steps) - 1 else 0
            _run(argv, {**env, **extra}, work, block.where, expect)
