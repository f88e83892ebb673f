"""Secrets stay home: what is masked before text leaves the kernel for the model server or the page.

Pure functions over strings. Two checks:

- :func:`mask_secrets` replaces what *looks like* a credential — the shapes API keys are issued in
  (``sk-…``, ``ghp_…``, ``AKIA…``, ``xoxb-…``, ``hf_…``, JWTs, PEM private keys), a password in a URL
  (``https://user:pw@host``), ``Authorization: Bearer …`` and a value assigned to a name like
  ``api_key``/``password``/``token`` (code, ``.env``, JSON, YAML) — with :data:`MASK`. It runs on every
  tool result and on every error note, so a secret the deny list did not keep out (a key pasted into
  ``config.py``, a server's 401 that echoes the key) still does not reach the model server or the page.
- :func:`secret_name` says whether a variable's name reads like a secret (``api_key``, ``OPENAI_TOKEN``,
  ``dbPassword``); ``kernel_variables`` shows such a variable's type and length, never its value.

Both err towards masking: a hidden value costs the model a question, a leaked key costs the user the key.
What is *not* masked: a random-looking string with nothing around it that says "secret" (a hash in a
lockfile, a UUID, base64 data), and a secret-named name given a plain name or a number
(``self.api_key = api_key``, ``max_tokens = 2048``), which is code, not a credential.

Cost: every pattern is linear in the text (each repeat runs over one character class to a fixed end,
and the names are matched possessively from where a name starts), and each is skipped when the text
lacks the literal it cannot occur without: 1 MB of code takes about 50 ms, and no input is quadratic.
"""

from __future__ import annotations

import re

MASK = "[secret hidden]"

# Issued key shapes, each with the literals it cannot occur without (checked with `in`, so most texts
# skip the regex) and enough fixed prefix and length that ordinary code and prose do not match.
_SHAPES: tuple[tuple[tuple[str, ...], str], ...] = (
    # A PEM private key: up to its END line, or (no END in sight) the next 8,000 characters — a
    # 4096-bit key with read_file's line numbers is about 4,000. Bounded, so a stray BEGIN costs little.
    (
        ("-----BEGIN",),
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]{0,8000}?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|[\s\S]{0,8000})",
    ),
    # OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-), Anthropic (sk-ant-api03-…), DeepSeek and others.
    (("sk-",), r"\bsk-[A-Za-z0-9_\-]{20,}"),
    (("_live_", "_test_"), r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}"),  # Stripe
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\bgh[pousr]_[A-Za-z0-9]{30,}"),  # GitHub
    (("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    (("glpat-",), r"\bglpat-[A-Za-z0-9_\-]{20,}"),  # GitLab
    (
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "AIPA"),
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|AIPA)[0-9A-Z]{16}\b",  # AWS access key ids
    ),
    (("xox",), r"\bxox[abposre]-[A-Za-z0-9\-]{10,}"),  # Slack tokens
    (("hooks.slack.com/",), r"(?<=hooks\.slack\.com/)[A-Za-z0-9_/\-]{20,}"),  # Slack webhooks
    (("AIza",), r"\bAIza[0-9A-Za-z_\-]{35}"),  # Google API keys
    (("hf_",), r"\bhf_[A-Za-z0-9]{30,}"),  # Hugging Face
    (("npm_",), r"\bnpm_[A-Za-z0-9]{36}"),
    (("pypi-",), r"\bpypi-[A-Za-z0-9_\-]{50,}"),
    (("gsk_",), r"\bgsk_[A-Za-z0-9]{40,}"),  # Groq
    (("r8_",), r"\br8_[A-Za-z0-9]{30,}"),  # Replicate
    (("xai-",), r"\bxai-[A-Za-z0-9]{40,}"),  # xAI
    (("SG.",), r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),  # SendGrid
    (("eyJ",), r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # JWT
)
_SHAPE_RES = tuple((needles, re.compile(shape)) for needles, shape in _SHAPES)

# A password in a URL: keep the scheme, the user and the host, hide what is between ':' and '@'. The
# scheme starts where no scheme character is before it and is at most 30 long, so each try is bounded.
_URL_PASSWORD = re.compile(
    r"((?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^\s:/@]{0,100}:)([^\s/@]{1,200})(?=@)"
)

