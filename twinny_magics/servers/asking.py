"""Asking a server, written once for sync and async: steps that yield HTTP asks, and two drivers.

A question to a server is a generator that yields the asks it needs (a list, asked in parallel) and
receives the answers (None for an ask that failed or timed out). ``run_sync`` drives it on an
``httpx.Client`` — no event loop, so it also works on a thread whose loop is running, as in Jupyter —
and ``run_async`` on an ``httpx.AsyncClient``. ``ProbeCache`` keeps answers 30 s and unknowns 3 s.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable, Generator, Hashable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from twinny_magics.servers.base import read_json
from twinny_magics.servers.numbers import window_size
from twinny_magics.servers.wire import bearer, make_sync_client, send, send_sync, shared_ssl_context

T = TypeVar("T")

# Each ask of a window gets this long (the seed's 1.5 s): a server that is slower is treated as silent.
ASK_TIMEOUT = 1.5


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
    answers = yield [Ask(method, url, body, bearer(api_key), timeout)]
    return answers[0]


def json_of(response: httpx.Response | None) -> Any:
    """The JSON of a 200 answer, else None."""
    if response is None or response.status_code != 200:
        return None
    try:
        return read_json(response.content)
    except ValueError:  # not JSON, or nested too deeply to read
        return None


def dicts(value: Any) -> list[dict[str, Any]]:
    """The dicts in a JSON list (nothing for anything else)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def positive(value: Any) -> int | None:
    """A window a server said: a whole number from 1 to 100 million (or a string of one), else None.

    See ``numbers.checked_int``: ``1e400``, ``NaN``, ``-1``, ``true`` or 5,000 digits count as not said.
    """
    return window_size(value)


# --- the drivers -------------------------------------------------------------------------------------


def _send_sync(client: httpx.Client, one: Ask) -> httpx.Response | None:
    try:
        request = client.build_request(
            one.method, one.url, json=one.json, headers=dict(one.headers), timeout=one.timeout
        )
        return send_sync(client, request)
    except (httpx.HTTPError, httpx.InvalidURL, OSError):
        return None


async def _send_async(client: httpx.AsyncClient, one: Ask) -> httpx.Response | None:
    try:
        request = client.build_request(
            one.method, one.url, json=one.json, headers=dict(one.headers), timeout=one.timeout
        )
        # httpx bounds each read; this bounds the whole ask (a server that trickles bytes forever).
        async with asyncio.timeout(one.timeout + 0.25):
            return await send(client, request)
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
