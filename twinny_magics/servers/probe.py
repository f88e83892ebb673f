"""Asking a server how big its context window is, and the window to plan with (docs/servers.md).

Asked before every request, answered from ``ProbeCache`` most of the time: an answer is kept 30 s, an
unknown 3 s (a server still loading its model is asked again soon). Each ask gives up after 1.5 s.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from twinny_magics.servers.asking import (
    DEFAULT_CACHE,
    ProbeCache,
    Steps,
    ask,
    dicts,
    json_of,
    positive,
    run_async,
    run_sync,
)
from twinny_magics.servers.kinds import NEVER_ASKED, Kind, default_window, normalize_url
from twinny_magics.servers.recognise import kind_steps

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
    return positive(found.group(1)) if found else None


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
    """The window the server at ``root`` reports for ``model``, or None (see docs/servers.md)."""
    if kind in NEVER_ASKED or kind in ("openwebui", "textgen"):
        return None
    if kind == "ollama":
        running = json_of((yield from ask("GET", root + "/api/ps", api_key=api_key)))
        entries = dicts(running.get("models")) if isinstance(running, dict) else []
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
            loaded = positive(chosen.get("context_length"))
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
        return positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    if kind == "lmstudio":
        listing = json_of((yield from ask("GET", root + "/api/v0/models", api_key=api_key)))
        entries = dicts(listing.get("data")) if isinstance(listing, dict) else []
        if model is None:
            entries = [e for e in entries if e.get("state") == "loaded"]
        chosen = _entry(entries, model, "id")
        return positive(chosen.get("loaded_context_length")) if chosen else None
    if kind == "litellm":
        info = json_of((yield from ask("GET", root + "/model/info", api_key=api_key)))
        entries = dicts(info.get("data")) if isinstance(info, dict) else []
        if model is not None:
            entries = [e for e in entries if str(e.get("model_name", "")).lower() == model.lower()]
        sizes = [
            size
            for e in entries
            if isinstance(e.get("model_info"), dict)
            and (size := positive(e["model_info"].get("max_input_tokens"))) is not None
        ]
        # Several deployments behind one name: the smallest window is the one every request fits.
        return min(sizes) if sizes and (model is not None or len(sizes) == len(entries)) else None
    listing = json_of((yield from ask("GET", root + "/v1/models", api_key=api_key)))
    entries = dicts(listing.get("data")) if isinstance(listing, dict) else []
    chosen = _entry(entries, model, "id")
    if chosen is None:
        return None
    if kind == "vllm":
        return positive(chosen.get("max_model_len"))
    # Any other compatible server: the fields the common ones use, where they use one.
    meta = chosen.get("meta")
    for value in (
        chosen.get("max_model_len"),
        chosen.get("context_length"),
        chosen.get("max_input_tokens"),
        meta.get("n_ctx") if isinstance(meta, dict) else None,
    ):
        if positive(value) is not None:
            return positive(value)
    return None


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


# --- what the server says of its model --------------------------------------------------------------

#: The keys of Ollama's ``/api/show`` ``model_info`` that tell a tokenizer (see ``text_tokens``).
_TOKENIZER_KEYS = ("general.architecture", "tokenizer.ggml.pre", "tokenizer.ggml.model")


def metadata_steps(
    root: str, kind: Kind, model: str | None, api_key: str | None = None
) -> Steps[dict[str, str]]:
    """What the server says of ``model`` that tells its tokenizer, flat (empty: it does not say).

    Ollama: ``/api/show``'s ``model_info`` (the GGUF's ``general.architecture``, ``tokenizer.ggml.pre``)
    and ``details.family``; LM Studio: a model's ``arch``; LiteLLM: the model a name stands for
    (``litellm_params.model``, e.g. ``ollama/qwen2.5-coder:1.5b``), as ``model``.
    """
    if kind == "ollama" and model:
        shown = json_of((yield from ask("POST", root + "/api/show", {"model": model}, api_key=api_key)))
        if not isinstance(shown, dict):
            return {}
        info = shown.get("model_info")
        details = shown.get("details")
        found = {k: v for k, v in (info.items() if isinstance(info, dict) else ()) if k in _TOKENIZER_KEYS}
        if isinstance(details, dict) and isinstance(details.get("family"), str):
            found["family"] = details["family"]
        return {k: v for k, v in found.items() if isinstance(v, str)}
    if kind == "lmstudio":
        listing = json_of((yield from ask("GET", root + "/api/v0/models", api_key=api_key)))
        entries = dicts(listing.get("data")) if isinstance(listing, dict) else []
        chosen = _entry(entries, model, "id") if model else None
        arch = chosen.get("arch") if chosen else None
        return {"general.architecture": arch} if isinstance(arch, str) else {}
    if kind == "litellm" and model:
        info = json_of((yield from ask("GET", root + "/model/info", api_key=api_key)))
        entries = dicts(info.get("data")) if isinstance(info, dict) else []
        for entry in entries:
            params = entry.get("litellm_params")
            if str(entry.get("model_name", "")).lower() == model.lower() and isinstance(params, dict):
                underlying = params.get("model")
                if isinstance(underlying, str):
                    return {"model": underlying}
    return {}


def model_metadata_steps(
    base_url: str, model: str | None, kind: str | None, api_key: str | None, cache: ProbeCache
) -> Steps[dict[str, str]]:
    """``metadata_steps`` for the server at ``base_url`` (cached like the window)."""
    found_kind = yield from kind_steps(base_url, kind, api_key, cache)
    if found_kind in NEVER_ASKED:
        return {}
    root = normalize_url(base_url)
    key = ("metadata", root, found_kind, model, api_key)
    hit, cached = cache.lookup(key)
    if hit:
        return dict(cached)
    found = yield from metadata_steps(root, found_kind, model, api_key)
    cache.store(key, dict(found), known=bool(found))
    return found


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


async def amodel_metadata(
    base_url: str,
    model: str | None = None,
    kind: str | None = None,
    *,
    api_key: str | None = None,
    client: httpx.AsyncClient | None = None,
    cache: ProbeCache | None = None,
) -> dict[str, str]:
    """What the server says of its model that tells its tokenizer (see ``metadata_steps``), or {}."""
    return await run_async(
        model_metadata_steps(base_url, model, kind, api_key, cache or DEFAULT_CACHE), client
    )


__all__ = [
    "DEFAULT_CACHE",
    "ProbeCache",
    "acontext_window",
    "amodel_metadata",
    "aprobe_context_window",
    "context_window",
    "probe_context_window",
]
