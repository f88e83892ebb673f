"""Workspace confinement and writes, tried as an attacker would: with real files, symlinks, FIFOs, hard
links, git repositories and a real Python that imports what the agent wrote.

- Secrets stay home: the deny list of secret files (tools/denied.py) is never listed, found, read,
  grepped, edited or created, also through a link or in another case; it can be replaced or turned off.
- Nothing the agent writes is imported behind the user's back: modules that shadow installed ones,
  start-up hooks, .pth files and ignore files are refused under review and apply alike.
- Ignore rules as git has them: info/exclude, core.excludesFile, a BOM, other VCS folders; each
  ignore file parsed once while it does not change.
- find_files lists exactly what read_file accepts.
- Races and special files: a symlink or a folder swapped in after the check, a FIFO, a hard link.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from twinny_magics.conversation import ToolCall
from twinny_magics.errors import WorkspaceError
from twinny_magics.tools import PendingEdit, ToolOutput, Workspace, edits, files, ignores
from twinny_magics.tools import grep as grep_tool
from twinny_magics.tools.denied import DEFAULT_SECRET_FILES, SecretFiles
from twinny_magics.tools.opening import Target
from twinny_magics.tools.paths import Confinement

SECRET = "SUPERSECRET-5f3a"
HAS_GIT = shutil.which("git") is not None


async def call(ws: Workspace, name: str, **arguments: object) -> ToolOutput:
    return await ws.run(ToolCall(name, dict(arguments)))


def no_leak(out: ToolOutput, tmp_path: Path) -> None:
    """Nothing secret and no absolute path of this machine in a tool's answer."""
    assert SECRET not in out.text
    assert str(tmp_path) not in out.text
    assert str(tmp_path.resolve()) not in out.text


def refused(out: ToolOutput, *words: str) -> None:
    """The call failed, and its answer says each of ``words``."""
    assert out.is_error, out.text
    for word in words:
        assert word in out.text, out.text


def put(root: Path, rel: str, text: str = SECRET) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    return path


# --- 1. secrets stay home ----------------------------------------------------------------------------

SECRET_PATHS = [
    ".env",
    ".env.local",
    ".env.production",
    ".envrc",
    ".ENV",
    "config/.env",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "ID_RSA",
    "keys/deploy/id_ed25519",
    "server.pem",
    "tls.key",
    "cert.p12",
    "cert.pfx",
    "store.jks",
    "release.keystore",
    "putty.ppk",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".docker/config.json",
    "home/.docker/config.json",
    ".aws/credentials",
    ".aws/config",
    ".ssh/config",
    ".ssh/id_rsa.pub",
    ".gnupg/pubring.kbx",
    ".kube/config",
    ".azure/accessTokens.json",
    ".config/gcloud/application_default_credentials.json",
    ".config/gcloud/configurations/config_default",
    "secrets.yaml",
    "Secrets.TOML",
    "app/my_secret.txt",
    "credentials.json",
    "db_credentials/password.txt",
    "k8s/secrets/db.yaml",
    ".htpasswd",
    "prod.tfvars",
    "infra/terraform.tfstate",
]

VISIBLE_PATHS = [".env.example", ".env.sample", ".env.template", "id_rsa.pub", "keys.md", "src/app.py"]


