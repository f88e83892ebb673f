"""Secrets stay home: what is masked before text leaves the kernel for the model server or the page.

Pure functions over strings. Two checks:

- :func:`mask_secrets` replaces what *looks like* a credential — the shapes API keys are issued in
  (``sk-…``, ``ghp_…``, ``AKIA…``, ``xoxb-…``, JWTs, PEM private keys), a password in a URL
  (``https://user:pw@host``), ``Authorization: Bearer …`` and an assignment of a quoted literal to a name
  like ``api_key``/``password``/``token`` — with :data:`MASK`. It runs on every tool result and on every
  error note, so a secret the deny list did not keep out (a key pasted into ``config.py``, a server's 401
  that echoes the key) still does not reach the model server or the notebook.
- :func:`secret_name` says whether a variable's name reads like a secret (``api_key``, ``OPENAI_TOKEN``,
  ``dbPassword``); ``kernel_variables`` shows such a variable's type and length, never its value.

Both err towards masking: a hidden value costs the model a question, a leaked key costs the user the key.
"""

from __future__ import annotations

import re

MASK = "[secret hidden]"

# Issued key shapes, each with enough fixed prefix and length that ordinary code and prose do not match.
_SHAPES = (
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    r"\bsk-(?:proj-|ant-(?:api\d\d-)?|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",  # OpenAI, Anthropic
    r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
    r"\bgithub_pat_[A-Za-z0-9_]{22,}",
    r"\bglpat-[A-Za-z0-9_\-]{20,}",  # GitLab
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
    r"\bAIza[0-9A-Za-z_\-]{35}",  # Google
    r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"\bnpm_[A-Za-z0-9]{36}",
    r"\bpypi-[A-Za-z0-9_\-]{50,}",
    r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",  # SendGrid
    r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWT
)
_SHAPE = re.compile("|".join(f"(?:{shape})" for shape in _SHAPES))

# A password in a URL: keep the scheme, the user and the host, hide what is between ':' and '@'.
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]{1,100}:)([^\s/@]{1,200})(@)")

# `Authorization: Bearer <token>` / `Basic <token>` in a header dump or a log.
_AUTH_HEADER = re.compile(r"(?i)(\b(?:bearer|basic|token)\s+)([A-Za-z0-9_\-.~+/=]{16,})")

_SECRET_WORDS = (
    r"api[_\-]?key|apikey|secret|token|passw(?:or)?d|passphrase|pwd|credential|private[_\-]?key"
    r"|access[_\-]?key|auth[_\-]?key|client[_\-]?secret"
)
# `API_KEY = "…"`, `password: '…'`, `"token": "…"`, `SECRET_KEY=…` (an .env line): the literal is hidden.
_ASSIGNED = re.compile(
    rf"(?i)(\b[\w.\-]*(?:{_SECRET_WORDS})[\w.\-]*[\"']?\s*[:=]\s*)"
    # Unquoted, only what a name never looks like (a digit or a symbol in it): `key = other_name` stays.
    r"(\"[^\"\n]{6,}\"|'[^'\n]{6,}'|(?<![\w\"'])(?![A-Za-z_][A-Za-z_.]*(?:\s|$))[^\s\"'#,;(){}\[\]]{8,}(?=\s|$))"
)

_NAME_WORDS = frozenset(
    {
        "apikey",
        "key",
        "keys",
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


def mask_secrets(text: str) -> str:
    """``text`` with every credential-shaped run replaced by :data:`MASK` (see the module docstring)."""
    if not text:
        return text
    text = _SHAPE.sub(MASK, text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)
    return _ASSIGNED.sub(lambda m: m.group(1) + (m.group(2) if MASK in m.group(2) else _quoted(m.group(2))), text)


def _quoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return f"{value[0]}{MASK}{value[0]}"
    return MASK


def secret_name(name: str) -> bool:
    """Whether a variable or field named ``name`` reads like it holds a secret (``api_key``, ``dbPassword``)."""
    words = [w for w in re.split(r"[^a-z0-9]+|\d+", _CAMEL.sub("_", name).lower()) if w]
    if any(word in _NAME_WORDS for word in words):
        return True
    joined = "".join(words)
    return any(part in joined for part in ("apikey", "secretkey", "accesskey", "privatekey", "password"))


def mask_value(text: str, secret: str | None) -> str:
    """``text`` with one known secret (e.g. the session's API key) and every key shape masked."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, MASK)
    return mask_secrets(text)
