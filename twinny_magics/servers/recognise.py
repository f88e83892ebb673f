"""What kind of server is at a URL, which model it runs, and finding a server with nothing configured.

The kind comes from an explicit ``kind``, else the URL (a known hosted API, a public https host, a
server's usual port), else the routes it answers (asked in parallel). Discovery looks at
``OLLAMA_HOST``, ``OPENAI_BASE_URL``/``OPENAI_API_KEY``, then the usual local ports; None means the
caller falls back to the embedded server.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import httpx

from twinny_magics.servers.asking import (
    ASK_TIMEOUT,
    DEFAULT_CACHE,
    Ask,
    ProbeCache,
    Steps,
    ask,
    dicts,
    json_of,
    run_async,
    run_sync,
)
from twinny_magics.servers.kinds import (
    DEFAULT_PORTS,
    NEVER_ASKED,
    Kind,
    ServerInfo,
    hosted_chat_base,
    kind_from_url,
    normalize_url,
    parse_kind,
)
from twinny_magics.servers.wire import bearer

# Looking for a server on the usual local ports: a closed port refuses at once, so this only bounds a
# port held by something that accepts and never answers.
DISCOVERY_TIMEOUT = 0.5

# A route that stayed silent while the same server answered others is asked once more, this long.
SLOW_ASK_TIMEOUT = 5.0

# --- the kind ----------------------------------------------------------------------------------------


def _looks(kind: Kind, response: httpx.Response | None) -> bool:
    body = json_of(response)
    if kind == "openwebui":
        return isinstance(body, dict) and "open webui" in str(body.get("name", "")).lower()
    if kind == "llamacpp":
        return isinstance(body, dict) and isinstance(body.get("default_generation_settings"), dict)
    if kind == "ollama":
        return isinstance(body, dict) and isinstance(body.get("version"), str)
    if kind == "lmstudio":
        return isinstance(body, dict) and isinstance(body.get("data"), list)
    if kind == "litellm":
        return response is not None and response.status_code == 200 and "alive" in response.text.lower()
    if kind == "textgen":
        return isinstance(body, dict) and "model_name" in body
    if kind == "vllm":
        return isinstance(body, dict) and any("max_model_len" in e for e in dicts(body.get("data")))
    return isinstance(body, dict) and isinstance(body.get("data"), list)


# The route that gives each kind away, in the order they are believed (Open WebUI also answers
# /api/version like Ollama; every one of them answers /v1/models).
_TELLS: tuple[tuple[Kind, str], ...] = (
    ("openwebui", "/api/config"),
    ("llamacpp", "/props"),
    ("ollama", "/api/version"),
    ("lmstudio", "/api/v0/models"),
    ("litellm", "/health/liveliness"),
    ("textgen", "/v1/internal/model/info"),
    ("vllm", "/v1/models"),
    ("compatible", "/v1/models"),
)


def probe_kind_steps(
    root: str, api_key: str | None = None, timeout: float = ASK_TIMEOUT
) -> Steps[Kind | None]:
    """The kind the server at ``root`` shows by its routes, asked in parallel; None if nothing answered."""
    paths = list(dict.fromkeys(path for _, path in _TELLS))
    answers = yield [Ask("GET", root + path, headers=bearer(api_key), timeout=timeout) for path in paths]
    by_path = dict(zip(paths, answers, strict=True))
    found = _told(by_path)
    silent = [path for path, answer in by_path.items() if answer is None]
    if found == "compatible" and silent:
        # The server is up but some routes did not answer in time (a busy proxy): those are asked
        # once more with longer, so a slow LiteLLM is not taken for a generic server.
        again = yield [
            Ask("GET", root + path, headers=bearer(api_key), timeout=max(timeout, SLOW_ASK_TIMEOUT))
            for path in silent
        ]
        by_path.update(zip(silent, again, strict=True))
        found = _told(by_path)
    return found


def _told(by_path: Mapping[str, httpx.Response | None]) -> Kind | None:
    for kind, path in _TELLS:
        if _looks(kind, by_path[path]):
            return kind
    return "compatible" if any(a is not None for a in by_path.values()) else None


def kind_steps(base_url: str, kind: str | None, api_key: str | None, cache: ProbeCache) -> Steps[Kind]:
    """The kind: explicit, else from the URL (host, port), else recognised by probing (cached)."""
    explicit = parse_kind(kind)
    if explicit is not None:
        return explicit
    from_url = kind_from_url(base_url)
    if from_url is not None:
        return from_url
    root = normalize_url(base_url)
    hit, cached = cache.lookup(("kind", root))
    if hit:
        known: Kind = cached
        return known
    found = yield from probe_kind_steps(root, api_key)
    cache.store(("kind", root), found or "compatible", known=found is not None)
    return found or "compatible"


def model_steps(root: str, kind: Kind, api_key: str | None = None) -> Steps[str | None]:
    """The model the server has loaded, else its first; None for hosted APIs (the user names one)."""
    if kind in NEVER_ASKED:
        return None
    if kind == "ollama":
        running = json_of((yield from ask("GET", root + "/api/ps", api_key=api_key)))
        for entry in dicts(running.get("models")) if isinstance(running, dict) else []:
            if isinstance(entry.get("name"), str):
                return str(entry["name"])
        tags = json_of((yield from ask("GET", root + "/api/tags", api_key=api_key)))
        for entry in dicts(tags.get("models")) if isinstance(tags, dict) else []:
            if isinstance(entry.get("name"), str):
                return str(entry["name"])
        return None
    if kind == "lmstudio":
        listing = json_of((yield from ask("GET", root + "/api/v0/models", api_key=api_key)))
        entries = [
            e
            for e in dicts(listing.get("data") if isinstance(listing, dict) else None)
            if e.get("type") != "embeddings"
        ]
        loaded = [e for e in entries if e.get("state") == "loaded"]
        for entry in loaded + entries:
            if isinstance(entry.get("id"), str):
                return str(entry["id"])
        return None
    path = "/api/models" if kind == "openwebui" else "/v1/models"
    listing = json_of((yield from ask("GET", root + path, api_key=api_key)))
    for entry in dicts(listing.get("data")) if isinstance(listing, dict) else []:
        if isinstance(entry.get("id"), str):
            return str(entry["id"])
    return None


def server_steps(
    base_url: str, model: str | None, kind: str | None, api_key: str | None, cache: ProbeCache
) -> Steps[ServerInfo]:
    """The full ``ServerInfo``: root URL, kind, and the model (picked when not given)."""
    root = normalize_url(base_url)
    found_kind = yield from kind_steps(base_url, kind, api_key, cache)
    if model is None:
        model = yield from model_steps(root, found_kind, api_key)
    chat_base = hosted_chat_base(base_url) if found_kind in NEVER_ASKED else None
    return ServerInfo(root, found_kind, model, api_key, chat_base=chat_base)


# --- discovery ---------------------------------------------------------------------------------------

OPENAI_URL = "https://api.openai.com"


def discover_steps(env: Mapping[str, str], timeout: float = DISCOVERY_TIMEOUT) -> Steps[ServerInfo | None]:
    """A server with nothing configured: OLLAMA_HOST, OPENAI_BASE_URL, OPENAI_API_KEY, the usual ports."""
    ollama_host = env.get("OLLAMA_HOST", "").strip()
    if ollama_host:
        if "://" not in ollama_host and ":" not in ollama_host.rsplit("]", 1)[-1]:
            ollama_host += ":11434"  # OLLAMA_HOST may name only the address
        root = normalize_url(ollama_host)
        if _looks("ollama", (yield from ask("GET", root + "/api/version", timeout=timeout))):
            model = yield from model_steps(root, "ollama")
            return ServerInfo(root, "ollama", model)
    api_key = env.get("OPENAI_API_KEY", "").strip() or None
    base_url = env.get("OPENAI_BASE_URL", "").strip() or env.get("OPENAI_API_BASE", "").strip()
    if base_url:
        root = normalize_url(base_url)
        from_url = kind_from_url(base_url)
        if from_url is not None and from_url in NEVER_ASKED:
            return ServerInfo(root, from_url, None, api_key, chat_base=hosted_chat_base(base_url))
        found = yield from probe_kind_steps(root, api_key, timeout)
        if found is not None:
            # What the routes show beats what the port suggests; the port helps only a generic answer.
            kind = from_url if found == "compatible" and from_url is not None else found
            model = yield from model_steps(root, kind, api_key)
            return ServerInfo(root, kind, model, api_key)
    elif api_key:
        return ServerInfo(OPENAI_URL, "openai", None, api_key)
    # Each usual port is asked for its own server's tell and for /v1/models: a server on another's
    # usual port (vLLM on 8080) still counts, and is then recognised by its routes.
    roots = [(f"http://127.0.0.1:{port}", kind) for port, kind in DEFAULT_PORTS.items()]
    tells = dict(_TELLS)
    asks = [
        Ask("GET", root + path, timeout=timeout)
        for root, kind in roots
        for path in (tells[kind], "/v1/models")
    ]
    answers = yield asks
    for number, (root, kind) in enumerate(roots):
        tell, listing = answers[2 * number], answers[2 * number + 1]
        here: Kind | None = kind if _looks(kind, tell) else None
        if here is None and _looks("compatible", listing):
            here = (yield from probe_kind_steps(root, None, timeout)) or "compatible"
        if here is not None:
            model = yield from model_steps(root, here)
            return ServerInfo(root, here, model)
    return None


# --- the public functions ----------------------------------------------------------------------------


def recognise_kind(
    base_url: str,
    kind: str | None = None,
    *,
    api_key: str | None = None,
    client: httpx.Client | None = None,
    cache: ProbeCache | None = None,
) -> Kind:
    """The server's kind: explicit, else by host and port, else by the routes it answers."""
    return run_sync(kind_steps(base_url, kind, api_key, cache or DEFAULT_CACHE), client)