@pytest.fixture
def secrets_tree(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for rel in SECRET_PATHS:
        put(ws, rel)
    for rel in VISIBLE_PATHS:
        put(ws, rel, "visible")
    return ws


@pytest.mark.parametrize("rel", SECRET_PATHS)
async def test_a_secret_file_is_withheld_from_every_tool(secrets_tree: Path, rel: str) -> None:
    """read, grep, edit and create of a secret path say it is withheld, and never what it holds."""
    ws = Workspace(secrets_tree, edits="apply")
    for tool, args in (
        ("read_file", {"path": rel}),
        ("grep", {"pattern": "SUPER", "path": rel}),
        ("edit_file", {"path": rel, "find": SECRET, "replace": "x"}),
        ("create_file", {"path": rel, "content": "x"}),
        ("read_file", {"path": str(secrets_tree / rel)}),
        ("read_file", {"path": f"src/../{rel}"}),
    ):
        out = await ws.run(ToolCall(tool, args))
        assert out.is_error, (tool, out.text)
        assert "withheld as a likely secret" in out.text, out.text
        no_leak(out, secrets_tree.parent)
    assert (secrets_tree / rel).read_text() == SECRET + "\n"


async def test_walks_skip_secrets_silently_and_show_the_rest(secrets_tree: Path) -> None:
    """list_dir, find_files and grep over the workspace show no secret path and no secret text."""
    ws = Workspace(secrets_tree)
    outs = [
        await call(ws, "list_dir"),
        await call(ws, "find_files", pattern="**/*"),
        await call(ws, "find_files", pattern="secret"),
        await call(ws, "find_files", pattern="*.pem"),
        await call(ws, "grep", pattern="SUPER"),
        await call(ws, "grep", pattern="."),
    ]
    listed = "\n".join(o.text for o in outs)
    for out in outs:
        assert not out.is_error, out.text
        no_leak(out, secrets_tree.parent)
    for rel in SECRET_PATHS:
        assert rel not in listed.split("\n"), rel
    # .docker/ and .kube/ are listed as folders; only their config files are withheld.
    for name in (
        ".env\n",
        "id_rsa\n",
        ".aws",
        ".ssh",
        ".gnupg",
        "kube/config",
        ".azure",
        "gcloud",
        "tfstate",
    ):
        assert name not in listed, name
    for rel in VISIBLE_PATHS:
        assert rel in listed, rel
    assert outs[4].text.startswith("No matches")


async def test_a_link_to_a_secret_is_withheld_whatever_its_name(secrets_tree: Path) -> None:
    """The rule applies to the path as resolved: `notes.txt -> .env` and a folder link to .ssh."""
    os.symlink(secrets_tree / ".env", secrets_tree / "notes.txt")
    os.symlink(secrets_tree / ".ssh", secrets_tree / "cfg")
    os.symlink(secrets_tree / ".aws" / "credentials", secrets_tree / "src" / "settings.ini")
    ws = Workspace(secrets_tree, edits="apply")
    for rel in ("notes.txt", "cfg/config", "src/settings.ini"):
        out = await call(ws, "read_file", path=rel)
        refused(out, "withheld as a likely secret")
        edit = await call(ws, "edit_file", path=rel, find=SECRET, replace="x")
        refused(edit)
        assert SECRET not in edit.text
    listing = await call(ws, "find_files", pattern="**/*")
    grepped = await call(ws, "grep", pattern="SUPER")
    for name in ("notes.txt", "cfg", "settings"):
        assert name not in listing.text
    assert grepped.text.startswith("No matches")


async def test_the_deny_list_can_be_replaced_extended_or_turned_off(tmp_path: Path) -> None:
    """secret_files=None keeps the defaults, a list replaces them, [] turns the deny list off."""
    put(tmp_path, ".env", "API=1")
    put(tmp_path, "data/app.sqlite", "rows")
    off = Workspace(tmp_path, secret_files=[])
    assert "API=1" in (await call(off, "read_file", path=".env")).text
    own = Workspace(tmp_path, secret_files=["*.sqlite"])
    assert "API=1" in (await call(own, "read_file", path=".env")).text
    assert "withheld" in (await call(own, "read_file", path="data/app.sqlite")).text
    more = Workspace(tmp_path, secret_files=[*DEFAULT_SECRET_FILES, "*.SQLite", "!.env"])
    assert "API=1" in (await call(more, "read_file", path=".env")).text  # an exception made
    assert "withheld" in (await call(more, "read_file", path="data/app.sqlite")).text
    conf = Confinement(tmp_path, secret_files=["data/"])
    with pytest.raises(WorkspaceError, match="withheld"):
        conf.resolve("data/app.sqlite")
    assert conf.resolve(".env").rel == ".env"
    with pytest.raises(TypeError):
        SecretFiles("*.env")  # type: ignore[arg-type]  # one string would be read as characters


def test_the_defaults_cover_what_the_brief_names() -> None:
    """Every pattern the issue asks for is matched; the templates and public keys are not."""
    rules = SecretFiles()
    for rel in SECRET_PATHS:
        assert rules.match(rel, is_dir=False) is not None, rel
    for rel in (*VISIBLE_PATHS, "id_ed25519.pub", "src/keyboard.py", "env/lib.py", "environment.yml"):
        assert rules.match(rel, is_dir=False) is None, rel
    assert not SecretFiles([])


def test_source_code_named_for_secrets_stays_readable_and_its_keys_are_masked() -> None:
    """credentials.py in an auth library is code a question is about; a data file of that name is not."""
    rules = SecretFiles()
    for rel in ("google/auth/credentials.py", "lib/secrets.pyi", "src/secretStore.ts", "docs/secrets.md"):
        assert rules.match(rel, is_dir=False) is None, rel
    for rel in ("client_secret.json", "secrets.yaml", "credentials.csv", "secrets/keys.py"):
        assert rules.match(rel, is_dir=False) is not None, rel


# --- 2. nothing the agent writes is imported behind the user's back ------------------------------------

PAYLOAD = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


def python_imports(cwd: Path, module: str) -> subprocess.CompletedProcess[str]:
    """A real Python started in ``cwd`` (so that cwd is first on sys.path) importing ``module``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    return subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("module", ["ipywidgets", "jedi"])
@pytest.mark.parametrize("mode", ["review", "apply"])
async def test_a_module_that_would_shadow_an_installed_one_is_refused(
    tmp_path: Path, module: str, mode: str
) -> None:
    """Control: written by hand, `<module>.py` runs when a Python in the folder imports it. The tool
    refuses to write it (and says why), so the same import runs the real module."""
    control = tmp_path / "control"
    control.mkdir()
    marker = tmp_path / f"ran-{module}"
    (control / f"{module}.py").write_text(PAYLOAD.format(marker=str(marker)))
    python_imports(control, module)
    assert marker.exists(), "control: a module in the working folder is imported first"
    marker.unlink()

    ws_root = tmp_path / "ws"
    ws_root.mkdir()
    ws = Workspace(ws_root, edits=mode)  # type: ignore[arg-type]
    out = await call(ws, "create_file", path=f"{module}.py", content=PAYLOAD.format(marker=str(marker)))
    # "installed" or "already imported", depending on whether an earlier test imported it in this process.
    refused(out, "Python would import it in place of the", f"module '{module}'", f"my_{module}.py")
    assert out.pending is None
    no_leak(out, tmp_path)
    assert ws.pending == []
    assert not (ws_root / f"{module}.py").exists()
    done = python_imports(ws_root, module)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()


REFUSED_WRITES = [
    ("json/__init__.py", "standard-library module 'json'"),
    ("os.py", "standard-library module 'os'"),
    ("sys.py", "built-in module 'sys'"),
    ("pathspec.py", "module 'pathspec'"),
    ("pytest/__init__.py", "module 'pytest'"),
    ("nbformat.py", "module 'nbformat'"),
    ("sitecustomize.py", "start-up"),
    ("usercustomize.py", "start-up"),
    ("lib/sitecustomize.py", "start-up"),
    ("deep/down/usercustomize/__init__.py", "start-up"),
    ("zz_evil.pth", ".pth"),
    ("sub/evil.PTH", ".pth"),
    ("__pycache__/helpers.cpython-311.pyc", "__pycache__"),
    ("pkg/__pycache__/mod.cpython-311.pyc", "__pycache__"),
    (".venv/lib/python3.11/site-packages/evil.py", "site-packages"),
    ("env/lib/dist-packages/evil.py", "dist-packages"),
    (".gitignore", "ignore file"),
    ("sub/.gitignore", "ignore file"),
    (".ignore", "ignore file"),
    (".GITIGNORE", "ignore file"),
    (".ipython/profile_default/startup/00-x.py", "IPython"),
    (".jupyter/jupyter_server_config.py", "Jupyter"),
    (".bashrc", "shell start-up"),
    (".profile", "shell start-up"),
]


@pytest.mark.parametrize(("rel", "why"), REFUSED_WRITES)
@pytest.mark.parametrize("mode", ["review", "apply"])
async def test_files_python_git_or_a_shell_act_on_are_never_written(
    tmp_path: Path, rel: str, why: str, mode: str
) -> None:
    """create_file refuses with the reason, leaves nothing pending and nothing on disk."""
    ws = Workspace(tmp_path, edits=mode)  # type: ignore[arg-type]
    out = await call(ws, "create_file", path=rel, content="import os\n")
    refused(out, "create_file was refused", why)
    assert out.pending is None
    assert not (tmp_path / rel).exists()
    assert ws.pending == []


@pytest.mark.parametrize("mode", ["review", "apply"])
async def test_editing_an_existing_shadowing_module_or_ignore_file_is_refused(
    tmp_path: Path, mode: str
) -> None:
    """The user's own `jedi.py` or `.gitignore` is not changed either; what .gitignore hides stays hidden."""
    put(tmp_path, "jedi.py", "x = 1")
    put(tmp_path, ".gitignore", "private.txt")
    put(tmp_path, "private.txt", SECRET)
    ws = Workspace(tmp_path, edits=mode)  # type: ignore[arg-type]
    first = await call(ws, "edit_file", path="jedi.py", find="x = 1", replace="import os")
    second = await call(ws, "edit_file", path=".gitignore", find="private.txt", replace="")
    for out in (first, second):
        refused(out, "edit_file was refused")
        assert out.pending is None
    assert (tmp_path / "jedi.py").read_text() == "x = 1\n"
    assert (tmp_path / ".gitignore").read_text() == "private.txt\n"
    assert "ignored" in (await call(ws, "read_file", path="private.txt")).text


async def test_ordinary_modules_and_modules_in_subfolders_are_written(tmp_path: Path) -> None:
    """Only names that stand in for another module are refused: a subfolder file is `pkg.json`."""
    ws = Workspace(tmp_path, edits="apply")
    for rel in ("helpers_4f1.py", "sub/json.py", "tests/test_os.py", "mypkg_4f1/__init__.py", "notes.md"):
        out = await call(ws, "create_file", path=rel, content="x = 1\n")
        assert not out.is_error, out.text
        assert (tmp_path / rel).exists()


async def test_a_workspace_folder_on_sys_path_counts_like_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`src/jedi.py` is refused once `src` is on sys.path (an editable install, PYTHONPATH=src)."""
    ws = Workspace(tmp_path, edits="apply")
    assert not (await call(ws, "create_file", path="src/jedi.py", content="x\n")).is_error
    (tmp_path / "src" / "jedi.py").unlink()
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    out = await call(ws, "create_file", path="src/jedi.py", content="x\n")
    refused(out, "src is a folder on the kernel's import path")


async def test_the_users_own_imported_module_stays_editable_but_one_imported_from_elsewhere_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module imported *from this file* shadows nothing; a module imported from elsewhere is refused."""
    put(tmp_path, "own_mod_4f1.py", "x = 1")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("own_mod_4f1", "other_mod_4f1"):
        monkeypatch.setitem(sys.modules, name, None)  # recorded as absent: undone after the test
        del sys.modules[name]
    __import__("own_mod_4f1")
    ws = Workspace(tmp_path, edits="apply")
    out = await call(ws, "edit_file", path="own_mod_4f1.py", find="x = 1", replace="x = 2")
    assert not out.is_error, out.text
    elsewhere = tmp_path.parent / f"{tmp_path.name}-lib"
    put(elsewhere, "other_mod_4f1.py", "y = 1")
    monkeypatch.syspath_prepend(str(elsewhere))
    __import__("other_mod_4f1")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(elsewhere)])
    out = await call(ws, "create_file", path="other_mod_4f1.py", content="y = 2\n")
    refused(out, "already imported module 'other_mod_4f1'")


