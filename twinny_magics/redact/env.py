"""Environment variables set in any of the usual ways, in code, a shell, a notebook or a file: a secret
name's value hidden.
"""

from __future__ import annotations

import re

from .base import LINE_PREFIX, LINE_SPAN, MASK, replace_spans
from .names import ENV_LIKE, NUMBER, REFERENCE, TEMPLATE, name_kind, secret_name

# Environment variables set in any of the usual ways. The name decides (`secret_name`), the value is
# hidden unless it is a reference, a template, a number or a switch (`env_hides`). Python forms need a
# string literal (`os.environ["PW"] = getpass()` is code); shell forms take the word that follows.
_QUOTED = r"\"[^\"\n]{0,2000}+\"|'[^'\n]{0,2000}+'"
_SHELL_WORD = r"[^\s\"'`;&|]{1,2000}+"
_VAR = r"[A-Za-z_][A-Za-z0-9_]{0,80}+"
_VALUE = r"(?P<value>" + _QUOTED + "|" + _SHELL_WORD + r")"
# Each form starts with a literal (found by a fast search, not tried at every character) and runs only
# when the text holds it.
_ENV_FORMS: tuple[tuple[str, str], ...] = (
    # os.environ["NAME"] = "…", os.environ.setdefault("NAME", "…"), os.putenv / monkeypatch.setenv,
    # PowerShell's $env:NAME = "…"
    ("environ[", r"environ\[[ \t]{0,8}(?P<q>[\"'])(?P<name>" + _VAR + r")(?P=q)[ \t]{0,8}\][ \t]{0,8}=(?!=)"),
    ("setdefault(", r"setdefault\([ \t]{0,8}(?P<q>[\"'])(?P<name>" + _VAR + r")(?P=q)[ \t]{0,8},"),
    ("putenv(", r"putenv\([ \t]{0,8}(?P<q>[\"'])(?P<name>" + _VAR + r")(?P=q)[ \t]{0,8},"),
    ("setenv(", r"setenv\([ \t]{0,8}(?P<q>[\"'])(?P<name>" + _VAR + r")(?P=q)[ \t]{0,8},"),
    ("$env:", r"\$env:(?P<name>" + _VAR + r")[ \t]{0,8}="),
    ("$Env:", r"\$Env:(?P<name>" + _VAR + r")[ \t]{0,8}="),
    # %env NAME value, %env NAME=value, %set_env NAME value (to the end of the line), and as IPython runs
    # them, which is what `In` keeps: get_ipython().run_line_magic('env', 'NAME value')
    ("env ", r"%(?:set_)?env[ \t]{1,8}(?P<name>" + _VAR + r")(?:[ \t]{0,8}=[ \t]{0,8}|[ \t]{1,8})"),
    (
        "run_line_magic(",
        r"run_line_magic\([ \t]{0,8}[\"'](?:set_)?env[\"'][ \t]{0,8},[ \t]{0,8}[\"'](?P<name>" + _VAR + r")"
        r"(?:[ \t]{0,8}=[ \t]{0,8}|[ \t]{1,8})",
    ),
    # export NAME=… (a shell, `!export`, `get_ipython().system('export …')`), Docker's ENV/ARG, cmd's
    # set, and what %env prints: `env: NAME=…`
    ("export", r"export[ \t]{1,8}+(?P<name>" + _VAR + r")="),
    ("set ", r"set[ \t]{1,8}+(?P<name>" + _VAR + r")="),
    ("ENV ", r"ENV[ \t]{1,8}+(?P<name>" + _VAR + r")="),
    ("ARG ", r"ARG[ \t]{1,8}+(?P<name>" + _VAR + r")="),
    ("env: ", r"env:[ \t]{1,8}+(?P<name>" + _VAR + r")="),
)
# How the value is read after each form: a string literal for Python's, the rest of the line for the
# magics, a quoted or bare word for the shell's.
_ENV_VALUES = {
    "environ[": "[ \t]{0,8}(?P<value>" + _QUOTED + ")",
    "setdefault(": "[ \t]{0,8}(?P<value>" + _QUOTED + ")",
    "putenv(": "[ \t]{0,8}(?P<value>" + _QUOTED + ")",
    "setenv(": "[ \t]{0,8}(?P<value>" + _QUOTED + ")",
    "$env:": "[ \t]{0,8}(?P<value>" + _QUOTED + ")",
    "$Env:": "[ \t]{0,8}(?P<value>" + _QUOTED + ")",
    "env ": "(?P<value>[^\n]{1,2000}+)",
    "run_line_magic(": "(?P<value>[^\n\"']{1,2000}+)",
}
_ENV_RES = tuple((needle, re.compile(form + _ENV_VALUES.get(needle, _VALUE))) for needle, form in _ENV_FORMS)
_KEYWORD_FORMS = frozenset(form for needle, form in _ENV_RES if needle not in _ENV_VALUES)
# Each form under a shorter literal its needle holds: one search rules out most of them.
_ENV_GATE = {
    "setdefault(": "set",
    "set ": "set",
    "export": "export",
    "ENV ": "ENV",
    "ARG ": "ARG",
    "$Env:": "$Env:",
}
_ENV_GATES = tuple(
    (gate, tuple((needle, form) for needle, form in _ENV_RES if _ENV_GATE.get(needle, "env") == gate))
    for gate in ("env", "set", "export", "ENV", "ARG", "$Env:")
)
# NAME=… at a line's start: an .env file, `env`/`printenv` output, a compose file's `- NAME=…`. Found
# from its `=` (`_ENV_EQUALS`, a fast search), its name read back from there.
_ENV_EQUALS = re.compile(r"=(?<=[A-Z0-9_]=)(?!=)")
_ENV_LINE_HEAD = re.compile(LINE_PREFIX + r"(?:-[ \t]{1,4})?")
_ENV_LINE_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_ENV_LINE_VALUE = re.compile(_VALUE)
_SWITCHES = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "nil", "y", "n"})
_PATH_VALUE = re.compile(r"(?:~|\.{1,2})?/[\w.\-/ ]*")


