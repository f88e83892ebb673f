"""Values assigned to a secret-named name — in code, ``.env``, JSON, YAML, a subscript, a pair, a keyword —
and credential pairs given to an auth parameter or class.
"""

from __future__ import annotations

import re

from .base import MASK, replace_spans
from .env import env_hides
from .names import ENV_LIKE, NUMBER, REFERENCE, TEMPLATE, name_kind

# A credential pair given to an auth parameter or class: `auth=("user", "pw")`, `http_auth=(user, "pw")`,
# `"auth": ("user", "pw")`, `HTTPBasicAuth("user", "pw")`, `authenticate(u, "pw")`: the second and last
# item, when it is a string literal, is hidden. Run on the lower-cased text (same length): a fast search.
_AUTH_PAIR = re.compile(
    r"auth(?P<tail>[a-z_]{0,12}+)(?P<quote>[\"']?)[ \t]{0,8}(?P<how>[=:][ \t]{0,8}\(|\()[ \t]{0,8}"
    r"(?:\"[^\"\n]{0,200}+\"|'[^'\n]{0,200}+'|[a-z_][\w.]{0,80}+)[ \t]{0,8},[ \t]{0,8}"
    r"(?P<secret>\"[^\"\n]{1,500}+\"|'[^'\n]{1,500}+')(?=[ \t]{0,8}\))"
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
    r"(?P<sep>[\"']?[ \t]{0,8}(?::[ \t]{0,8}[A-Za-z_][\w.\[\] |,]{0,40}+=(?!=)|==|!=|:=|=>|[:=])[ \t]{0,8}"
    # `config["api_key"] = "…"`; `("api_key", "…")`: setattr, configparser's set, a dict's items
    r"|[\"']\][ \t]{0,8}=(?!=)[ \t]{0,8}"
    # … a pair a pretty-printer broke after its comma: `('OPENAI_API_KEY',\n    'sk-…')`
    r"|[\"'][ \t]{0,8},[ \t]{0,8}(?:\r?\n[ \t]{0,80}+)?(?=[\"']))"
    r"(?P<value>\"[^\"\n]{4,2000}\"|'[^'\n]{4,2000}'|`[^`\n]{4,2000}`"
    # Unquoted: at most 256 (a longer run is not read as a value), so a run like `token=token=…` costs
    # at most 256 steps a word, not the rest of the run each time.
    r"|(?![\"'`])[^\s\"'`#,;(){}\[\]<>]{4,256}+(?![^\s,;]))"
)
_NAME_LIMIT = 80
_CLOSES = re.compile(r"[ \t]{0,8}\)")
_QUOTES = "\"'`"
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")  # a name or a dotted name: code
_PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z_.\- ]*")  # letters, no digits: a word, not an issued token
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s@]*")
_COLOUR = re.compile(r"#[0-9A-Fa-f]{3,8}")
_HOST = re.compile(r"[\w\-]+(?:\.[\w\-]+)*:[0-9]{1,5}|[\w\-]+(?:\.[\w\-]+)+")


def mask_auth_pairs(text: str, lower: str) -> str:
    """The passwords of credential pairs (`_AUTH_PAIR`) hidden."""
    spans = []
    for found in _AUTH_PAIR.finditer(lower):
        before = text[found.start() - 1] if found.start() else ""
        tail, called = found.group("tail"), found.group("how") == "("
        if called:
            # A class or function named for it (`HTTPBasicAuth(`, `BasicAuth(`, `authenticate(`).
            if tail not in ("", "enticate"):
                continue
        elif tail or before.isalnum() or (found.group("quote") and before not in "\"'"):
            continue  # `auth=(…)`, `http_auth=(…)`, `"auth": (…)`; not `author=(…)` or `OAuth: (…)`
        start, end = found.span("secret")
        inner = text[start + 1 : end - 1].strip()
        if not any(c.isalnum() for c in inner) or MASK in inner or REFERENCE.fullmatch(inner):
            continue
        if TEMPLATE.search(inner):
            continue
        spans.append((start + 1, end - 1))
    return replace_spans(text, spans)


def mask_assignments(text: str, lower: str) -> str:
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
        if "," in sep and not _CLOSES.match(text, assigned.end()):
            continue  # a pair is the last two arguments: `setattr(o, "token", "…")`, not a list of names
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
    kind = name_kind(key)
    if kind is None:
        return False
    if before and before in "\"'" and value[0] in "\"'" and ENV_LIKE.fullmatch(key):
        # `{'OPENAI_API_KEY': '…'}`, `('HF_TOKEN', '…')`: an environment's variables (dotenv_values,
        # %env, os.environ shown), decided as where they are set.
        return env_hides(key, value)
    if "]" in sep or "," in sep:
        if before not in ("'", '"'):
            return False  # `x[api_key] = "…"`, `f(token, "…")`: the name is a variable, not the field
        if "," in sep and kind == "password":
            kind = "token"  # `("password", "Enter your password")` is a label as often as a password
        if "," in sep and _HOST.fullmatch(value[1:-1]):
            return False  # `(…, "password", "proxy.example.com:3128")`: the next field of a record
    quoted = value[0] in _QUOTES
    inner = (value[1:-1] if quoted else value.rstrip(":")).strip()  # `if token == OTHER:`
    if not any(c.isalnum() for c in inner) or MASK in inner:
        return False  # `"****"`, `"########"`, or already hidden
    if REFERENCE.fullmatch(inner) or TEMPLATE.search(inner):
        return False  # `${VAR}` / `{{ var }}` / `<your key>`, or a template: `'"%s"' % token`, f"{token}"
    if not quoted:
        if NUMBER.fullmatch(inner) or inner.startswith("$"):
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


def _random_looking(value: str) -> bool:
    """A value like an issued key: long, no spaces, letters and several digits (not ``"types-auth0"``)."""
    digits = sum(c.isdigit() for c in value)
    return (
        len(value) >= 16
        and not any(c.isspace() for c in value)
        and digits >= 3
        and any(c.isalpha() for c in value)
    )