async def test_the_check_imports_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed package whose import would leave a mark is found but not imported."""
    lib = tmp_path / "lib"
    marker = tmp_path / "imported"
    put(lib, "probe_pkg_4f1/__init__.py", PAYLOAD.format(marker=str(marker)).strip())
    monkeypatch.syspath_prepend(str(lib))
    ws_root = tmp_path / "ws"
    ws_root.mkdir()
    ws = Workspace(ws_root, edits="apply")
    out = await call(ws, "create_file", path="probe_pkg_4f1.py", content="x\n")
    refused(out, "installed module 'probe_pkg_4f1'")
    assert not marker.exists()
    assert "probe_pkg_4f1" not in sys.modules


async def test_a_pending_module_that_became_a_shadow_is_refused_at_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check runs again when the user applies: a name installed meanwhile is not written."""
    ws_root = tmp_path / "ws"
    ws_root.mkdir()
    ws = Workspace(ws_root)
    out = await call(ws, "create_file", path="late_mod_4f1.py", content="x = 1\n")
    edit = out.pending
    assert edit is not None, out.text
    put(tmp_path / "lib", "late_mod_4f1.py", "x = 0")
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    with pytest.raises(WorkspaceError, match="Python would import it"):
        edit.apply()
    assert edit.status == "refused"
    assert not (ws_root / "late_mod_4f1.py").exists()


