"""docs/clusters.md and studies/cluster/netns_cluster.sh agree: the commands the page gives for
starting a cluster and submitting a Ray job are the ones the script runs on its nodes (with
each node's own IP, CPUs and temp dir added), so a run of the script checks the page."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "clusters.md"
SCRIPT = ROOT / "studies" / "cluster" / "netns_cluster.sh"


def _commands(text: str) -> list[str]:
    """Shell commands, continuation lines joined, comments dropped, spaces collapsed."""
    joined = re.sub(r"\\\n\s*", " ", text)
    lines = (line.split(" #")[0].strip() for line in joined.splitlines())
    return [" ".join(line.split()) for line in lines if line and not line.startswith("#")]


def _in_script_words(command: str) -> str:
    """A page's command as the script writes it: its `ray`, its head and its port."""
    command = re.sub(r"(^|\s)ray ", r'\1"$RAY" ', command)
    return command.replace("HEAD:6379", "$HEAD:$PORT").replace("http://HEAD", "http://$HEAD")


def _page_blocks() -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", PAGE.read_text(), re.S | re.M)


def test_the_script_starts_its_nodes_with_the_pages_commands():
    start = next(b for b in _page_blocks() if "ray start --head" in b)
    script = " ".join(_commands(SCRIPT.read_text()))
    commands = _commands(start)
    assert len(commands) == 3
    for command in commands:
        words = _in_script_words(command).replace("--port 6379", "--port $PORT")
        assert words in script, f"{command!r} is not what studies/cluster/netns_cluster.sh runs"


def test_the_script_submits_its_job_with_the_pages_command():
    ways = next(b for b in _page_blocks() if "ray job submit" in b)
    submit = next(c for c in _commands(ways) if "ray job submit" in c)
    study = submit.index("python studies/stragglers.py --preset smoke") + len(
        "python studies/stragglers.py --preset smoke")
    script = " ".join(_commands(SCRIPT.read_text()))
    assert _in_script_words(submit[:study]) in script