def mask_env(text: str) -> str:
    """Values of secret-named environment variables set in any of `_ENV_FORMS` hidden, and on a line
    of their own (`_ENV_EQUALS`)."""
    for gate, forms in _ENV_GATES:
        if gate in text:
            for needle, form in forms:
                if needle in text:
                    text = form.sub(_env_hidden, text)
    if "=" not in text:
        return text
    spans: list[tuple[int, int]] = []
    done = 0
    for equals in _ENV_EQUALS.finditer(text):
        at = equals.start()
        if at < done:
            continue
        start = at
        while (
            start > 0 and at - start <= 80 and (text[start - 1].isupper() or text[start - 1] in "0123456789_")
        ):
            start -= 1
        if not _ENV_LINE_NAME.fullmatch(text, start, at):
            continue
        line_start = text.rfind("\n", max(0, start - LINE_SPAN), start) + 1
        if (line_start == 0 and start > LINE_SPAN) or not _ENV_LINE_HEAD.fullmatch(text, line_start, start):
            continue
        value = _ENV_LINE_VALUE.match(text, at + 1)
        if value is None or text.startswith(MASK, at + 1) or not env_hides(text[start:at], value.group()):
            continue
        inner = value.span()
        if value.group()[0] in "\"'" and len(value.group()) > 1:
            inner = (inner[0] + 1, inner[1] - 1)
        spans.append(inner)
        done = value.end()
    return replace_spans(text, spans)


def _env_hidden(found: re.Match[str]) -> str:
    value = found.group("value")
    before = found.string[found.start() - 1] if found.start() else " "
    if found.re in _KEYWORD_FORMS and (before.isalnum() or before in "_.-"):
        return found.group(0)  # `offset X=1`, `reset NAME=…`, `BASE NAME=…`: not the keyword
    if found.string.startswith(MASK, found.start("value")) or not env_hides(found.group("name"), value):
        return found.group(0)
    quote = value[0] if value[0] in "\"'" and len(value) > 1 and value[-1] == value[0] else ""
    return f"{_text_before(found, 'value')}{quote}{MASK}{quote}"


def _text_before(found: re.Match[str], group: str) -> str:
    """What a match holds before one of its groups."""
    return found.string[found.start() : found.start(group)]


def env_hides(name: str, value: str) -> bool:
    """Whether the value set for an environment variable ``name`` is hidden: a secret-named variable's,
    unless the value is a reference, a template, a path, a switch, another variable's name or (for all but
    a password) a number."""
    if not secret_name(name):
        return False
    quoted = len(value) > 1 and value[0] in "\"'" and value[-1] == value[0]
    inner = (value[1:-1] if quoted else value).strip()
    if not any(c.isalnum() for c in inner) or MASK in inner:
        return False
    if REFERENCE.fullmatch(inner) or TEMPLATE.search(inner) or inner.startswith("$"):
        return False
    if inner.lower() in _SWITCHES or _PATH_VALUE.fullmatch(inner) or ENV_LIKE.fullmatch(inner):
        return False  # `true`, `/run/secrets/key`, another variable's name (`'HTTP_REFERER'`)
    return not (NUMBER.fullmatch(inner) and name_kind(name) != "password")