# --- 3. ignore rules as git has them ----------------------------------------------------------------------


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env, timeout=30)


@pytest.fixture
def git_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME and XDG_CONFIG_HOME of our own, so the user's git config plays no part."""
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return home


async def assert_hidden(ws: Workspace, rel: str) -> None:
    listing = await call(ws, "find_files", pattern="**/*")
    assert rel not in listing.text.split("\n"), listing.text
    out = await call(ws, "read_file", path=rel)
    refused(out, "not available")


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
async def test_info_exclude_of_a_real_repository_hides_files(tmp_path: Path, git_home: Path) -> None:
    ws_root = tmp_path / "repo"
    ws_root.mkdir()
    git(ws_root, "init", "-q")
    (ws_root / ".git" / "info" / "exclude").write_text("# local\nexcluded.txt\nscratch/\n")
    put(ws_root, "excluded.txt", SECRET)
    put(ws_root, "scratch/notes.txt", SECRET)
    put(ws_root, "kept.txt", "kept")
    ws = Workspace(ws_root)
    await assert_hidden(ws, "excluded.txt")
    await assert_hidden(ws, "scratch/notes.txt")
    assert "kept.txt" in (await call(ws, "find_files", pattern="**/*")).text
    assert (await call(ws, "grep", pattern="SUPER")).text.startswith("No matches")


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
async def test_core_excludes_file_from_git_config_and_the_default_place(
    tmp_path: Path, git_home: Path
) -> None:
    """`git config --global core.excludesFile` is honoured; without it, $XDG_CONFIG_HOME/git/ignore."""
    ws_root = tmp_path / "repo"
    ws_root.mkdir()
    git(ws_root, "init", "-q")
    put(ws_root, "a.scratch", SECRET)
    put(ws_root, "b.tmpdata", SECRET)
    put(git_home / ".config" / "git", "ignore", "*.tmpdata")
    await assert_hidden(Workspace(ws_root), "b.tmpdata")
    put(git_home, "my-ignores", "*.scratch")
    git(ws_root, "config", "--global", "core.excludesFile", "~/my-ignores")
    ws = Workspace(ws_root)
    await assert_hidden(ws, "a.scratch")
    assert "b.tmpdata" in (await call(ws, "find_files", pattern="**/*")).text  # the default is replaced


