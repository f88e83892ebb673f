"""What a name says about the value given to it (a password, a token, a key), and the shapes of a value
that make it no secret (a number, a reference, a template, another variable's name).
"""

from __future__ import annotations

import re

# What a name's words say about the value assigned to it (`name_kind`): a password is hidden whatever it is;
# a token, secret or key unless it is a plain word (`token_type = "bearer"`, `tokenType = "Characters"`:
# issued tokens have digits or symbols); a bare `key`/`pwd` only when the value looks issued.
_PASSWORD_WORDS = frozenset({"password", "passwords", "passwd", "passphrase"})
_PASSWORD_PARTS = frozenset({"pwd", "pass"})  # `db_pwd`, `smtp_pass`; alone (`pwd`) more often a path
_TOKEN_WORDS = frozenset({"secret", "secrets", "token", "credential", "credentials", "apikey", "privatekey"})
_TOKEN_JOINED = (
    "apikey",
    "secretkey",
    "accesskey",
    "privatekey",
    "clientsecret",
    "authkey",
    "signingkey",
    "encryptionkey",
    "masterkey",
)
_TOKEN_PARTS = frozenset({"auth", "dsn", "cookie"})  # `auth_header`, `sentry_dsn`, `session_cookie`
_WEAK_WORDS = frozenset({"key", "pwd", "pass", "auth", "dsn", "cookie"})
_NAME_WORDS = frozenset(
    {
        "apikey",
        "key",
        "secret",
        "secrets",
        "token",
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "pass",
        "credential",
        "credentials",
        "creds",
        "auth",
        "bearer",
        "cookie",
        "cookies",
        "privatekey",
        "dsn",
    }
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SPLIT = re.compile(r"[^a-z0-9]+|\d+")
# The shapes of a value that say it is no secret, whatever its name: a number, a reference, a template,
# another variable's name.
NUMBER = re.compile(r"[+\-]?(?:0[xXoObB][0-9A-Fa-f_]+|\d[\d_.,eE+\-]*)")  # `2048`, `1e-5`, `0x0020`
REFERENCE = re.compile(r"\$\{?[A-Za-z_]\w*\}?|\{\{[^{}]*\}\}|<[^<>]*>")  # ${VAR}, {{ var }}, <your key>
TEMPLATE = re.compile(r"%[sdr]|%\([^()]*\)|\{\w*\}")  # '"%s"' % token, f"{token}"
ENV_LIKE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # OPENAI_API_KEY, not KEY or Token


def name_kind(key: str) -> str | None:
    """What a name's words say (see `_PASSWORD_WORDS`): "password", "token", "random" or None."""
    words = name_words(key)
    if not words:
        return None
    if key.lower() == "auth":
        return "token"  # `auth="…"` is a credential; `auth="basic"` (a plain word) a scheme
    names = set(words)
    joined = "".join(words)
    last = words[-1] if len(words) > 1 else ""  # `db_pwd`, `sentry_dsn`; not `pass_arg`, `cookie_name`
    if names & _PASSWORD_WORDS or "password" in joined or last in _PASSWORD_PARTS:
        return "password"
    if names & _TOKEN_WORDS or any(part in joined for part in _TOKEN_JOINED) or last in _TOKEN_PARTS:
        return "token"
    if names & _WEAK_WORDS:
        return "random"
    return None


def name_words(name: str) -> list[str]:
    """A name's words in lower case: ``dbPassword`` → db, password; ``OPENAI_API_KEY`` → openai, api, key."""
    return [w for w in _WORD_SPLIT.split(_CAMEL.sub("_", name[:200]).lower()) if w]


def secret_name(name: str) -> bool:
    """Whether a variable or field named ``name`` reads like a secret's (``api_key``, ``dbPassword``)."""
    words = name_words(name)
    if any(word in _NAME_WORDS for word in words):
        return True
    joined = "".join(words)
    return "password" in joined or any(part in joined for part in _TOKEN_JOINED)
