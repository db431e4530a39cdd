"""What joining a running cluster (`--address HOST:PORT`) needs that Ray has no public API
for, asked of its GCS before `ray.init` (~10 ms a call): whether it wants a token, and
whether this machine is one of its nodes. Like `fcl.tune.ray_private`, the one place these
private names are used; tests/test_cluster_faults.py fails on a Ray that moves them.

Token auth: `ray start` (Ray >= 2.52) turns it on and keeps the token in ~/.ray/auth_token,
but `ray.init(address=...)` sends it only when RAY_AUTH_MODE=token, and Ray reads that
variable into its config when `ray` is imported: set later, it is ignored (seen: the GCS then
answers `InvalidAuthToken`). So where the GCS refuses an unauthenticated call, `use_token`
sets it and has Ray read its config again (what Ray itself does for a local cluster,
`authentication_token_setup._enable_token_auth`)."""
from __future__ import annotations

import contextlib
import os
import sys

from ray._private import services
from ray._raylet import Config, GcsClient
from ray.exceptions import AuthenticationError

TIMEOUT_S = 5


def needs_token(address: str) -> bool:
    """Whether the GCS at `address` refuses a call without a token."""
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        return False                     # already on: nothing to switch
    try:
        with quiet_fd2():                # Ray's C++ client logs the refusal we expect
            GcsClient(address=address).internal_kv_get(b"session_name", b"session",
                                                        timeout=TIMEOUT_S)
    except AuthenticationError:
        return True
    except Exception:                    # noqa: BLE001  (unreachable: ray.init says so)
        return False
    return False


@contextlib.contextmanager
def quiet_fd2():
    """File descriptor 2 (where C++ logs go) on /dev/null for the block."""
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def use_token() -> None:
    """Send the token from now on (in this process and the ones it starts)."""
    os.environ["RAY_AUTH_MODE"] = "token"
    Config.initialize("")


def local_node_ids(address: str) -> list[str] | None:
    """The cluster's live nodes that run on this machine (a raylet on it: what `ray.init`
    attaches a driver to); None where the GCS cannot be asked (ray.init then says why)."""
    here = set(services.find_node_ids())
    try:
        infos = GcsClient(address=address).get_all_node_info(timeout=TIMEOUT_S)
    except Exception:                    # noqa: BLE001
        return None
    return [nid.hex() for nid, info in infos.items()
            if nid.hex() in here and info.state == 0]             # GcsNodeState.ALIVE