# `Bearer <token>` anywhere; `Authorization: Basic|Token|Digest <value>` as a header, in a dump, a log,
# a curl line or a JSON/YAML field (a colon: `authorization = request.headers…` is code, left alone).
_BEARER = re.compile(r"(?i)(\bbearer[ \t]{1,8})([A-Za-z0-9_\-.~+/]{16,}=*)")
_AUTH_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization[\"']?[ \t]{0,8}:[ \t]{0,8}[\"']?"
    r"(?:(?:basic|token|digest|bearer)[ \t]{1,8})?)([A-Za-z0-9_\-.~+/]{8,}=*)"
)

# `NAME = "…"`, `name: '…'`, `"name": "…"`, `NAME=…` (an .env line), `name => "…"`, `--name=…`: found
# from the secret word (`_GATE`), whose whole name is read around it (at most 80 characters a side), then
# a separator and a quoted literal or an unquoted value up to a space, a comma or a semicolon must follow
# the name. Whether it is a secret is decided by `_hides` from the name and the value. Starting from the
# word, not from every name, means a non-secret `key: value` can never swallow a secret one after it
# (`https://host/?api_key=…`, `  12: API_TOKEN = "…"`), and text without a secret word costs one scan.
_GATE_WORDS = r"(?:secret|token|pass|pwd|credential|key|auth|dsn|cookie)"
_GATE = re.compile(_GATE_WORDS)  # run on the lower-cased text: four times faster than IGNORECASE
_GATE_ANY_CASE = re.compile(_GATE_WORDS, re.IGNORECASE)  # for a text whose lower case changes its length
_NAME_REST = re.compile(r"[\w.\-]{0,80}+")
_SEP_VALUE = re.compile(
    # `password: str = "…"` (an annotation), `==`/`!=` (a comparison gives the literal away too).
    r"(?P<sep>[\"']?[ \t]{0,8}(?::[ \t]{0,8}[A-Za-z_][\w.\[\] |,]{0,40}+=(?!=)|==|!=|:=|=>|[:=])[ \t]{0,8})"
    r"(?P<value>\"[^\"\n]{4,2000}\"|'[^'\n]{4,2000}'|`[^`\n]{4,2000}`"
    # Unquoted: at most 256 (a longer run is not read as a value), so a run like `token=token=…` costs
    # at most 256 steps a word, not the rest of the run each time.
    r"|(?![\"'`])[^\s\"'`#,;(){}\[\]<>]{4,256}+(?![^\s,;]))"
)
_NAME_LIMIT = 80
# What a name's words say about the value assigned to it (`_kind`): a password is hidden whatever it is;
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
_QUOTES = "\"'`"
_NUMBER = re.compile(r"[+\-]?(?:0[xXoObB][0-9A-Fa-f_]+|\d[\d_.,eE+\-]*)")  # `2048`, `1e-5`, `0x0020`
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")  # a name or a dotted name: code
_PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z_.\- ]*")  # letters, no digits: a word, not an issued token
_REFERENCE = re.compile(r"\$\{?[A-Za-z_]\w*\}?|\{\{[^{}]*\}\}|<[^<>]*>")  # ${VAR}, {{ var }}, <your key>
_TEMPLATE = re.compile(r"%[sdr]|%\([^()]*\)|\{\w*\}")  # '"%s"' % token, f"{token}"
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s@]*")
_COLOUR = re.compile(r"#[0-9A-Fa-f]{3,8}")

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


def mask_secrets(text: str) -> str:
    """``text`` with every credential-shaped run replaced by :data:`MASK` (see the module docstring)."""
    if not text:
        return text
    for needles, shape in _SHAPE_RES:
        if any(needle in text for needle in needles):
            text = shape.sub(MASK, text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK, text)
    lower = text.lower()
    if "bearer" in lower or "authorization" in lower:
        text = _AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)
        text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
        lower = text.lower()
    return _mask_assignments(text, lower)


