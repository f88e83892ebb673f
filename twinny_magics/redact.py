"""Secrets stay home: what is masked before text leaves the kernel for the model server or the page.

Pure functions over strings. Three checks:

- :func:`mask_secrets` replaces what *looks like* a credential with :data:`MASK`. It runs on every tool
  result and on every error note, so a secret the deny list did not keep out (a key pasted into
  ``config.py``, a server's 401 that echoes the key) still does not reach the model server or the page.
  It knows:

  - the shapes keys are issued in: OpenAI, Anthropic (``sk-…``, admin keys too), Stripe, GitHub, GitLab,
    AWS access key ids (and the 40-character secret beside one), Slack, Google (API keys, OAuth client
    secrets ``GOCSPX-…``, access ``ya29.…`` and refresh ``1//0…`` tokens), Hugging Face, npm, PyPI, Groq,
    Replicate, xAI, SendGrid, Perplexity, Databricks, DigitalOcean, Pinecone, LangSmith, Shopify,
    Telegram bot tokens, Azure's 84-character keys and SAS signatures, JWTs;
  - keys issued without a prefix (Azure OpenAI's 32 hex, Mistral's 32, Cohere's 40) on the same line
    after the provider's name;
  - PEM private keys: whole with their armour, and without it line by line (base64 lines 64 or 70 wide,
    with the shorter last line, under any tool's line prefix, or joined by ``\\n`` in one string),
    unless the armour beside them says certificate or public key;
  - a password in a URL (``https://user:pw@host``), ``Authorization: Bearer …``;
  - a value assigned to a secret-named name (``api_key``, ``password``, ``token``) in code, ``.env``,
    JSON, YAML, a subscript (``config["api_key"] = …``), a pair (``setattr(s, "token", …)``), a keyword
    (``auth="…"``) or a credential pair (``auth=("user", "pw")``, ``HTTPBasicAuth("user", "pw")``);
  - an environment variable set in any usual way (``os.environ[…] =``, ``setdefault``, ``putenv``,
    ``%env``, ``%set_env`` and IPython's ``run_line_magic`` form of them, ``export``, ``.env`` lines,
    ``env: NAME=…``, Docker's ``ENV``): a secret name (`secret_name`) hides the value.
- :func:`secret_name` says whether a variable's name reads like a secret (``api_key``, ``OPENAI_TOKEN``,
  ``dbPassword``); ``kernel_variables`` shows such a variable's type and length, never its value.
- :func:`known_secret` and :func:`mask_known`: a value the kernel holds under a secret name is hidden
  wherever it shows (the cell log uses them), with nothing around it.

All err towards masking: a hidden value costs the model a question, a leaked key costs the user the key.
What is *not* masked: a random-looking string with nothing around it that says "secret" (a hash in a
lockfile, a UUID, base64 data, a Mistral or Cohere key with no name beside it), a plain word given to a
token or secret name (``token = "bearer"``, ``secret = "changeme"``), a secret-named name given a plain
name or a number (``self.api_key = api_key``, ``max_tokens = 2048``), which is code, not a credential,
and a key cut in two by a result's length limit (the part left may be too short to know).

Cost: every pattern is linear in the text (each repeat runs over one character class to a fixed end,
the names are matched possessively from where a name starts, and each pattern starts with a literal
found by a fast search or runs once per line), and each is skipped when the text lacks the literal it
cannot occur without: 1 MB of code takes about 100 ms (65 before the issue 26 forms;
benchmarks/bench_masking.py), a 20 KB tool result about 2 ms, and no input is quadratic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

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
    (("pplx-",), r"\bpplx-[A-Za-z0-9]{40,}"),  # Perplexity (48 after the prefix)
    (("dapi",), r"\bdapi[a-h0-9]{32}(?:-[0-9])?(?![A-Za-z0-9])"),  # Databricks
    (("_v1_",), r"\bdo[opr]_v1_[a-f0-9]{64}"),  # DigitalOcean: personal, OAuth and refresh tokens
    (("pcsk_",), r"\bpcsk_[A-Za-z0-9_]{40,}"),  # Pinecone
    (("lsv2_",), r"\blsv2_(?:pt|sk)_[A-Za-z0-9]{32}_[A-Za-z0-9]{10}"),  # LangSmith
    (("shp",), r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),  # Shopify
    # Telegram bot tokens: the bot's number, then `AA` and 33 more (`123456789:AAH…`).
    ((":AA",), r"\b[0-9]{5,16}:AA[0-9A-Za-z_\-]{33}(?![0-9A-Za-z_\-])"),
    # Google OAuth: a client secret, an access token, a refresh token.
    (("GOCSPX-",), r"\bGOCSPX-[A-Za-z0-9_\-]{24,}"),
    (("ya29.",), r"\bya29\.[0-9A-Za-z_\-]{20,}"),
    (("1//0",), r"(?<![0-9A-Za-z/])1//0[0-9A-Za-z_\-]{30,}"),
    # Azure's keys since 2024 (AI services, OpenAI, …): 84 characters with `JQQJ9` at the 53rd.
    (
        ("JQQJ9",),
        r"(?<![A-Za-z0-9])[A-Za-z0-9]{52}JQQJ9[9DH][A-Za-z0-9][A-L][A-Za-z0-9]{16}[A-Za-z][A-Za-z0-9]{7}"
        r"(?:[A-Za-z0-9]{2}==)?(?![A-Za-z0-9])",
    ),
    # An Azure shared access signature's signature (`…&sig=…` in a SAS URL or connection string).
    (("sig=",), r"(?<=[?&;]sig=)[A-Za-z0-9%+/=]{20,}"),
)
_SHAPE_RES = tuple((needles, re.compile(shape)) for needles, shape in _SHAPES)

# An AWS access key id, and the secret access key beside it when one is (the console's CSV
# `AKIA…,wJal…`, `Session("AKIA…", "wJal…")`, `Secret access key: …` on the next line): 40 characters of
# base64 after at most 12 separators and a short label.
_AWS = re.compile(
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|AIPA)[0-9A-Z]{16}\b"
    r"(?:(?P<sep>[ \t\r\n,;:|=\"'`]{1,12}+(?:[A-Za-z_ ]{1,30}[:=][ \t\"']{0,4})?)"
    r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=]))?"
)
_AWS_NEEDLES = ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "AIPA")

# Keys issued without a prefix of their own (Azure OpenAI's 32 hex, Mistral's 32 and Cohere's 40
# letters and digits), recognised beside the provider's name on the same line: `AzureKeyCredential("…")`,
# `cohere.Client("…")`. Read from the name on, at most `_BESIDE_CHARS` characters.
_PROVIDER_NAMES = ("azure", "cohere", "mistral")
_PROVIDERS = re.compile("|".join(_PROVIDER_NAMES))  # run on the lower-cased text
_BESIDE_CHARS = 120
_BARE_KEY = re.compile(r"(?<![A-Za-z0-9_\-])[A-Za-z0-9]{32,40}(?![A-Za-z0-9_\-])")
_HEX = re.compile(r"[0-9a-fA-F]+")

# Environment variables set in any of the usual ways. The name decides (`secret_name`), the value is
# hidden unless it is a reference, a template, a number or a switch (`_env_hides`). Python forms need a
# string literal (`os.environ["PW"] = getpass()` is code); shell forms take the word that follows.
_QUOTED = r"\"[^\"\n]{0,2000}+\"|'[^'\n]{0,2000}+'"
_SHELL_WORD = r"[^\s\"'`;&|]{1,2000}+"
_VAR = r"[A-Za-z_][A-Za-z0-9_]{0,80}+"
# A line's prefix in a tool's answer: read_file's `  12: `, grep's `path:12: `, `cat -n`'s `    12\t`,
# grep -n's context `12-`, a table's `12 │ `; then indentation (a cell's lines in cell_history).
_LINE_PREFIX = r"[ \t]{0,40}+(?:(?:[^\s:]{1,300}+:)?[0-9]{1,9}+(?:[:\t\-|│]|[ \t]{1,4}+[|│])[ \t]{0,40}+)?"
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
# The forms by a shorter literal each of their needles holds: one search rules out most of them.
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
_ENV_LINE_HEAD = re.compile(_LINE_PREFIX + r"(?:-[ \t]{1,4})?")
_ENV_LINE_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_ENV_LINE_VALUE = re.compile(_VALUE)
_SWITCHES = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "nil", "y", "n"})
_PATH_VALUE = re.compile(r"(?:~|\.{1,2})?/[\w.\-/ ]*")

# A credential pair given to an auth parameter or class: `auth=("user", "pw")`, `http_auth=(user, "pw")`,
# `"auth": ("user", "pw")`, `HTTPBasicAuth("user", "pw")`, `authenticate(u, "pw")`: the second and last
# item, when it is a string literal, is hidden. Run on the lower-cased text (same length): a fast search.
_AUTH_PAIR = re.compile(
    r"auth(?P<tail>[a-z_]{0,12}+)(?P<quote>[\"']?)[ \t]{0,8}(?P<how>[=:][ \t]{0,8}\(|\()[ \t]{0,8}"
    r"(?:\"[^\"\n]{0,200}+\"|'[^'\n]{0,200}+'|[a-z_][\w.]{0,80}+)[ \t]{0,8},[ \t]{0,8}"
    r"(?P<secret>\"[^\"\n]{1,500}+\"|'[^'\n]{1,500}+')(?=[ \t]{0,8}\))"
)

# A private key's body without its armour in sight (read_file from a later line, one grep hit, a cut
# result): lines of base64 as wide as PEM (64) or OpenSSH (70) writes them, each with upper and lower
# case letters and digits, in a run — or alone — and the shorter last line of the run. A run next to the
# armour of something public (`-----END CERTIFICATE-----`) is left alone.
_BODY_WIDTHS = (64, 70)
_BODY_SUFFIX = r"(?:\\n)?[\"']?[ \t]{0,8}[,+)]?[ \t]{0,8}\r?"
_BODY_LINE = re.compile(
    _LINE_PREFIX + r"(?:[bBrRuU]?[\"'])?(?P<body>[A-Za-z0-9+/]{64,70}+={0,2})" + _BODY_SUFFIX
)
_LAST_BODY = re.compile(
    _LINE_PREFIX + r"(?:[bBrRuU]?[\"'])?(?P<body>[A-Za-z0-9+/]{4,69}={0,2})" + _BODY_SUFFIX
)
_ARMOUR = re.compile(r"-----(?:BEGIN|END) ([A-Z0-9 ]{1,60})-----")
_LINE_SPAN = 400  # a prefix or a neighbouring line read at most this far
# The same body in one string with `\n` escapes (a service account's JSON, a key in a Python literal).
_ESCAPED_BODY = re.compile(r"\\n(?P<body>[A-Za-z0-9+/]{70}|[A-Za-z0-9+/]{64})(?=\\n)")
_ESCAPED_EDGE = re.compile(r"[A-Za-z0-9+/]{1,70}+={0,2}")
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")

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
_ENV_LIKE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # OPENAI_API_KEY, not KEY or Token
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s@]*")
_COLOUR = re.compile(r"#[0-9A-Fa-f]{3,8}")
_HOST = re.compile(r"[\w\-]+(?:\.[\w\-]+)*:[0-9]{1,5}|[\w\-]+(?:\.[\w\-]+)+")

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
    if any(needle in text for needle in _AWS_NEEDLES):
        text = _AWS.sub(_aws_hidden, text)
    text = _mask_key_lines(text)
    if "\\n" in text:
        text = _mask_escaped_bodies(text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK, text)
    lower = text.lower()
    if "bearer" in lower or "authorization" in lower:
        text = _AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)
        text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    text = _mask_env(text)
    lower = text.lower()
    if len(lower) == len(text):  # else the lower-cased text's offsets are not the text's
        if "auth" in lower:
            text = _mask_auth_pairs(text, lower)
            lower = text.lower()
        if any(name in lower for name in _PROVIDER_NAMES):
            text = _mask_beside_providers(text, lower)
            lower = text.lower()
    return _mask_assignments(text, lower)


def _aws_hidden(found: re.Match[str]) -> str:
    secret = found.group("secret")
    if secret is None or not _mixed(secret, digits=1):
        return MASK
    return f"{MASK}{found.group('sep')}{MASK}"


def _mask_env(text: str) -> str:
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
        line_start = text.rfind("\n", max(0, start - _LINE_SPAN), start) + 1
        if (line_start == 0 and start > _LINE_SPAN) or not _ENV_LINE_HEAD.fullmatch(text, line_start, start):
            continue
        value = _ENV_LINE_VALUE.match(text, at + 1)
        if value is None or text.startswith(MASK, at + 1) or not _env_hides(text[start:at], value.group()):
            continue
        inner = value.span()
        if value.group()[0] in "\"'" and len(value.group()) > 1:
            inner = (inner[0] + 1, inner[1] - 1)
        spans.append(inner)
        done = value.end()
    return _replace_spans(text, spans)


def _env_hidden(found: re.Match[str]) -> str:
    value = found.group("value")
    before = found.string[found.start() - 1] if found.start() else " "
    if found.re in _KEYWORD_FORMS and (before.isalnum() or before in "_.-"):
        return found.group(0)  # `offset X=1`, `reset NAME=…`, `BASE NAME=…`: not the keyword
    if found.string.startswith(MASK, found.start("value")) or not _env_hides(found.group("name"), value):
        return found.group(0)
    quote = value[0] if value[0] in "\"'" and len(value) > 1 and value[-1] == value[0] else ""
    return f"{_text_before(found, 'value')}{quote}{MASK}{quote}"


def _text_before(found: re.Match[str], group: str) -> str:
    """What a match holds before one of its groups."""
    return found.string[found.start() : found.start(group)]


def _env_hides(name: str, value: str) -> bool:
    """Whether the value set for an environment variable ``name`` is hidden: a secret-named variable's,
    unless the value is a reference, a template, a path, a switch, another variable's name or (for all but
    a password) a number."""
    if not secret_name(name):
        return False
    quoted = len(value) > 1 and value[0] in "\"'" and value[-1] == value[0]
    inner = (value[1:-1] if quoted else value).strip()
    if not any(c.isalnum() for c in inner) or MASK in inner:
        return False
    if _REFERENCE.fullmatch(inner) or _TEMPLATE.search(inner) or inner.startswith("$"):
        return False
    if inner.lower() in _SWITCHES or _PATH_VALUE.fullmatch(inner) or _ENV_LIKE.fullmatch(inner):
        return False  # `true`, `/run/secrets/key`, another variable's name (`'HTTP_REFERER'`)
    return not (_NUMBER.fullmatch(inner) and _kind(name) != "password")


def _mask_auth_pairs(text: str, lower: str) -> str:
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
        if not any(c.isalnum() for c in inner) or MASK in inner or _REFERENCE.fullmatch(inner):
            continue
        if _TEMPLATE.search(inner):
            continue
        spans.append((start + 1, end - 1))
    return _replace_spans(text, spans)


def _mask_beside_providers(text: str, lower: str) -> str:
    """Prefixless keys (`_BARE_KEY`) hidden after a provider's name on the same line (`_PROVIDERS`)."""
    spans: list[tuple[int, int]] = []
    scanned = 0  # each character is read once, however many names come before it
    for word in _PROVIDERS.finditer(lower):
        start = max(word.end(), scanned)
        line_end = lower.find("\n", start, word.end() + _BESIDE_CHARS)
        end = word.end() + _BESIDE_CHARS if line_end < 0 else line_end
        for key in _BARE_KEY.finditer(text, start, min(end, len(text))):
            if _issued(key.group(0)):
                spans.append(key.span())
        scanned = max(scanned, end)
    return _replace_spans(text, spans)


