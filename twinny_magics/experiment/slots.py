"""How many replies a server runs at once, for ``run(..., concurrency="auto")``.

llama.cpp says it two ways: ``GET /slots`` lists one entry per slot (when the server was not started
with the endpoint off) and ``GET /props`` has ``total_slots``. Both are asked; when both answer, the
smaller wins, so the experiment never runs more replies at once than the server says it has. A number
that is not a whole positive count (``-1``, ``"2"`` with letters, ``true``, ``1e400``) counts as not said;
a huge one is capped at :data:`MAX_SLOTS`. Other kinds, and a server that says nothing, get one slot:
a second reply at once would only wait in the server's queue, or change what a reply sees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from twinny_magics.contracts import Addressed
from twinny_magics.servers.asking import Ask, Steps, dicts, json_of, run_sync
from twinny_magics.servers.kinds import normalize_url
from twinny_magics.servers.numbers import checked_int
from twinny_magics.servers.wire import bearer

if TYPE_CHECKING:
    from collections.abc import Iterable

    from twinny_magics.contracts import ModelServer

#: The most replies run at once however many slots a server claims (a clear cap on a hostile answer).
MAX_SLOTS = 64


def said_slots(props: Any, slots: Any) -> int | None:
    """The slots a llama.cpp server says it has, from its ``/props`` and ``/slots`` JSON, or None. Pure."""
    said = []
    total = props.get("total_slots") if isinstance(props, dict) else None
    if isinstance(total, int | float) and not isinstance(total, bool) and total > MAX_SLOTS:
        said.append(MAX_SLOTS)  # a huge count (even one no int holds, 1e400) is a cap, not a number to use
    elif (counted := checked_int(total, 1, MAX_SLOTS)) is not None:
        said.append(counted)
    listed = dicts(slots)
    if listed:
        said.append(min(len(listed), MAX_SLOTS))
    return min(said) if said else None


def slot_steps(base_url: str, api_key: str | None = None) -> Steps[int | None]:
    """Ask a llama.cpp server's ``/props`` and ``/slots`` (in parallel) for its slots."""
    root = normalize_url(base_url)
    headers = bearer(api_key)
    asks = [Ask("GET", root + path, headers=headers) for path in ("/props", "/slots")]
    props, slots = yield asks
    return said_slots(json_of(props), json_of(slots))


def server_slots(server: ModelServer, client: httpx.Client | None = None) -> int:
    """How many replies ``server`` runs at once: its own answer on llama.cpp, else 1."""
    info = server.info if isinstance(server, Addressed) else None
    if server.kind != "llamacpp" or info is None:
        return 1
    return run_sync(slot_steps(info.base_url, info.api_key), client) or 1


def auto_concurrency(servers: Iterable[ModelServer], client: httpx.Client | None = None) -> int:
    """Replies to run at once over ``servers``: the fewest slots any of them has (each asked once)."""
    seen: dict[int, int] = {}
    for server in servers:
        if id(server) not in seen:
            seen[id(server)] = server_slots(server, client)
    return min(seen.values(), default=1)
