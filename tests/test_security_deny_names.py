"""The deny list covers the credential files people really have, and only those.

`CREDENTIAL_NAMES` are names credentials are really kept under: copies and variants of ``.env`` and of
SSH keys, kubeconfigs, cloud keys (a GCP service account's JSON, gcloud's, Firebase's), token files,
tools' credential stores, key stores, password databases, shell histories. Each is put in a real
workspace — at the top, deep in folders, and in capitals — and must be withheld by the real tools:
list_dir and find_files never show it, read_file says it is withheld, grep finds nothing in it.

`NEAR_MISSES` are ordinary files whose names come close (``token.py``, ``tokenizer.json``,
``credentials.py``, ``kube_config.py``, Alembic's ``env.py``, ``.env.example``, ``id_rsa.pub``,
``password_reset/urls.py``, ``.yarnrc.yml``): the same tools show and read them.

``benchmarks/bench_denylist.py`` measures both lists against the deny list before and after.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twinny_magics.conversation import ToolCall
from twinny_magics.tools import Workspace
from twinny_magics.tools.denied import DEFAULT_SECRET_FILES, SecretFiles, backup_original

CREDENTIAL_NAMES = [
    # Environment files and their copies.
    ".env.bak",
    ".env~",
    ".env.save",
    ".env.old",
    "env.local",
    ".env.production.local",
    ".env-prod",
    "prod.env",
    ".envrc.local",
    ".envs/.production/.django",
    ".env.local.php",
    # SSH keys, their copies, and keys named by hand.
    "id_rsa.bak",
    "id_ed25519.old",
    "id_rsa~",
    "id_ecdsa.orig",
    ".id_rsa.swp",
    "deploy_rsa",
    "github_ed25519",
    "ssh_host_ed25519_key",
    "deploy-key",
    "server.pem.bak",
    "tls.key.old",
    # Kubernetes.
    "kubeconfig",
    "prod.kubeconfig",
    "kube.config",
    "kubeconfig.yaml",
    "kubeconfig-staging",
    "kube_config_cluster.yml",
    # Cloud keys.
    "service-account.json",
    "service_account.json",
    "serviceAccountKey.json",
    "my-project-sa.json",
    "gcp-key.json",
    "key.json",
    "application_default_credentials.json",
    "adc.json",
    "shop-firebase-adminsdk-x1y2z-0a1b2c3d4e.json",
    "client_secret_1234-abcd.apps.googleusercontent.com.json",
    "credentials.json",
    "token.json",
    "token.pickle",
    ".boto",
    ".s3cfg",
    ".passwd-s3fs",
    ".oci/config",
    ".config/doctl/config.yaml",
    "prod.publishsettings",
    # Token files.
    ".token",
    "token.txt",
    ".hf_token",
    ".cache/huggingface/token",
    ".cache/huggingface/stored_tokens",
    "github_token",
    "gitlab-token.txt",
    "deploy.token",
    ".vault-token",
    # Tools' credential stores.
    ".pypirc",
    ".npmrc",
    ".npmrc~",
    ".terraformrc",
    "terraform.rc",
    ".databrickscfg",
    ".dockercfg",
    ".pgpass",
    ".my.cnf",
    ".mylogin.cnf",
    ".git-credentials",
    "_netrc",
    ".netrc",
    ".netrc.bak",
    "htpasswd",
    ".htpasswd",
    "rclone.conf",
    "settings-security.xml",
    "sftp-config.json",
    ".vscode/sftp.json",
    "recentservers.xml",
    "wp-config.php",
    "wp-config.php.bak",
    "secrets.yaml",
    "terraform.tfstate.backup",
    # Key stores and password databases.
    "keystore",
    "release.keystore",
    "upload.jks",
    "AuthKey_ABC123DEFG.p8",
    "android/key.properties",
    "keystore.properties",
    "client.ovpn",
    "vault.kdb",
    "login.keychain-db",
    "1Password.agilekeychain",
    "secring.gpg",
    "backup/private-keys-v1.d/0A1B2C3D.key",
    # Names that say so.
    "passwords.txt",
    "db_password",
    "api_key.txt",
    "openai-apikey",
    "private_key.json",
    # Histories of commands typed with keys in them.
    ".bash_history",
    ".psql_history",
]

NEAR_MISSES = [
    "token.py",
    "tokens.py",
    "tokenize.py",
    "test_token.py",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "tokens.json",
    "tokenizer.model",
    "token/token.go",
    "credentials.py",
    "google/auth/credentials.py",
    "test_secrets.py",
    "secret_handling.md",
    "keys.md",
    "keys.py",
    "kube_config.py",
    "kubeconfig_test.go",
    "keyboard.py",
    "keymap.json",
    "keybindings.json",
    "monkey.py",
    "keyring/backend.py",
    "api_key.py",
    "private_key.md",
    "env.py",
    "migrations/env.py",
    "environment.yml",
    "env/lib.py",
    "src/environments/environment.prod.ts",
    "vite-env.d.ts",
    ".env.example",
    ".env.sample",
    ".env.template",
    ".env.local.example",
    ".env.dist",
    "id_rsa.pub",
    "id_ed25519.pub",
    "deploy_rsa.pub",
    "known_hosts",
    "ca.crt",
    "server.crt",
    "password_validation.py",
    "PasswordInput.tsx",
    "reset_password.html",
    "forgot-password.vue",
    "password_reset/urls.py",
    "passport.js",
    "bypass.py",
    "google-services.json",
    "GoogleService-Info.plist",
    ".firebaserc",
    "firebase.json",
    ".yarnrc.yml",
    ".npmignore",
    ".gcloudignore",
    ".editorconfig",
    ".htaccess",
    "config.php",
    "wp-config-sample.php",
    "settings.py",
    "settings.py.bak",
    "README.md.orig",
    "database.yml",
    "application.properties",
    "appsettings.Development.json",
    "docker-compose.yml",
    "terraform.tfvars.example",
    "main.tf",
    "history.py",
    "HISTORY.md",
    "vault.py",
    "sa.py",
    "pem.go",
]

CANARY = "CANARY-7c1e"


def _shouted(rel: str) -> str:
    return rel.upper()


def _placements(rel: str) -> list[str]:
    """Where a name is put: as written, deep in folders, and in capitals."""
    return [rel, f"deep/er/{rel}", f"deep/{_shouted(rel)}"]


def _make(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


async def _run(ws: Workspace, tool: str, **arguments: object) -> tuple[bool, str]:
    out = await ws.run(ToolCall(tool, dict(arguments)))
    return out.is_error, out.text


def test_the_lists_are_long_enough_and_apart() -> None:
    """At least 50 names on each side, none on both."""
    assert len(CREDENTIAL_NAMES) >= 50
    assert len(NEAR_MISSES) >= 50
    assert not set(CREDENTIAL_NAMES) & set(NEAR_MISSES)
    assert len(set(CREDENTIAL_NAMES)) == len(CREDENTIAL_NAMES)
    assert len(set(NEAR_MISSES)) == len(NEAR_MISSES)


@pytest.mark.parametrize("name", CREDENTIAL_NAMES)
async def test_a_credential_file_is_withheld_by_every_tool_wherever_it_is(tmp_path: Path, name: str) -> None:
    """list_dir and find_files never show it, read_file says it is withheld, grep finds nothing in it —
    at the top, deep in folders, and in capitals."""
    places = _placements(name)
    for rel in places:
        _make(tmp_path, rel, f"{CANARY} {rel}")
    ws = Workspace(tmp_path)
    last = name.rstrip("/").rsplit("/", 1)[-1]
    seen: list[str] = []
    for rel in places:
        error, text = await _run(ws, "read_file", path=rel)
        assert error, text
        assert "withheld as a likely secret" in text, text
        assert f"{CANARY} " not in text
        parent = rel.rsplit("/", 1)[0] if "/" in rel else "."
        error, text = await _run(ws, "list_dir", path=parent)
        # The folder itself may be withheld (`.oci/`); else the name is not among its entries.
        assert ("withheld" in text) if error else last.lower() not in text.lower(), text
        seen.append(text)
    for pattern in ("**/*", last, f"*{last[-4:]}"):
        error, text = await _run(ws, "find_files", pattern=pattern)
        assert not error, text
        seen.append(text)
    error, text = await _run(ws, "grep", pattern=CANARY)
    assert text.startswith("No matches"), text
    seen.append(text)
    listed = "\n".join(seen)
    assert f"{CANARY} " not in listed  # the text, not grep's echo of its pattern
    for rel in places:
        assert rel not in listed.split("\n"), rel
        assert not any(line.endswith(rel.rsplit("/", 1)[-1]) for line in listed.split("\n")), (rel, listed)


@pytest.mark.parametrize("name", NEAR_MISSES)
async def test_an_ordinary_file_with_a_close_name_is_shown_and_read(tmp_path: Path, name: str) -> None:
    """read_file reads it, list_dir and find_files list it, grep finds its text — also deep in folders."""
    places = [name, f"deep/er/{name}"]
    for rel in places:
        _make(tmp_path, rel, f"{CANARY} {rel}")
    ws = Workspace(tmp_path)
    for rel in places:
        error, text = await _run(ws, "read_file", path=rel)
        assert not error, text
        assert f"{CANARY} {rel}" in text
        parent = rel.rsplit("/", 1)[0] if "/" in rel else "."
        error, text = await _run(ws, "list_dir", path=parent)
        assert not error, text
        assert rel.rsplit("/", 1)[-1] in text, text
    error, text = await _run(ws, "find_files", pattern="**/*")
    assert all(rel in text.split("\n") for rel in places), text
    error, text = await _run(ws, "grep", pattern=CANARY)
    assert all(f"{CANARY} {rel}" in text for rel in places), text


def test_the_deny_list_says_which_pattern_withholds_each_credential_and_none_for_the_others() -> None:
    """The same verdicts from the rules alone, for files and (where a name can be a folder) folders."""
    rules = SecretFiles()
    for name in CREDENTIAL_NAMES:
        for rel in _placements(name):
            assert rules.match(rel, is_dir=False) is not None, rel
    for name in NEAR_MISSES:
        assert rules.match(name, is_dir=False) is None, name
        assert rules.match(f"deep/{name}", is_dir=False) is None, name
    for folder in ("password_reset", "token", "env", "environments", "keyring", "history"):
        assert rules.match(folder, is_dir=True) is None, folder


def test_a_backup_is_withheld_when_what_it_copies_is() -> None:
    """Backups and editors' copies name their original; a user's own pattern covers its backups too."""
    assert backup_original("id_rsa.bak") == "id_rsa"
    assert backup_original(".env~") == ".env"
    assert backup_original(".wp-config.php.swp") == "wp-config.php"
    assert backup_original("#server.key#") == "server.key"
    assert backup_original(".#.netrc") == ".netrc"
    assert backup_original("data.sqlite.old.bak") == "data.sqlite"
    assert backup_original("settings.py") is None
    assert backup_original("~") is None
    own = SecretFiles(["*.sqlite"])
    assert own.match("db/app.sqlite.bak", is_dir=False) == "*.sqlite"
    assert own.match("db/app.sqlite~", is_dir=False) == "*.sqlite"
    assert own.match("db/app.db.bak", is_dir=False) is None


_PIECES = sorted(
    {piece for p in DEFAULT_SECRET_FILES for piece in re.split(r"[*?/!\[\]]+", p.lower()) if piece}
    | {"a", "x", ".", "_", "-", "~", "#", "bak", "swp", "py", "md"}
)
OWN_PATTERNS = ["*.sqlite", "data?.csv", "cache*", "*tmp*x*", "notes/", "**/private/*.txt", "!cache.md"]


@settings(max_examples=400, deadline=None)
@given(
    name=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4).map("".join),
    folder=st.sampled_from(["", "deep/", "deep/er/", "notes/", "private/"]),
    shout=st.booleans(),
)
def test_the_quick_name_test_never_skips_a_name_a_pattern_matches(
    name: str, folder: str, shout: bool
) -> None:
    """The string-method test that spares most names pathspec's loop gives the same verdicts as
    pathspec alone, on names made of the patterns' own pieces, for the defaults and a user's list."""
    rel = folder + (name.upper() if shout else name)
    for patterns in (None, OWN_PATTERNS):
        quick = SecretFiles(patterns)
        exact = SecretFiles(patterns)
        exact._names = None  # no pre-test: pathspec decides every name
        for is_dir in (False, True):
            assert quick.match(rel, is_dir=is_dir) == exact.match(rel, is_dir=is_dir), (rel, patterns)