async def arecognise_kind(
    base_url: str,
    kind: str | None = None,
    *,
    api_key: str | None = None,
    client: httpx.AsyncClient | None = None,
    cache: ProbeCache | None = None,
) -> Kind:
    """``recognise_kind`` on an async client."""
    return await run_async(kind_steps(base_url, kind, api_key, cache or DEFAULT_CACHE), client)


def resolve_server(
    base_url: str,
    model: str | None = None,
    kind: str | None = None,
    *,
    api_key: str | None = None,
    client: httpx.Client | None = None,
    cache: ProbeCache | None = None,
) -> ServerInfo:
    """``ServerInfo`` for a server the user named: kind recognised, model picked when not given."""
    return run_sync(server_steps(base_url, model, kind, api_key, cache or DEFAULT_CACHE), client)


def discover(
    env: Mapping[str, str] | None = None,
    *,
    client: httpx.Client | None = None,
    timeout: float = DISCOVERY_TIMEOUT,
) -> ServerInfo | None:
    """A server with nothing configured (environment, then local ports), or None for the embedded one."""
    return run_sync(discover_steps(os.environ if env is None else env, timeout), client)


async def adiscover(
    env: Mapping[str, str] | None = None,
    *,
    client: httpx.AsyncClient | None = None,
    timeout: float = DISCOVERY_TIMEOUT,
) -> ServerInfo | None:
    """``discover`` on an async client."""
    return await run_async(discover_steps(os.environ if env is None else env, timeout), client)
