"""Server kinds, their usual ports and default windows, and where a server lives (``ServerInfo``).

Pure: no I/O. Recognising a kind by asking the server is in ``recognise``; asking its window, in ``probe``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Literal, get_args
from urllib.parse import urlsplit

# The small-window warning is worded in a leaf the reply engine may import; re-exported here.
from twinny_magics.window_warning import SMALL_WINDOW, small_window_warning

__all__ = [
    "DEFAULT_PORTS",
    "HOSTED_WINDOW",
    "KINDS",
    "LOCAL_UNKNOWN_WINDOW",
    "NEVER_ASKED",
    "SMALL_WINDOW",
    "TEXT_MODE_KINDS",
    "Kind",
    "ServerInfo",
    "default_window",
    "hosted_chat_base",
    "is_local_host",
    "is_loopback_host",
    "kind_from_url",
    "normalize_url",
    "parse_kind",
    "plaintext_key_warning",
    "small_window_warning",
]

Kind = Literal[
    "ollama",
    "llamacpp",
    "lmstudio",
    "litellm",
    "vllm",
    "openwebui",
    "textgen",
    "compatible",
    "openai",
    "hosted",
]
KINDS: tuple[Kind, ...] = get_args(Kind)

# The port each server listens on out of the box; a URL with one of these is taken to be that server.
DEFAULT_PORTS: dict[int, Kind] = {
    11434: "ollama",
    8080: "llamacpp",
    1234: "lmstudio",
    4000: "litellm",
    8000: "vllm",
    5000: "textgen",
}

# Hosted APIs are never asked for their window (they do not say) and are taken to hold this many tokens.
HOSTED_WINDOW = 128_000
# A local server that will not say is taken to hold this many (the seed's 32k).
LOCAL_UNKNOWN_WINDOW = 32_768

NEVER_ASKED: frozenset[Kind] = frozenset({"openai", "hosted"})
# Servers whose chat route does not take the ``tools`` field: the loop uses text mode from the start.
TEXT_MODE_KINDS: frozenset[Kind] = frozenset({"textgen"})

_OPENAI_HOSTS = frozenset({"api.openai.com"})


def parse_kind(kind: str | None) -> Kind | None:
    """``kind`` checked against the known kinds (None stays None)."""
    if kind is None:
        return None
    lowered = kind.strip().lower().replace("-", "").replace("_", "").replace(".", "")
    aliases: dict[str, Kind] = {"llama": "llamacpp", "llamaserver": "llamacpp", "gateway": "litellm"}
    if lowered in aliases:
        return aliases[lowered]
    for known in KINDS:
        if lowered == known:
            return known
    raise ValueError(f"unknown server kind {kind!r}; expected one of {', '.join(KINDS)}")


def normalize_url(url: str) -> str:
    """The server's root URL: scheme added, trailing ``/`` and ``/v1`` dropped, 0.0.0.0 made local."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    host = parts.hostname or "127.0.0.1"
    # A server bound to every address (OLLAMA_HOST=0.0.0.0) is reached on the loopback.
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{netloc}{path}"


def is_local_host(host: str | None) -> bool:
    """Whether ``host`` is this machine or a private network address (a server someone runs)."""
    if not host:
        return True
    if host == "localhost" or host.endswith((".local", ".lan", ".internal", ".localhost")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." not in host  # a bare machine name on the local network
    return address.is_private or address.is_loopback or address.is_link_local


def is_loopback_host(host: str | None) -> bool:
    """Whether ``host`` is this machine: ``localhost`` (and ``*.localhost``) or a loopback address."""
    if not host:
        return False
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def plaintext_key_warning(url: str, api_key: str | None) -> str | None:
    """A warning when ``api_key`` goes to ``url`` over plain http and the host is not this machine.

    A private network address counts too: over http the key crosses that network in the clear, for
    anyone on it (a shared Wi-Fi, a container network, a VPN's far end) to read. Never blocks.
    """
    if not api_key:
        return None
    parts = urlsplit(url if "://" in url else "http://" + url)
    if parts.scheme.lower() != "http" or is_loopback_host(parts.hostname):
        return None
    where = parts.hostname or url
    return (
        f"The API key goes to {where} over plain http: anyone on the network between here and there can "
        "read it, and the questions, files and answers too. Use https:// for a server on another machine, "
        "or reach it through an SSH tunnel (`ssh -L`) and point the agent at 127.0.0.1."
    )


def kind_from_url(url: str) -> Kind | None:
    """The kind a URL alone tells: a known hosted API, a public https host, or a server's usual port."""
    parts = urlsplit(url if "://" in url else "http://" + url)
    host = (parts.hostname or "").lower()
    if host in _OPENAI_HOSTS:
        return "openai"
    if parts.port is None and parts.scheme == "https" and not is_local_host(host):
        return "hosted"
    if parts.port is not None and parts.port in DEFAULT_PORTS:
        return DEFAULT_PORTS[parts.port]
    return None


def hosted_chat_base(url: str) -> str | None:
    """A hosted API's OpenAI-compatible base when it is not ``…/v1`` (e.g. ``…/v1beta/openai``)."""
    text = url.strip().rstrip("/")
    path = urlsplit(text if "://" in text else "https://" + text).path
    return text if path and not path.endswith("/v1") else None


@dataclass(frozen=True)
class ServerInfo:
    """Where a model server is and how to talk to it. ``base_url`` is the root (no ``/v1``).

    ``chat_base`` is set only for a hosted API whose OpenAI-compatible base is not ``base_url + /v1``.
    """

    base_url: str
    kind: Kind
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    chat_base: str | None = None

    @property
    def api_base(self) -> str:
        """The OpenAI-compatible route's base (``…/v1``; Open WebUI's is ``…/api``)."""
        if self.chat_base:
            return self.chat_base
        if self.kind == "openwebui":
            return self.base_url if self.base_url.endswith("/api") else self.base_url + "/api"
        return self.base_url + "/v1"

    @property
    def asked_for_window(self) -> bool:
        """Whether the server is asked for its window at all (hosted APIs are not)."""
        return self.kind not in NEVER_ASKED

    @property
    def reuses_cache(self) -> bool:
        """Whether every request asks the server to reuse its cache past a trim (llama.cpp's
        ``n_cache_reuse``; the adapter sends it, the loop trims for it)."""
        return self.kind == "llamacpp"


def default_window(kind: Kind) -> int:
    """The window assumed when the server does not say: 128,000 hosted, 32,768 local."""
    return HOSTED_WINDOW if kind in NEVER_ASKED else LOCAL_UNKNOWN_WINDOW