def _mask_assignments(text: str, lower: str) -> str:
    """Values assigned to secret-named names hidden (see `_GATE`); linear in the text."""
    words = _GATE.finditer(lower) if len(lower) == len(text) else _GATE_ANY_CASE.finditer(text)
    out: list[str] = []
    done = 0  # text[:done] is settled (copied to out or masked)
    after = 0  # the end of the last name read: later words inside it are the same name
    for word in words:
        if word.start() < after:
            continue
        start = word.start()
        floor = max(0, start - _NAME_LIMIT - 1)
        while start > floor and _name_char(text[start - 1]):
            start -= 1
        rest = _NAME_REST.match(text, word.end())
        end = rest.end() if rest else word.end()
        after = end
        if (start > 0 and _name_char(text[start - 1])) or end - start > _NAME_LIMIT or start < done:
            continue  # a run longer than any name we read, or one overlapping what was just masked
        assigned = _SEP_VALUE.match(text, end)
        if assigned is None:
            continue
        sep, value = assigned.group("sep", "value")
        if not _hides(text[start:end], sep, value, text[start - 1] if start else ""):
            continue
        out.append(text[done : assigned.start("value")])
        out.append(f"{value[0]}{MASK}{value[0]}" if value[0] in "\"'`" else MASK)
        done = after = assigned.end()
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def _name_char(char: str) -> bool:
    return char.isalnum() or char in "_.-"


def _hides(key: str, sep: str, value: str, before: str) -> bool:
    """Whether ``key <sep> value`` assigns a secret: a secret-named key and a value that is not code.

    ``before`` is the character before the name: after ``?`` or ``&`` (a URL's query) the value is data.
    """
    kind = _kind(key)
    if kind is None:
        return False
    quoted = value[0] in _QUOTES
    inner = (value[1:-1] if quoted else value.rstrip(":")).strip()  # `if token == OTHER:`
    if not any(c.isalnum() for c in inner) or MASK in inner:
        return False  # `"****"`, `"########"`, or already hidden
    if _REFERENCE.fullmatch(inner) or _TEMPLATE.search(inner):
        return False  # `${VAR}` / `{{ var }}` / `<your key>`, or a template: `'"%s"' % token`, f"{token}"
    if not quoted:
        if _NUMBER.fullmatch(inner) or inner.startswith("$"):
            return False  # `max_tokens=2048`, `TOKEN_QUERY = 0x0008`, `TOKEN=$OTHER`
        data = before in ("?", "&") or (sep == "=" and _ENV_NAME.fullmatch(key) is not None)  # query, .env
        yaml = sep.strip() == ":" and any(c.isdigit() for c in inner)  # `password: hunter2`, not `: str`
        if _IDENTIFIER.fullmatch(inner) and not (data or yaml):
            return False  # `self.api_key = api_key`, `token: str`, `password=None`
    if kind == "password":
        return True
    if kind == "token":
        # Issued tokens have digits or symbols and no spaces; a URL is an endpoint (its password and
        # query tokens have rules of their own); `Token: "#ddd0c0"` is a colour.
        return not (
            _PLAIN_WORD.fullmatch(inner)
            or any(c.isspace() for c in inner)
            or _URL.fullmatch(inner)
            or _COLOUR.fullmatch(inner)
        )
    return _random_looking(inner)


def _kind(key: str) -> str | None:
    """What a name's words say (see `_PASSWORD_WORDS`): "password", "token", "random" or None."""
    words = _words(key)
    if not words:
        return None
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


def _random_looking(value: str) -> bool:
    """A value like an issued key: long, no spaces, letters and several digits (not ``"types-auth0"``)."""
    digits = sum(c.isdigit() for c in value)
    return (
        len(value) >= 16
        and not any(c.isspace() for c in value)
        and digits >= 3
        and any(c.isalpha() for c in value)
    )


def _words(name: str) -> list[str]:
    """A name's words in lower case: ``dbPassword`` → db, password; ``OPENAI_API_KEY`` → openai, api, key."""
    return [w for w in _WORD_SPLIT.split(_CAMEL.sub("_", name[:200]).lower()) if w]


def secret_name(name: str) -> bool:
    """Whether a variable or field named ``name`` reads like a secret's (``api_key``, ``dbPassword``)."""
    words = _words(name)
    if any(word in _NAME_WORDS for word in words):
        return True
    joined = "".join(words)
    return "password" in joined or any(part in joined for part in _TOKEN_JOINED)


def mask_value(text: str, secret: str | None) -> str:
    """``text`` with one known secret (e.g. the session's API key) and every key shape masked."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, MASK)
    return mask_secrets(text)