async def test_core_excludes_file_is_read_from_gitconfig_without_git(
    tmp_path: Path, git_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ignores.shutil, "which", lambda name: None)
    put(git_home, ".gitconfig", '[user]\n\tname = x\n[Core]\n\texcludesFile = "~/global-ignore" # mine')
    put(git_home, "global-ignore", "*.scratch")
    put(tmp_path / "ws", "a.scratch", SECRET)
    await assert_hidden(Workspace(tmp_path / "ws"), "a.scratch")


async def test_a_gitignore_with_a_byte_order_mark_is_read_as_git_reads_it(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_bytes(b"\xef\xbb\xbfhidden.txt\r\nalso/\n")
    put(tmp_path, "hidden.txt", SECRET)
    put(tmp_path, "also/x.txt", SECRET)
    ws = Workspace(tmp_path)
    await assert_hidden(ws, "hidden.txt")
    await assert_hidden(ws, "also/x.txt")


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
async def test_a_workspace_inside_a_repository_gets_the_rules_from_above(
    tmp_path: Path, git_home: Path
) -> None:
    """The repository's own .gitignore and info/exclude apply to a notebook folder inside it, unless
    they would hide that folder itself."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    put(repo, ".gitignore", "*.log\nnotebooks/out/\nscratch/")
    (repo / ".git" / "info" / "exclude").write_text("notebooks/local.txt\n")
    for rel in ("notebooks/run.log", "notebooks/out/x.txt", "notebooks/local.txt", "scratch/a.txt"):
        put(repo, rel, SECRET)
    put(repo, "notebooks/ok.txt", "ok")
    put(repo, "scratch/b.txt", "ok")
    ws = Workspace(repo / "notebooks")
    for rel in ("run.log", "out/x.txt", "local.txt"):
        await assert_hidden(ws, rel)
    assert "ok.txt" in (await call(ws, "find_files", pattern="**/*")).text
    inside_ignored = Workspace(repo / "scratch")  # the repository ignores the whole folder
    assert "a.txt" in (await call(inside_ignored, "find_files", pattern="**/*")).text


VCS_FOLDERS = [
    ".hg",
    ".svn",
    ".bzr",
    "_darcs",
    ".jj",
    "backup.git",
    "mirror.GIT",
    ".git.bak",
    ".GIT.old",
    ".git",
]


@pytest.mark.parametrize("folder", VCS_FOLDERS)
async def test_version_control_folders_and_their_copies_are_hidden(tmp_path: Path, folder: str) -> None:
    put(tmp_path, f"{folder}/config", SECRET)
    put(tmp_path, ".github/workflows/ci.yml", "ci")
    put(tmp_path, ".gitattributes", "* text")
    ws = Workspace(tmp_path)
    out = await call(ws, "read_file", path=f"{folder}/config")
    refused(out, "hidden from the tools")
    listing = await call(ws, "find_files", pattern="**/*")
    assert not [line for line in listing.text.split("\n") if line.startswith(folder + "/")], listing.text
    assert ".github/workflows/ci.yml" in listing.text
    assert ".gitattributes" in listing.text
    assert (await call(ws, "grep", pattern="SUPER")).text.startswith("No matches")


async def test_a_big_gitignore_is_parsed_once_until_it_changes(
    tmp_path: Path, git_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long .gitignore is parsed on the first call only; an edit to it counts from the next call.
    (The 100k-line timings are in the report of issue 17: 5.8 s a call before, parsed once now.)"""
    parsed: list[int] = []
    real_parse = ignores.parse_rules

    def counting(data: bytes) -> object:
        parsed.append(len(data))
        return real_parse(data)

    monkeypatch.setattr(ignores, "parse_rules", counting)
    (tmp_path / ".gitignore").write_text("".join(f"gen_{i}/\n" for i in range(20_000)) + "drop.txt\n")
    put(tmp_path, "drop.txt", SECRET)
    put(tmp_path, "keep.txt", "k")
    ws = Workspace(tmp_path)
    started = time.perf_counter()
    first = await call(ws, "read_file", path="keep.txt")
    first_s = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(3):
        assert not (await call(ws, "read_file", path="keep.txt")).is_error
    later_s = (time.perf_counter() - started) / 3
    assert not first.is_error
    assert len(parsed) == 1
    assert later_s < first_s / 3, (first_s, later_s)
    await assert_hidden(ws, "drop.txt")
    assert len(parsed) == 1
    # Same size, same mtime: caught by the content check, since the file changed just now.
    path = tmp_path / ".gitignore"
    before = path.stat()
    path.write_text(path.read_text().replace("drop.txt", "keep.txt"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    await assert_hidden(ws, "keep.txt")
    assert "drop.txt" in (await call(ws, "find_files", pattern="*.txt")).text
    assert len(parsed) == 2


# --- 4. find_files lists exactly what read_file accepts ------------------------------------------------


@pytest.fixture
def odd_tree(tmp_path: Path) -> Path:
    """Names that used to be listed but not readable, next to hidden, ignored, secret and linked ones."""
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = put(tmp_path, "outside.txt", SECRET)
    for rel in (
        " lead.txt",
        "trail.txt ",
        "~tilde.txt",
        "sub/~inner.txt",
        "mid dle.txt",
        "a\\b.txt",
        "C:x.txt",
        ".hidden_ok",
        "ignored.log",
        "sub/.env",
        "backup.git/HEAD",
        "ok/plain.txt",
    ):
        put(ws, rel, "text")
    deep = "/".join(["d" * 200] * 6)
    put(ws, f"{deep}/deep.txt", "text")
    (ws / ".gitignore").write_text("*.log\n")
    os.mkfifo(ws / "pipe")
    os.symlink(outside, ws / "link_out")
    os.symlink(ws / "ok" / "plain.txt", ws / "link_in")
    os.symlink(ws / "sub" / ".env", ws / "link_secret")
    os.symlink(ws / "missing.txt", ws / "dangling")
    fd = os.open(os.fsencode(ws) + b"/bad-\xff.txt", os.O_CREAT | os.O_WRONLY, 0o644)
    os.close(fd)
    return ws


def every_path(root: Path) -> Iterator[str]:
    """Every path under root, not entering linked folders, as a workspace-relative name."""
    for folder, dirs, names in os.walk(root):
        base = Path(folder).relative_to(root).as_posix()
        for name in dirs + names:
            yield name if base == "." else f"{base}/{name}"


async def test_find_files_lists_exactly_what_read_file_accepts(odd_tree: Path) -> None:
    conf = Confinement(odd_tree)
    listed = {e.rel for e in conf.walk(Target(conf.root, ".", conf.root), 10_000)}
    accepted = set()
    for rel in every_path(odd_tree):
        try:
            target = conf.resolve(rel)
        except WorkspaceError:
            continue
        # Accepted as itself (" lead.txt" is taken as "lead.txt", another file); a dangling link is
        # "does not exist", not a refusal.
        if os.path.exists(odd_tree / rel) and target.real == Path(os.path.realpath(odd_tree / rel)):
            accepted.add(rel)
    assert listed == accepted
    ws = Workspace(odd_tree)
    found = await call(ws, "find_files", pattern="**/*")
    for name in ("lead.txt", "trail.txt", "bad-"):
        assert name not in found.text
    for name in ("~tilde.txt", "sub/~inner.txt", "mid dle.txt"):
        assert name in found.text
    for rel in found.text.split("\n")[1:]:
        if rel.endswith("/") or rel in ("pipe",):
            continue
        out = await call(ws, "read_file", path=rel)
        assert not out.is_error, (rel, out.text)
    assert "~tilde.txt" in (await call(ws, "read_file", path="~tilde.txt")).text
    assert "home folder" in (await call(ws, "read_file", path="~/x")).text


# --- 5. races and special files ---------------------------------------------------------------------------


def swap_after_resolve(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    """Run ``swap`` once, right after the next path was checked: the attacker wins the race."""
    original = Confinement.resolve
    done = []

    def resolve(self: Confinement, raw: object, *, default: str = ".") -> Target:
        target = original(self, raw, default=default)
        if not done:
            done.append(True)
            swap()
        return target

    monkeypatch.setattr(Confinement, "resolve", resolve)


def replace_by_link(path: Path, to: Path) -> None:
    tmp = path.with_name(path.name + ".swap")
    os.symlink(to, tmp)
    os.replace(tmp, path)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    put(folder, "notes.txt", SECRET)
    return folder


@pytest.fixture
def ws_root(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    put(root, "notes.txt", "harmless")
    put(root, "docs/notes.txt", "harmless")
    return root


async def test_a_file_swapped_for_a_link_after_the_check_is_not_read(
    ws_root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    swap_after_resolve(monkeypatch, lambda: replace_by_link(ws_root / "notes.txt", outside / "notes.txt"))
    out = await call(Workspace(ws_root), "read_file", path="notes.txt")
    refused(out, "symbolic link appeared")
    no_leak(out, ws_root.parent)


async def test_a_folder_swapped_for_a_link_after_the_check_is_not_read(
    ws_root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swap() -> None:
        shutil.rmtree(ws_root / "docs")
        os.symlink(outside, ws_root / "docs")

    swap_after_resolve(monkeypatch, swap)
    out = await call(Workspace(ws_root), "read_file", path="docs/notes.txt")
    refused(out, "symbolic link appeared")
    no_leak(out, ws_root.parent)


async def test_a_folder_swapped_for_a_link_is_not_listed_or_walked(
    ws_root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folders are listed through a descriptor opened without following links: the outside folder's
    names do not show, neither in list_dir nor in a walk that meets the swapped folder."""
    put(outside, "outside-only-name.txt", "x")

    def swap() -> None:
        shutil.rmtree(ws_root / "docs")
        os.symlink(outside, ws_root / "docs")

    swap_after_resolve(monkeypatch, swap)
    out = await call(Workspace(ws_root), "list_dir", path="docs")
    refused(out, "symbolic link appeared")
    assert "outside-only-name" not in out.text
    (ws_root / "docs").unlink()
    put(ws_root, "docs/notes.txt", "harmless")
    conf = Confinement(ws_root)
    root = Target(conf.root, ".", conf.root)
    walk = iter(conf.walk(root, 100))
    first = next(walk)  # the walk lists the root, then enters docs/ — swapped meanwhile
    assert first.rel == "docs"
    assert first.is_dir
    assert not first.link
    swap()
    names = [first.rel, *(e.rel for e in walk)]
    assert not [n for n in names if "outside-only" in n or n.startswith("docs/")], names


@pytest.mark.parametrize("rel", ["notes.txt", "docs/notes.txt"])
async def test_an_apply_never_writes_through_a_link_swapped_in(
    ws_root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, rel: str
) -> None:
    """The file or its folder becomes a link to an outside file with the same content between the
    check and the write: the apply is refused and the outside file is untouched."""
    (outside / "notes.txt").write_text("harmless\n")
    ws = Workspace(ws_root)
    edit = (await call(ws, "edit_file", path=rel, find="harmless", replace="written")).pending
    assert edit is not None

    def swap() -> None:
        if rel == "notes.txt":
            replace_by_link(ws_root / "notes.txt", outside / "notes.txt")
        else:
            shutil.rmtree(ws_root / "docs")
            os.symlink(outside, ws_root / "docs")

    swap_after_resolve(monkeypatch, swap)
    with pytest.raises(WorkspaceError, match="symbolic link appeared") as caught:
        edit.apply()
    assert str(ws_root.parent) not in str(caught.value)
    assert edit.status == "refused"
    assert (outside / "notes.txt").read_text() == "harmless\n"
    assert sorted(p.name for p in outside.iterdir()) == ["notes.txt"]


async def test_an_apply_is_refused_when_the_folder_moves_while_it_writes(
    ws_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder opened for the write is renamed away (and another put in its place) before the
    rename: the temporary file is removed and nothing is written to either folder."""
    ws = Workspace(ws_root)
    edit = (await call(ws, "edit_file", path="docs/notes.txt", find="harmless", replace="written")).pending
    assert edit is not None
    original = edits.open_folder

    def open_then_move(target: Target, *, create: bool = False) -> int:
        fd = original(target, create=create)
        os.rename(ws_root / "docs", tmp_path / "moved")
        put(ws_root, "docs/notes.txt", "harmless")
        return fd

    monkeypatch.setattr(edits, "open_folder", open_then_move)
    with pytest.raises(WorkspaceError, match="moved or replaced"):
        edit.apply()
    assert (tmp_path / "moved" / "notes.txt").read_text() == "harmless\n"
    assert (ws_root / "docs" / "notes.txt").read_text() == "harmless\n"
    assert sorted(p.name for p in (tmp_path / "moved").iterdir()) == ["notes.txt"]


def run_with_deadline(fn: Callable[[], object], fifo: Path, seconds: float = 10) -> object:
    """Run ``fn`` in a thread; if it blocks on the FIFO, unblock it (open the other end) and fail."""
    result: list[object] = []

    def target() -> None:
        try:
            result.append(fn())
        except BaseException as exc:
            result.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        with open(fifo, "wb"):  # the blocked reader gets EOF
            pass
        thread.join(5)
        pytest.fail("blocked on a FIFO")
    return result[0]


async def test_apply_refuses_a_file_replaced_by_a_fifo_without_blocking(ws_root: Path) -> None:
    ws = Workspace(ws_root)
    edit = (await call(ws, "edit_file", path="notes.txt", find="harmless", replace="x")).pending
    assert edit is not None
    (ws_root / "notes.txt").unlink()
    os.mkfifo(ws_root / "notes.txt")
    outcome = run_with_deadline(edit.apply, ws_root / "notes.txt")
    assert isinstance(outcome, WorkspaceError), outcome
    assert "no longer a regular file" in str(outcome)
    assert edit.status == "refused"
    assert (ws_root / "notes.txt").is_fifo()


async def test_reads_and_greps_do_not_block_on_a_fifo_swapped_in(
    ws_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is checked to be a regular file, then a FIFO takes its place before it is opened."""
    original = files.is_regular

    def is_regular_then_swap(path: Path) -> bool:
        answer = original(path)
        if path.name == "notes.txt" and path.parent == ws_root.resolve() and not path.is_fifo():
            path.unlink()
            os.mkfifo(path)
        return answer

    monkeypatch.setattr(files, "is_regular", is_regular_then_swap)
    monkeypatch.setattr(grep_tool, "is_regular", is_regular_then_swap)
    ws = Workspace(ws_root)
    out = run_with_deadline(
        lambda: asyncio.run(call(ws, "read_file", path="notes.txt")), ws_root / "notes.txt"
    )
    assert isinstance(out, ToolOutput), out
    refused(out, "not a regular file")
    (ws_root / "notes.txt").unlink()
    put(ws_root, "notes.txt", "harmless")
    grepped = run_with_deadline(lambda: asyncio.run(call(ws, "grep", pattern=".")), ws_root / "notes.txt")
    assert isinstance(grepped, ToolOutput), grepped
    assert "docs/notes.txt:1: harmless" in grepped.text


async def test_a_hard_link_to_an_outside_file_is_neither_read_nor_changed(
    ws_root: Path, outside: Path
) -> None:
    os.link(outside / "notes.txt", ws_root / "linked.txt")
    ws = Workspace(ws_root, edits="apply")
    read = await call(ws, "read_file", path="linked.txt")
    refused(read, "hard-linked", "2 names")
    grepped = await call(ws, "grep", pattern="SUPER")
    edit = await call(ws, "edit_file", path="linked.txt", find=SECRET, replace="x")
    refused(edit, "hard-linked")
    for out in (read, grepped, edit):
        no_leak(out, ws_root.parent)
    assert (outside / "notes.txt").read_text() == SECRET + "\n"


async def test_a_file_hard_linked_after_the_proposal_is_not_applied(ws_root: Path, outside: Path) -> None:
    ws = Workspace(ws_root)
    edit: PendingEdit | None = (
        await call(ws, "edit_file", path="notes.txt", find="harmless", replace="x")
    ).pending
    assert edit is not None
    os.link(ws_root / "notes.txt", outside / "other-name.txt")
    with pytest.raises(WorkspaceError, match="hard-linked"):
        edit.apply()
    assert (outside / "other-name.txt").read_text() == "harmless\n"
    assert (ws_root / "notes.txt").read_text() == "harmless\n"


async def test_a_create_does_not_overwrite_a_file_that_appeared_meanwhile(ws_root: Path) -> None:
    """The new file is linked into place, so a name that appeared after the last look is not replaced."""
    ws = Workspace(ws_root)
    edit = (await call(ws, "create_file", path="new/made.txt", content="mine\n")).pending
    assert edit is not None
    assert edit.apply() == "Created new/made.txt."
    assert (ws_root / "new" / "made.txt").read_text() == "mine\n"
    assert [p.name for p in (ws_root / "new").iterdir()] == ["made.txt"]
    assert (ws_root / "new" / "made.txt").stat().st_nlink == 1


async def test_a_notebook_gets_the_same_checks_as_any_file(ws_root: Path, outside: Path) -> None:
    """A hard-linked .ipynb is not read as cells either (read_file and grep)."""
    (outside / "nb.ipynb").write_text(
        '{"cells": [{"cell_type": "code", "source": "key = \\"' + SECRET + '\\""}], "metadata": {}, '
        '"nbformat": 4, "nbformat_minor": 5}'
    )
    os.link(outside / "nb.ipynb", ws_root / "nb.ipynb")
    ws = Workspace(ws_root)
    read = await call(ws, "read_file", path="nb.ipynb")
    refused(read, "hard-linked")
    grepped = await call(ws, "grep", pattern="key")
    for out in (read, grepped):
        no_leak(out, ws_root.parent)


async def test_a_key_written_in_a_visible_source_file_reaches_the_model_masked(tmp_path: Path) -> None:
    key = "sk-proj-" + "Ab3" * 15
    put(tmp_path, "app/credentials.py", f'API_KEY = "{key}"\nTIMEOUT = 30\n')
    ws = Workspace(tmp_path)
    for output in (
        await call(ws, "read_file", path="app/credentials.py"),
        await call(ws, "grep", pattern="API_KEY"),
    ):
        assert key not in output.text
        assert "[secret hidden]" in output.text
    assert "TIMEOUT = 30" in (await call(ws, "read_file", path="app/credentials.py")).text