def _issued(value: str) -> bool:
    """Whether a bare 32 or 40 character run reads as an issued key: 32 hex (Azure), or mixed-case
    letters and digits (Mistral's 32, Cohere's 40); a commit's 40 hex or an identifier does not."""
    if len(value) == 32 and _HEX.fullmatch(value) and _mixed(value, digits=3, cases=1):
        return True
    return len(value) in (32, 40) and _mixed(value, digits=3, cases=2)


def _mixed(value: str, *, digits: int = 1, cases: int = 2) -> bool:
    """Whether ``value`` has at least ``digits`` digits and letters of ``cases`` cases (1 or 2)."""
    upper = any(c.isupper() for c in value)
    lower = any(c.islower() for c in value)
    return sum(c.isdigit() for c in value) >= digits and (upper + lower) >= cases


def _replace_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each of the (sorted, disjoint) ``spans`` replaced by the mask."""
    if not spans:
        return text
    out, done = [], 0
    for start, end in spans:
        out.append(text[done:start])
        out.append(MASK)
        done = end
    out.append(text[done:])
    return "".join(out)


def _mask_key_lines(text: str) -> str:
    """Private key bodies (see `_BODY_LINE`) hidden line by line, armour or not; linear in the text."""
    spans: list[tuple[int, int]] = []
    block: list[tuple[int, int]] = []  # the full-width lines of the block being read
    block_end = -1  # where the block's last line ends (its newline)
    start = 0
    for line in text.split("\n"):
        end = start + len(line)
        # A body line is 64 or 70 wide, with a prefix and quotes at most _LINE_SPAN in all.
        if 64 <= len(line) <= _LINE_SPAN + 80:
            found = _BODY_LINE.fullmatch(text, start, end)
            if found is not None and _full_width(found.group("body")):
                if block and start != block_end + 1:
                    spans.extend(_settled(text, block, block_end))
                    block = []
                block.append(found.span("body"))
                block_end = end
        start = end + 1
    spans.extend(_settled(text, block, block_end))
    return _replace_spans(text, spans)


def _full_width(body: str) -> bool:
    """Whether a run of base64 is a whole line of a key: as wide as PEM or OpenSSH writes, and mixed."""
    return (len(body) in _BODY_WIDTHS or len(body.rstrip("=")) in _BODY_WIDTHS) and _mixed(body)


def _settled(text: str, block: list[tuple[int, int]], block_end: int) -> list[tuple[int, int]]:
    """The spans to hide of a block of full-width body lines: each of them, and the shorter last line
    after them — none when the line before or after is the armour of something public."""
    if not block:
        return []
    spans = list(block)
    after_start = block_end + 1
    after = _line_at(text, after_start)
    if after is not None:
        last = _LAST_BODY.fullmatch(text, after_start, after)
        if last is not None:
            spans.append(last.span("body"))
            after_start = after + 1
            after = _line_at(text, after_start)
    first_line_start = text.rfind("\n", max(0, block[0][0] - _LINE_SPAN), block[0][0]) + 1
    before_end = first_line_start - 1
    before_start = text.rfind("\n", max(0, before_end - _LINE_SPAN), before_end) + 1 if before_end > 0 else 0
    neighbours = [text[before_start:before_end] if before_end > 0 else ""]
    if after is not None:
        neighbours.append(text[after_start:after])
    for line in neighbours:
        armour = _ARMOUR.search(line)
        if armour is not None and "PRIVATE" not in armour.group(1):
            return []  # a certificate's, a public key's or a signature's body: public, and useful
    return spans


def _line_at(text: str, start: int) -> int | None:
    """Where the line starting at ``start`` ends (within `_LINE_SPAN`), or None past the text."""
    if start > len(text):
        return None
    end = text.find("\n", start, start + _LINE_SPAN)
    if end < 0:
        return len(text) if len(text) - start <= _LINE_SPAN else None
    return end


def _mask_escaped_bodies(text: str) -> str:
    """Key bodies inside one string, lines joined by ``\\n`` escapes (`_ESCAPED_BODY`), hidden."""
    spans: list[tuple[int, int]] = []
    run: list[re.Match[str]] = []
    for found in _ESCAPED_BODY.finditer(text):
        if not _mixed(found.group("body")):
            continue
        if run and found.start() != run[-1].end():
            spans.extend(_escaped_run(text, run))
            run = []
        run.append(found)
    spans.extend(_escaped_run(text, run))
    return _replace_spans(text, spans)


def _escaped_run(text: str, run: list[re.Match[str]]) -> list[tuple[int, int]]:
    """One span for a run of escaped full-width body lines, with a line cut short before it (a grep
    window's edge) and the shorter line after it; none when the armour beside it names something public."""
    if not run:
        return []
    first = run[0].start()  # the backslash of the `\\n` before the first full line
    start = _cut_line_start(text, first)
    end = run[-1].end()
    if text.startswith("\\n", end):
        tail = _ESCAPED_EDGE.match(text, end + 2)
        if tail is not None:
            end = tail.end()
    before = text[max(0, start - 80) : start]
    near = (before[before.rfind("-----BEGIN") :] if "-----BEGIN" in before else "", text[end : end + 80])
    for side in near:
        armour = _ARMOUR.search(side)
        if armour is not None and "PRIVATE" not in armour.group(1):
            return []
    return [(start, end)]


def _cut_line_start(text: str, index: int) -> int:
    """Where a body line cut short and ending at ``index`` starts (a window's edge: ``…xY3/q\\n``), or
    ``index + 2`` (past the ``\\n``) when what is before is not one."""
    start = index
    floor = max(0, index - 70)
    while start > floor and text[start - 1] in _BASE64_CHARS:
        start -= 1
    if start in (index, floor) or (start > 0 and text[start - 1] == "\\"):
        return index + 2  # nothing, longer than a line, or a whole line after a `\\n` of its own
    return start


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
    kind = _kind(key)
    if kind is None:
        return False
    if before and before in "\"'" and value[0] in "\"'" and _ENV_LIKE.fullmatch(key):
        # `{'OPENAI_API_KEY': '…'}`, `('HF_TOKEN', '…')`: an environment's variables (dotenv_values,
        # %env, os.environ shown), decided as where they are set.
        return _env_hides(key, value)
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


#: A known secret shorter than this is not replaced wherever it shows (`known_secret`).
KNOWN_CHARS = 8


def known_secret(name: str, value: object) -> bool:
    """Whether ``value``, held by a variable or environment variable named ``name``, is a secret to
    hide wherever its text shows: a secret name (`secret_name`), a string of `KNOWN_CHARS` or more, and
    not a reference, a path, a switch or a number (`_env_hides`)."""
    return isinstance(value, str) and len(value.strip()) >= KNOWN_CHARS and _env_hides(name, value)


def mask_known(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` (values `known_secret` chose) replaced by :data:`MASK`, the
    longest first (a secret that holds another is hidden whole)."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text
