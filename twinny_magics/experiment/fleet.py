"""Several servers for one experiment (``run(..., servers=[...])``): who they are and how many runs each.

Every run may go to any server of the fleet (:mod:`.parallel` spreads them over free seats), so the
servers must serve the same model: runs on two models would not compare. Each server runs as many at
once as ``concurrency`` says (``"auto"``: as many as it says it has slots, :mod:`.slots`). Which failures
are the server's and not the run's is decided where a run talks to its server
(:func:`.serving.server_failed`), so the pool can take a dead server out and run its runs elsewhere. The
progress line's words for the fleet are here too; nothing here runs a reply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import httpx

from twinny_magics.contracts import Addressed, ModelServer
from twinny_magics.experiment.variants import SERVER_OPTIONS

if TYPE_CHECKING:
    from twinny_magics.experiment.parallel import Progress
    from twinny_magics.experiment.records import Run

#: The most servers one experiment spreads its runs over (a clear bound on a list given by mistake).
MAX_SERVERS = 32


@dataclass(frozen=True)
class Member:
    """One server of the fleet: the server, its name in records, runs at once, and slot pinning."""

    server: ModelServer
    label: str
    at_once: int
    pinned: bool

    def describe(self) -> dict[str, Any]:
        """What the results keep of it."""
        return {
            "label": self.label,
            "kind": self.server.kind,
            "model": self.server.model,
            "at_once": self.at_once,
        }


def where(server: ModelServer) -> str | None:
    """The server's address, if it has one."""
    info = server.info if isinstance(server, Addressed) else None
    url = info.base_url if info is not None else None
    return url if isinstance(url, str) else None


def check_fleet(
    servers: object, variants_options: Sequence[Mapping[str, Any]], common: Mapping[str, Any]
) -> list[Any]:
    """The servers given, refused before anything runs when they cannot make one fleet."""
    if isinstance(servers, str) or not isinstance(servers, Sequence):
        raise ValueError("servers=: give a list of server addresses (or servers), e.g. ['http://a:8080', …].")
    given = list(servers)
    if not 1 <= len(given) <= MAX_SERVERS:
        raise ValueError(f"servers=: give 1 to {MAX_SERVERS} servers, not {len(given)}.")
    for entry in given:
        if isinstance(entry, str):
            if not entry.strip():
                raise ValueError("servers=: an empty address.")
        elif not isinstance(entry, ModelServer):
            raise ValueError(f"servers=: {entry!r} is neither an address nor a server.")
    urls = [entry.strip().rstrip("/") for entry in given if isinstance(entry, str)]
    if len(set(urls)) != len(urls):
        raise ValueError("servers=: a server is named twice; give each once (concurrency= sets its runs).")
    for name in ("base_url", "server"):
        if common.get(name) is not None or any(o.get(name) is not None for o in variants_options):
            raise ValueError(
                f"servers= and {name}= both say where to run: give the servers in servers= only (every "
                "variant runs on all of them)."
            )
    for options in variants_options:
        own = [name for name in SERVER_OPTIONS if options.get(name) is not None]
        if own:
            raise ValueError(
                f"With servers=, every variant runs on every server: a variant's own {', '.join(own)} would "
                "be left out; give it to run() for all of them."
            )
    return given


def connect_fleet(given: Sequence[Any], common: Mapping[str, Any]) -> list[ModelServer]:
    """Each address connected with the shared options (model, kind, key, window, timeout)."""
    from twinny_magics.servers import connect  # noqa: PLC0415 - the servers load on first use

    fleet: list[ModelServer] = []
    for entry in given:
        if not isinstance(entry, str):
            fleet.append(entry)
            continue
        fleet.append(
            connect(
                entry,
                model=common.get("model"),
                kind=common.get("kind"),
                api_key=common.get("api_key"),
                window=common.get("window"),
                timeout=common.get("timeout"),
            )
        )
    models = {s.model for s in fleet if s.model}
    if len(models) > 1:
        raise ValueError(
            f"The servers serve different models ({', '.join(sorted(models))}): runs on them would not "
            "compare. Give servers of one model (or model= to name it on each)."
        )
    return fleet


def members(
    fleet: Sequence[ModelServer], concurrency: int | Literal["auto"], client: httpx.Client | None = None
) -> list[Member]:
    """The fleet with each server's runs at once: ``concurrency``, or its own slots for ``"auto"``."""
    from twinny_magics.experiment.slots import server_slots  # noqa: PLC0415 - asks the servers

    out = []
    for number, server in enumerate(fleet, 1):
        slots = server_slots(server, client) if concurrency == "auto" or concurrency > 1 else 1
        at_once = slots if concurrency == "auto" else concurrency
        label = where(server) or f"server {number}"
        # Pinned only on llama.cpp that said it has a slot for every run under way there.
        out.append(Member(server, label, at_once, server.kind == "llamacpp" and slots >= at_once > 1))
    return out


def so_far(runs: Sequence[Run], seconds: float) -> str:
    """The pass rate of the runs judged so far and the tokens generated a second over them all."""
    parts = []
    judged = [r for r in runs if r.outcome in ("pass", "fail")]
    if judged:
        parts.append(f"{sum(r.passed for r in judged)}/{len(judged)} passed")
    generated = sum(r.generated_tokens for r in runs)
    if generated and seconds > 0:
        parts.append(f"{generated / seconds:.1f} tok/s")
    return " · ".join(parts)


def fleet_status(progress: Progress, labels: Sequence[str], seconds: float) -> str:
    """The fleet's part of the progress line: pass rate, tokens a second, and each server's runs."""
    parts = [so_far(list(progress.done.values()), seconds)] if progress.done else []
    if len(labels) > 1:
        for label, count in zip(labels, progress.servers, strict=False):
            state = f"down ({count.down})" if count.down else f"{count.done} done, {count.running} running"
            parts.append(f"{label}: {state}")
    if progress.requeued:
        parts.append(f"{progress.requeued} run{'s' if progress.requeued != 1 else ''} moved")
    if progress.busy:
        parts.append(f"{progress.busy} turned away as busy and started again")
    return " · ".join(part for part in parts if part)


def moved_and_down(progress: Progress, labels: Sequence[str]) -> dict[str, Any]:
    """What the results keep of runs at once: runs moved off a failed server, why each went down, and
    runs started again after a server turned them away as busy."""
    down = {label: c.down for label, c in zip(labels, progress.servers, strict=True) if c.down}
    return {"moved": progress.requeued, "down": down, "busy": progress.busy}
