"""How many replies a server runs at once, for ``run(..., concurrency="auto")``.

llama.cpp says it two ways: ``GET /slots`` lists one entry per slot (when the server was not started
with the endpoint off) and ``GET /props`` has ``total_slots``. Both are asked; when both answer, the
smaller wins, so the experiment never runs more replies at once than the server says it has. A LiteLLM
proxy says it per deployment: ``GET /model/info`` lists each deployment of a model name with its
``litellm_params``, where ``max_parallel_requests`` is the most the proxy sends it at once; the proxy
runs the sum over the name's deployments (one for a deployment that does not say). A number that is not
a whole positive count (``-1``, ``"2"`` with letters, ``true``, ``1e400``) counts as not said; a huge one
is capped at :data:`MAX_SLOTS`. Ollama (``OLLAMA_NUM_PARALLEL`` is in no route it answers), vLLM (its
``/v1/models`` lists ``max_model_len``, not ``max_num_seqs``), other kinds, and a server that says
nothing get one slot: a second reply at once would only wait in the server's queue, or change what a
reply sees. Give ``concurrency=N`` for those.
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


def said_parallel(info: Any, model: str | None) -> int | None:
    """The replies a LiteLLM proxy runs at once for ``model``, from its ``/model/info`` JSON, or None. Pure.

    Each deployment of the name counts its ``max_parallel_requests`` (1 when it does not say one).
    """
    entries = dicts(info.get("data")) if isinstance(info, dict) else []
    if model is not None:
        wanted = model.lower()
        entries = [e for e in entries if str(e.get("model_name", "")).lower() == wanted]
    if not entries:
        return None
    total = 0
    for entry in entries[: MAX_SLOTS + 1]:
        params = entry.get("litellm_params")
        said = params.get("max_parallel_requests") if isinstance(params, dict) else None
        if isinstance(said, int | float) and not isinstance(said, bool) and said > MAX_SLOTS:
            total += MAX_SLOTS
        else:
            total += checked_int(said, 1, MAX_SLOTS) or 1
    return min(total, MAX_SLOTS)


def parallel_steps(base_url: str, model: str | None, api_key: str | None = None) -> Steps[int | None]:
    """Ask a LiteLLM proxy's ``/model/info`` how many replies it runs at once for ``model``."""
    (info,) = yield [Ask("GET", normalize_url(base_url) + "/model/info", headers=bearer(api_key))]
    return said_parallel(json_of(info), model)


def slot_steps(base_url: str, api_key: str | None = None) -> Steps[int | None]:
    """Ask a llama.cpp server's ``/props`` and ``/slots`` (in parallel) for its slots."""
    root = normalize_url(base_url)
    headers = bearer(api_key)
    asks = [Ask("GET", root + path, headers=headers) for path in ("/props", "/slots")]
    props, slots = yield asks
    return said_slots(json_of(props), json_of(slots))


def server_slots(server: ModelServer, client: httpx.Client | None = None) -> int:
    """How many replies ``server`` runs at once: its own answer on llama.cpp and LiteLLM, else 1."""
    info = server.info if isinstance(server, Addressed) else None
    if info is None:
        return 1
    if server.kind == "llamacpp":
        return run_sync(slot_steps(info.base_url, info.api_key), client) or 1
    if server.kind == "litellm":
        return run_sync(parallel_steps(info.base_url, server.model, info.api_key), client) or 1
    return 1


def auto_concurrency(servers: Iterable[ModelServer], client: httpx.Client | None = None) -> int:
    """Replies to run at once over ``servers``: the fewest slots any of them has (each asked once)."""
    seen: dict[int, int] = {}
    for server in servers:
        if id(server) not in seen:
            seen[id(server)] = server_slots(server, client)
    return min(seen.values(), default=1)
