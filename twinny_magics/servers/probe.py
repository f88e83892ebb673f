"""Asking servers: how big the window is, what kind of server it is, which model it runs; finding one.

Each question is written once, as a generator that yields the HTTP asks it needs (a list, asked in
parallel) and receives the answers (None for an ask that failed or timed out). Two small drivers run
them: on an ``httpx.Client`` for the sync functions — no event loop, so they also work on a thread
whose loop is running, as in Jupyter — and on an ``httpx.AsyncClient`` for the ``a…`` functions.

Window answers are cached 30 s and unknowns 3 s (``ProbeCache``), as the seed does: asked before every
request, a server is asked at most every 30 s, and one that is still loading is asked again soon.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import threading
import time
from collections.abc import Callable, Generator, Hashable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from twinny_magics.servers.kinds import (
    DEFAULT_PORTS,
    NEVER_ASKED,
    Kind,
    ServerInfo,
    default_window,
    hosted_chat_base,
    kind_from_url,
    normalize_url,
    parse_kind,
)
from twinny_magics.servers.wire import make_sync_client, shared_ssl_context

T = TypeVar("T")

# Each ask of a window gets this long (the seed's 1.5 s): a server that is slower is treated as silent.
ASK_TIMEOUT = 1.5
# Looking for a server on the usual local ports: a closed port refuses at once, so this only bounds a
# port held by something that accepts and never answers.
DISCOVERY_TIMEOUT = 0.5


@dataclass(frozen=True)
class Ask:
    """One HTTP ask: method, full URL, optional JSON body, headers and its own timeout."""

    method: str
    url: str
    json: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = ASK_TIMEOUT


Answers = list[httpx.Response | None]
Steps = Generator[list[Ask], Answers, T]


def ask(
    method: str, url: str, body: Any = None, *, api_key: str | None = None, timeout: float = ASK_TIMEOUT
) -> Steps[httpx.Response | None]:
    """One ask as steps: ``response = yield from ask("GET", url)``."""
    answers = yield [Ask(method, url, body, _bearer(api_key), timeout)]
    return answers[0]


def _bearer(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def json_of(response: httpx.Response | None) -> Any:
    """The JSON of a 200 answer, else None."""
    if response is None or response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _positive(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value > 0:
        return value
    if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
        return int(value)
    return None


# --- the drivers -------------------------------------------------------------------------------------


def _send_sync(client: httpx.Client, one: Ask) -> httpx.Response | None:
    try:
        request = client.build_request(
            one.method, one.url, json=one.json, headers=dict(one.headers), timeout=one.timeout
        )
        return client.send(request)
    except (httpx.HTTPError, httpx.InvalidURL, OSError):
        return None


async def _send_async(client: httpx.AsyncClient, one: Ask) -> httpx.Response | None:
    try:
        request = client.build_request(
            one.method, one.url, json=one.json, headers=dict(one.headers), timeout=one.timeout
        )
        # httpx bounds each read; this bounds the whole ask (a server that trickles bytes forever).
        async with asyncio.timeout(one.timeout + 0.25):
            return await client.send(request)
    except (httpx.HTTPError, httpx.InvalidURL, OSError, TimeoutError):
        return None


def run_sync(steps: Steps[T], client: httpx.Client | None = None) -> T:
    """Run ``steps`` on a sync client (a fresh one, closed after, when none is given and one is needed)."""
    own: httpx.Client | None = None
    try:
        asks = next(steps)
        while True:
            if client is None:
                client = own = make_sync_client()
            if len(asks) == 1:
                answers: Answers = [_send_sync(client, asks[0])]
            else:
                with ThreadPoolExecutor(max_workers=min(len(asks), 8)) as pool:
                    answers = list(pool.map(functools.partial(_send_sync, client), asks))
            asks = steps.send(answers)
    except StopIteration as stop:
        result: T = stop.value
        return result
    finally:
        if own is not None:
            own.close()


async def run_async(steps: Steps[T], client: httpx.AsyncClient | None = None) -> T:
    """Run ``steps`` on an async client (a fresh one, closed after, when none is given and one is needed)."""
    own: httpx.AsyncClient | None = None
    try:
        asks = next(steps)
        while True:
            if client is None:
                client = own = httpx.AsyncClient(trust_env=False, verify=shared_ssl_context())
            answers: Answers = list(await asyncio.gather(*(_send_async(client, one) for one in asks)))
            asks = steps.send(answers)
    except StopIteration as stop:
        result: T = stop.value
        return result
    finally:
        if own is not None:
            await own.aclose()


# --- the cache ---------------------------------------------------------------------------------------


class ProbeCache:
    """Answers kept ``known_seconds`` (30), unknowns ``unknown_seconds`` (3), on an injectable clock."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        known_seconds: float = 30.0,
        unknown_seconds: float = 3.0,
    ) -> None:
        self.clock = clock
        self.known_seconds = known_seconds
        self.unknown_seconds = unknown_seconds
        self._entries: dict[Hashable, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def lookup(self, key: Hashable) -> tuple[bool, Any]:
        """``(True, value)`` for a fresh entry, else ``(False, None)``."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False, None
            expires, value = entry
            if self.clock() >= expires:
                del self._entries[key]
                return False, None
            return True, value

    def store(self, key: Hashable, value: Any, *, known: bool) -> None:
        """Keep ``value`` for 30 s when ``known``, else 3 s."""
        seconds = self.known_seconds if known else self.unknown_seconds
        with self._lock:
            self._entries[key] = (self.clock() + seconds, value)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()


DEFAULT_CACHE = ProbeCache()


# --- the window --------------------------------------------------------------------------------------

_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def ollama_name(name: str) -> str:
    """An Ollama model name with its tag (``llama3`` is ``llama3:latest``), lowercased."""
    last = name.rsplit("/", 1)[-1]
    return (name if ":" in last else name + ":latest").lower()


def same_ollama_model(wanted: str, name: Any) -> bool:
    """Whether ``name`` is the model ``wanted`` (tags defaulting to ``latest``)."""
    return isinstance(name, str) and ollama_name(wanted) == ollama_name(name)


def parse_num_ctx(parameters: Any) -> int | None:
    """``num_ctx`` from the ``parameters`` text of Ollama's ``/api/show`` (set only by a Modelfile)."""
    if not isinstance(parameters, str):
        return None
    found = _NUM_CTX.search(parameters)
    return _positive(found.group(1)) if found else None


def _entry(entries: list[dict[str, Any]], model: str | None, *keys: str) -> dict[str, Any] | None:
    if not entries:
        return None
    if model is None:
        return entries[0]
    wanted = model.lower()
    for key in keys:
        for entry in entries:
            value = entry.get(key)
            if isinstance(value, str) and (value.lower() == wanted or value.lower().endswith("/" + wanted)):
                return entry
    return None


def window_steps(root: str, kind: Kind, model: str | None, api_key: str | None = None) -> Steps[int | None]:
    """The window the server at ``root`` reports for ``model``, or None (see SPEC §2 for each kind)."""
    if kind in NEVER_ASKED or kind in ("openwebui", "textgen"):
        return None
    if kind == "ollama":
        running = json_of((yield from ask("GET", root + "/api/ps", api_key=api_key)))
        entries = _dicts(running.get("models")) if isinstance(running, dict) else []
        chosen = None
        if model is None:
            chosen = entries[0] if entries else None
        else:
            chosen = next(
                (
                    e
                    for e in entries
                    if same_ollama_model(model, e.get("name")) or same_ollama_model(model, e.get("model"))
                ),
                None,
            )
        if chosen is not None:
            loaded = _positive(chosen.get("context_length"))
            if loaded is not None:
                return loaded
            # An older server: no context_length in /api/ps. The Modelfile may still say.
            model = model or chosen.get("name") or chosen.get("model")
        if not model:
            return None
        shown = json_of((yield from ask("POST", root + "/api/show", {"model": model}, api_key=api_key)))
        return parse_num_ctx(shown.get("parameters")) if isinstance(shown, dict) else None
    if kind == "llamacpp":
        props = json_of((yield from ask("GET", root + "/props", api_key=api_key)))
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    if kind == "lmstudio":
        listing = json_of((yield from ask("GET", root + "/api/v0/models", api_key=api_key)))
        entries = _dicts(listing.get("data")) if isinstance(listing, dict) else []
        if model is None:
            entries = [e for e in entries if e.get("state") == "loaded"]
        chosen = _entry(entries, model, "id")
        return _positive(chosen.get("loaded_context_length")) if chosen else None
    if kind == "litellm":
        info = json_of((yield from ask("GET", root + "/model/info", api_key=api_key)))
        entries = _dicts(info.get("data")) if isinstance(info, dict) else []
        if model is not None:
            entries = [e for e in entries if str(e.get("model_name", "")).lower() == model.lower()]
        sizes = [
            size
            for e in entries
            if isinstance(e.get("model_info"), dict)
            and (size := _positive(e["model_info"].get("max_input_tokens"))) is not None
        ]
        # Several deployments behind one name: the smallest window is the one every request fits.
        return min(sizes) if sizes and (model is not None or len(sizes) == len(entries)) else None
    listing = json_of((yield from ask("GET", root + "/v1/models", api_key=api_key)))
    entries = _dicts(listing.get("data")) if isinstance(listing, dict) else []
    chosen = _entry(entries, model, "id")
    if chosen is None:
        return None
    if kind == "vllm":
        return _positive(chosen.get("max_model_len"))
    # Any other compatible server: the fields the common ones use, where they use one.
    meta = chosen.get("meta")
    for value in (
        chosen.get("max_model_len"),
        chosen.get("context_length"),
        chosen.get("max_input_tokens"),
        meta.get("n_ctx") if isinstance(meta, dict) else None,
    ):
        if _positive(value) is not None:
            return _positive(value)
    return None


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
        return isinstance(body, dict) and any("max_model_len" in e for e in _dicts(body.get("data")))
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
    answers = yield [Ask("GET", root + path, headers=_bearer(api_key), timeout=timeout) for path in paths]
    by_path = dict(zip(paths, answers, strict=True))
    for kind, path in _TELLS:
        if _looks(kind, by_path[path]):
            return kind
    return "compatible" if any(a is not None for a in answers) else None


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
        for entry in _dicts(running.get("models")) if isinstance(running, dict) else []:
            if isinstance(entry.get("name"), str):
                return str(entry["name"])
        tags = json_of((yield from ask("GET", root + "/api/tags", api_key=api_key)))
        for entry in _dicts(tags.get("models")) if isinstance(tags, dict) else []:
            if isinstance(entry.get("name"), str):
                return str(entry["name"])
        return None
    if kind == "lmstudio":
        listing = json_of((yield from ask("GET", root + "/api/v0/models", api_key=api_key)))
        entries = [
            e
            for e in _dicts(listing.get("data") if isinstance(listing, dict) else None)
            if e.get("type") != "embeddings"
        ]
        loaded = [e for e in entries if e.get("state") == "loaded"]
        for entry in loaded + entries:
            if isinstance(entry.get("id"), str):
                return str(entry["id"])
        return None
    path = "/api/models" if kind == "openwebui" else "/v1/models"
    listing = json_of((yield from ask("GET", root + path, api_key=api_key)))
    for entry in _dicts(listing.get("data")) if isinstance(listing, dict) else []:
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


def context_window_steps(
    base_url: str, model: str | None, kind: str | None, api_key: str | None, cache: ProbeCache
) -> Steps[int | None]:
    """The server's own answer for its window (cached), None when it will not say or is not asked."""
    found_kind = yield from kind_steps(base_url, kind, api_key, cache)
    if found_kind in NEVER_ASKED:
        return None
    root = normalize_url(base_url)
    key = ("window", root, found_kind, model, api_key)
    hit, cached = cache.lookup(key)
    if hit:
        answer: int | None = cached
        return answer
    window = yield from window_steps(root, found_kind, model, api_key)
    cache.store(key, window, known=window is not None)
    return window


def planned_window_steps(
    base_url: str, model: str | None, kind: str | None, api_key: str | None, cache: ProbeCache
) -> Steps[int]:
    """The server's answer for its window, else the default for its kind."""
    found_kind = yield from kind_steps(base_url, kind, api_key, cache)
    window = yield from context_window_steps(base_url, model, found_kind, api_key, cache)
    return window if window is not None else default_window(found_kind)


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


def probe_context_window(
    base_url: str,
    model: str | None = None,
    kind: str | None = None,
    *,
    api_key: str | None = None,
    client: httpx.Client | None = None,
    cache: ProbeCache | None = None,
) -> int | None:
    """The server's own answer for its context window (cached 30 s, unknown 3 s), or None."""
    steps = context_window_steps(base_url, model, kind, api_key, cache or DEFAULT_CACHE)
    return run_sync(steps, client)


async def aprobe_context_window(
    base_url: str,
    model: str | None = None,
    kind: str | None = None,
    *,
    api_key: str | None = None,
    client: httpx.AsyncClient | None = None,
    cache: ProbeCache | None = None,
) -> int | None:
    """``probe_context_window`` on an async client."""
    steps = context_window_steps(base_url, model, kind, api_key, cache or DEFAULT_CACHE)
    return await run_async(steps, client)


def context_window(
    base_url: str,
    model: str | None = None,
    kind: str | None = None,
    *,
    api_key: str | None = None,
    client: httpx.Client | None = None,
    cache: ProbeCache | None = None,
) -> int:
    """The window to plan with: the server's answer, else 128,000 hosted or 32,768 local."""
    return run_sync(planned_window_steps(base_url, model, kind, api_key, cache or DEFAULT_CACHE), client)


async def acontext_window(
    base_url: str,
    model: str | None = None,
    kind: str | None = None,
    *,
    api_key: str | None = None,
    client: httpx.AsyncClient | None = None,
    cache: ProbeCache | None = None,
) -> int:
    """``context_window`` on an async client."""
    return await run_async(
        planned_window_steps(base_url, model, kind, api_key, cache or DEFAULT_CACHE), client
    )


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


async def aresolve_server(
    base_url: str,
    model: str | None = None,
    kind: str | None = None,
    *,
    api_key: str | None = None,
    client: httpx.AsyncClient | None = None,
    cache: ProbeCache | None = None,
) -> ServerInfo:
    """``resolve_server`` on an async client."""
    return await run_async(server_steps(base_url, model, kind, api_key, cache or DEFAULT_CACHE), client)


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


__all__ = [
    "ASK_TIMEOUT",
    "DEFAULT_CACHE",
    "ProbeCache",
    "acontext_window",
    "adiscover",
    "aprobe_context_window",
    "arecognise_kind",
    "aresolve_server",
    "context_window",
    "discover",
    "probe_context_window",
    "recognise_kind",
    "resolve_server",
]
