"""What the tools never show: the deny list of secret-bearing files (`DEFAULT_SECRET_FILES`) and its
matching (`SecretFiles`). What they never write is in `unwritable`.

`DEFAULT_SECRET_FILES` lists files and folders that usually hold credentials. They are gitignore-style
patterns, matched case-insensitively against the workspace-relative path — the path as the model asked
for it *and* as it resolves, so a symlink named ``notes.txt`` that points at ``.env`` is withheld too. A
folder that matches withholds everything inside it (``.ssh/`` covers ``.ssh/id_rsa.pub`` as well). The
tools never list, find, read, grep, edit or create such a path: a walk skips it silently and a direct
request is told that the file is withheld as a likely secret, never what it holds.

The defaults (in ``DEFAULT_SECRET_FILES``, each group with the reason it is there):

- environment files: ``.env`` and every name that starts with it (``.env.production.local``,
  ``.env-prod``, ``.env~``, ``.envrc``, Symfony's ``.env.local.php``, cookiecutter's ``.envs/``), docker's
  ``*.env`` and ``*.env.*``, ``env.local`` — but not the templates checked in beside them
  (``*.example``, ``*.sample``, ``*.template``, ``*.dist``) nor type declarations (``*.d.ts``);
- private keys: ``id_rsa*``, ``id_dsa*``, ``id_ecdsa*``, ``id_ed25519*`` (their copies and ``_sk``
  variants), keys named by hand (``*_rsa``, ``*_ed25519``, ``*_key``, ``*-key``: ``deploy_rsa``,
  ``ssh_host_ed25519_key``), ``*.pem``, ``*.key``, ``*.p8``; the ``.pub`` halves stay visible;
- key stores and password databases: ``*.p12``, ``*.pfx``, ``*.jks``, ``*.bks``, ``*.keystore``,
  ``keystore``, Android's ``key.properties`` / ``keystore.properties``, ``*.ppk``, ``*.kdbx``, ``*.kdb``,
  ``*.psafe3``, ``*.agilekeychain``, ``*.opvault``, ``*.keychain``, ``*.keychain-db``, ``*.ovpn``, GnuPG's
  ``secring.*`` and ``private-keys-v1.d/``;
- tools' credential stores: ``.netrc``, ``_netrc``, ``.pgpass``, ``.my.cnf``, ``.mylogin.cnf``,
  ``.npmrc``, ``.pypirc``, ``.git-credentials``, ``.docker/config.json``, ``.dockercfg``,
  ``.kube/config``, ``*.kubeconfig``, ``.config/gh/hosts.yml``, ``.config/hub``, ``.config/doctl/``,
  ``rclone.conf``, ``.s3cfg``, ``.boto``, ``.vault-token``, ``.terraformrc``, ``terraform.rc``,
  ``.databrickscfg``, ``*passwd*`` (``.htpasswd``, ``.passwd-s3fs``), Maven's ``settings-security.xml``,
  ``wp-config.php``, the SFTP/FTP clients' ``sftp-config.json``, ``.vscode/sftp.json``, ``.ftpconfig``,
  ``.remote-sync.json``, FileZilla's ``filezilla.xml`` / ``recentservers.xml`` / ``sitemanager.xml``,
  Azure's ``*.publishsettings``;
- token files: Hugging Face's ``huggingface/token`` and ``stored_tokens``, ``.token``, ``*.token``,
  ``token.txt``, the ``token.json`` / ``token.pickle`` that Google's quickstarts write, ``*_token``,
  ``*-token`` and those with ``.txt`` / ``.json`` (``.hf_token``, ``github_token``, ``gitlab-token.txt``);
- cloud keys: a service account's JSON key (``*service?account*.json``, ``*serviceaccount*.json``,
  ``*firebase-adminsdk*.json``, ``*-sa.json``, ``key.json``, ``*-key.json``, ``*_key.json``), gcloud's
  ``adc.json`` and ``access_tokens.db``;
- whole folders: ``.aws/``, ``.ssh/``, ``.gnupg/``, ``.azure/``, ``.oci/``, ``.config/gcloud/``;
- shells' and database clients' histories (``.*_history``, ``.histfile``): commands typed with a key;
- names that say so: ``*secret*`` and ``*credential*`` (files and folders alike), and a name that ends
  in ``password``/``passwords``, ``apikey``/``api_key``/``api-key`` (and plurals), ``private_key`` or
  ``kubeconfig``/``kube_config`` — alone or with one extension (``db_password``, ``passwords.txt``,
  ``openai-apikey``, ``kube_config_cluster.yml``) — except source code and docs (``credentials.py``,
  ``secrets.ts``, ``password_reset.html``, ``kube_config.py``, ``secret-handling.md``): those are the code
  a question is about, and a key written in them is masked in every result (``redact``);
- Terraform: ``*.tfvars``, ``*.tfvars.json``, ``*.tfstate``, ``*.tfstate.*``.

A backup or an editor's copy is withheld when the name it copies is (`backup_original`): ``id_rsa.bak``,
``.netrc~``, ``wp-config.php.save``, vim's ``.wp-config.php.swp``, emacs' ``#server.key#`` — with the
user's own patterns too (``*.sqlite`` withholds ``app.sqlite.old``).

Left visible on purpose: ``*.age`` and other encrypted files (ciphertext without its key), public
certificates (``*.crt``, ``*.cer``) and keys (``*.pub``), ``*.mobileprovision`` (a signed profile, no
private key), ``.yarnrc.yml``, ``google-services.json``, ``.firebaserc``, ``settings.py``,
``database.yml``: configuration that a question is often about and that may hold a token, which is
masked where it is written (``redact``).

Override with ``secret_files=`` on `Workspace` (or `Confinement`): ``None`` keeps the defaults, a list
of patterns replaces them (``[*DEFAULT_SECRET_FILES, "*.sqlite"]`` extends them, a ``!pattern`` line
makes an exception), and ``[]`` turns the deny list off. Patterns follow .gitignore rules: one without a
slash matches a name at any depth; one with a slash in the middle is anchored at the workspace root.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable

import pathspec

from twinny_magics.tools.ignores import NameFilter

# Code and docs named for what they handle (`credentials.py`, `password_reset.html`, `secrets.md`): the
# names that say "secret" leave these visible.
_SOURCE_EXTENSIONS = (
    "py", "pyi", "ipynb", "js", "mjs", "cjs", "ts", "tsx", "jsx", "vue", "svelte", "go", "rs", "java",
    "kt", "rb", "php", "cs", "c", "h", "cc", "cpp", "hpp", "swift", "scala", "dart", "lua", "r", "jl",
    "html", "htm", "css", "scss", "less", "md", "rst",
)  # fmt: skip
# Words that, in a file's name, say it holds a credential (`db_password.txt`, `api-key`,
# `prod.kubeconfig`). `*secret*` and `*credential*` also withhold folders of that name; the others match
# a name that ends in the word, or in the word and one extension, so that a folder of code named for
# what it handles (Django's `password_reset/`) is not withheld whole.
_SAYS_SO = ("secret", "credential")
_ENDS_SO = (
    "password", "passwords", "apikey", "api?key", "apikeys", "api?keys", "privatekey", "private?key",
    "kubeconfig", "kube?config",
)  # fmt: skip
# Suffixes of backups and editors' copies: `id_rsa.bak`, `.netrc~`, `wp-config.php.save` are withheld
# because the name they were copied from is (`SecretFiles.match`).
BACKUP_SUFFIXES = (
    ".bak", ".backup", ".old", ".orig", ".save", ".sav", ".tmp", ".temp", ".copy", ".prev", ".swp", ".swo",
)  # fmt: skip
DEFAULT_SECRET_FILES: tuple[str, ...] = (
    # Names that say what they hold...
    *(f"*{word}*" for word in _SAYS_SO),
    *(f"*{word}{end}" for word in _ENDS_SO for end in ("", ".*")),
    "kubeconfig?*",
    "kube?config?*",
    "*passwd*",
    # ...but not source code or docs (google-auth's credentials.py, Python's own secrets.py, Django's
    # password_validation.py): hiding them loses the code questions are about, and a key written in them
    # is masked in every tool result anyway (redact.py). Every pattern below this point wins over these.
    *(f"!*.{ext}" for ext in _SOURCE_EXTENSIONS),
    # Environment files: `.env` and every variant (`.env.production.local`, `.env-prod`, `.env~`,
    # `.envrc`, Symfony's `.env.local.php`, cookiecutter's `.envs/` folder), docker's `*.env` files
    # (`prod.env`), `env.local`. The templates checked in beside them stay visible.
    ".env*",
    "*.env",
    "*.env.*",
    "env.local",
    *(f"!*.env*.{kind}" for kind in ("example", "sample", "template", "dist")),
    "!*.d.ts",
    # Private keys — any `id_*` key and its copies (`id_rsa.old`, `id_ed25519_sk`), custom-named keys
    # (`deploy_rsa`, `ssh_host_ed25519_key`, `deploy-key`) — and key stores. The .pub halves stay visible.
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*_rsa",
    "*_dsa",
    "*_ecdsa",
    "*_ed25519",
    "*_ecdsa_sk",
    "*_ed25519_sk",
    "*_key",
    "*-key",
    "!*.pub",
    "*.pem",
    "*.key",
    "*.p8",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.bks",
    "*.keystore",
    "keystore",
    "keystore.properties",
    "key.properties",
    "*.ppk",
    "*.kdbx",
    "*.kdb",
    "*.psafe3",
    "*.agilekeychain",
    "*.opvault",
    "*.keychain",
    "*.keychain-db",
    "*.ovpn",
    "secring.*",
    "private-keys-v1.d/",
    # Tools' credential stores.
    ".netrc",
    "_netrc",
    ".pgpass",
    ".my.cnf",
    ".mylogin.cnf",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "**/.docker/config.json",
    ".dockercfg",
    "**/.kube/config",
    "*.kubeconfig",
    "**/.config/gh/hosts.yml",
    "**/.config/hub",
    "**/.config/doctl/",
    "rclone.conf",
    ".s3cfg",
    ".boto",
    ".vault-token",
    ".terraformrc",
    "terraform.rc",
    ".databrickscfg",
    ".htpasswd",
    "settings-security.xml",
    "wp-config.php",
    "sftp-config.json",
    "**/.vscode/sftp.json",
    ".ftpconfig",
    ".remote-sync.json",
    "filezilla.xml",
    "recentservers.xml",
    "sitemanager.xml",
    "*.publishsettings",
    # Token files: Hugging Face's `token` and `stored_tokens`, the `token.json` / `token.pickle` Google's
    # quickstarts write, `.hf_token`, `github-token.txt`, `*.token`.
    "**/huggingface/token",
    "stored_tokens",
    ".token",
    "*.token",
    "token.txt",
    "token.json",
    "token.pickle",
    "*_token",
    "*-token",
    "*_token.txt",
    "*-token.txt",
    "*_token.json",
    "*-token.json",
    # Cloud keys: a service account's JSON key (`service-account.json`, `serviceAccountKey.json`,
    # `my-sa.json`, `gcp-key.json`, Firebase's admin SDK key), gcloud's legacy `adc.json`.
    "*service?account*.json",
    "*serviceaccount*.json",
    "*firebase-adminsdk*.json",
    "*-sa.json",
    "key.json",
    "*-key.json",
    "*_key.json",
    "adc.json",
    "access_tokens.db",
    # Whole folders of credentials.
    ".aws/",
    ".ssh/",
    ".gnupg/",
    ".azure/",
    ".oci/",
    "**/.config/gcloud/",
    # Shells' and database clients' histories: commands typed with a key or a password in them.
    ".*_history",
    ".histfile",
    # Terraform variables and state hold provider keys and every resource's secrets.
    "*.tfvars",
    "*.tfvars.json",
    "*.tfstate",
    "*.tfstate.*",
)


def backup_original(name: str) -> str | None:
    """The name a backup or an editor's copy was made from, or None: ``id_rsa.bak`` → ``id_rsa``,
    ``.env~`` → ``.env``, ``.wp-config.php.swp`` (vim) → ``wp-config.php``, ``#x#`` and ``.#x`` (emacs)
    → ``x``; a copy of a copy (``x.old.bak``, ``x.bak~``) → ``x``."""
    original = name
    for _ in range(3):
        base = _one_backup_less(name)
        if not base:
            break
        name = base
    return name if name != original else None


def _one_backup_less(name: str) -> str | None:
    if name.endswith("~") and len(name) > 1:
        return name[:-1]
    if len(name) > 2 and name.startswith("#") and name.endswith("#"):
        return name[1:-1]
    if name.startswith(".#") and len(name) > 2:
        return name[2:]
    base, dot, suffix = name.rpartition(".")
    if not (dot and base and suffix in _BACKUP_EXTENSIONS):
        return None
    # Vim's swap file of `x` is `.x.swp`.
    return base[1:] if suffix in ("swp", "swo") and base.startswith(".") and len(base) > 1 else base


_BACKUP_EXTENSIONS = frozenset(suffix[1:] for suffix in BACKUP_SUFFIXES)
_WILDCARDS = re.compile(r"[*?]+")


class _NameTest:
    """Which names some including pattern's last part could match, told mostly with string methods.

    A glob of one literal piece is tested where the piece stands: ``*.pem`` with `str.endswith`,
    ``id_rsa*`` with `str.startswith`, ``*secret*`` with one search for all of them. A glob of several
    pieces (``*service?account*.json``) is tried as a regex only on a name that holds its longest piece.
    A name none passes matches no pattern, and pathspec's loop over every pattern is skipped: this is
    three times faster than `NameFilter`'s one regex of every glob, over a walk's names. None when a
    pattern has a class or an escape (`NameFilter` is used then).
    """

    def __init__(
        self,
        literal: frozenset[str],
        starts: tuple[str, ...],
        ends: tuple[str, ...],
        inside: list[str],
        mixed: list[tuple[str, str]],
    ) -> None:
        self._literal = literal
        self._starts = starts
        self._ends = ends
        self._inside = _any_of([re.escape(piece) for piece in inside])
        self._mixed_hint = _any_of([re.escape(piece) for piece, _ in mixed])
        self._mixed = _any_of([glob for _, glob in mixed])

    @classmethod
    def build(cls, lines: list[str]) -> _NameTest | None:
        literal: set[str] = set()
        starts: set[str] = set()
        ends: set[str] = set()
        inside: set[str] = set()
        mixed: set[tuple[str, str]] = set()
        for line in lines:
            if not line.strip() or line.startswith(("#", "!")):
                continue
            last = line.rstrip(" ").strip("/").rsplit("/", 1)[-1]
            if "[" in last or "\\" in last:
                return None
            pieces = _WILDCARDS.split(last)
            words = [piece for piece in pieces if piece]
            if not words:
                return None  # `*`: any name may match
            if len(pieces) == 1:
                literal.add(last)
            elif len(words) > 1 or "?" in last:
                mixed.add((max(words, key=len), fnmatch.translate(last)))
            elif pieces[0]:
                starts.add(pieces[0])
            elif pieces[-1]:
                ends.add(pieces[-1])
            else:
                inside.add(words[0])
        return cls(
            frozenset(literal), tuple(sorted(starts)), tuple(sorted(ends)), sorted(inside), sorted(mixed)
        )

    def may_match(self, name: str) -> bool:
        return (
            name in self._literal
            or name.startswith(self._starts)
            or name.endswith(self._ends)
            or (self._inside is not None and self._inside.search(name) is not None)
            or (
                self._mixed_hint is not None
                and self._mixed_hint.search(name) is not None
                and self._mixed is not None
                and self._mixed.match(name) is not None
            )
        )


def _any_of(alternatives: list[str]) -> re.Pattern[str] | None:
    return re.compile("|".join(sorted(alternatives, key=len, reverse=True))) if alternatives else None


class SecretFiles:
    """The secret-file deny list, compiled: `match` says which pattern withholds a path."""

    def __init__(self, patterns: Iterable[str] | None = None) -> None:
        if isinstance(patterns, str):
            raise TypeError("secret_files must be a list of patterns, not one string")
        given = DEFAULT_SECRET_FILES if patterns is None else tuple(patterns)
        if not all(isinstance(p, str) for p in given):
            raise TypeError("secret_files must be a list of strings")
        # Blank lines and comments make no pattern; dropping them keeps pattern i = line i.
        self.patterns = tuple(p for p in given if p.strip() and not p.startswith("#"))
        lowered = [p.lower() for p in self.patterns]
        self._spec = pathspec.GitIgnoreSpec.from_lines(lowered) if lowered else None
        # Exceptions (`!.env.example`) never withhold anything, so only the including patterns count.
        self._names: _NameTest | NameFilter | None = _NameTest.build(lowered) or NameFilter.build(
            lowered, fold=True, negations=False
        )
        self._seen: dict[str, tuple[str, ...]] = {}

    def __bool__(self) -> bool:
        return self._spec is not None

    def match(self, rel: str, *, is_dir: bool, parents: bool = True) -> str | None:
        """The pattern that withholds ``rel`` (or, with ``parents``, a folder above it), or None.

        Without ``parents`` only ``rel`` itself is checked: a walk has checked the folders above.
        """
        if self._spec is None or rel in (".", ""):
            return None
        parts = rel.lower().split("/")
        first = 1 if parents else len(parts)
        for end in range(first, len(parts) + 1):
            candidates = self._candidates(parts[end - 1])
            if not candidates:
                continue
            above = "/".join(parts[: end - 1])
            trail = "/" if end < len(parts) or is_dir else ""
            for candidate in candidates:
                found = self._spec.check_file(f"{above}/{candidate}{trail}" if above else candidate + trail)
                if found.include:
                    index = found.index if found.index is not None else -1
                    return self.patterns[index] if 0 <= index < len(self.patterns) else "a deny-list pattern"
        return None

    def _candidates(self, name: str) -> tuple[str, ...]:
        """The names to check for a path part: itself and, for a backup, its original (`id_rsa.bak` is
        withheld when `id_rsa` is) — each only if some including pattern's last part may match it; if
        none may, the path's own match is impossible and pathspec's loop over every pattern is skipped
        (most names in a walk)."""
        found = self._seen.get(name)
        if found is None:
            original = backup_original(name)
            names = (name,) if original is None else (name, original)
            found = tuple(n for n in names if self._names is None or self._names.may_match(n))
            if len(self._seen) < 16_384:
                self._seen[name] = found
        return found
