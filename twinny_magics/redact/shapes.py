"""Keys known by their shape: the prefixes keys are issued with, an AWS key id and the secret beside it,
keys issued without a prefix beside their provider's name, a password in a URL and an Authorization header.
"""

from __future__ import annotations

import re

from .base import MASK, mixed, replace_spans

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
PROVIDER_NAMES = ("azure", "cohere", "mistral")
_PROVIDERS = re.compile("|".join(PROVIDER_NAMES))  # run on the lower-cased text
_BESIDE_CHARS = 120
_BARE_KEY = re.compile(r"(?<![A-Za-z0-9_\-])[A-Za-z0-9]{32,40}(?![A-Za-z0-9_\-])")
_HEX = re.compile(r"[0-9a-fA-F]+")

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


def mask_issued(text: str) -> str:
    """``text`` with the keys in an issued shape (`_SHAPES`) and AWS key ids (and their secrets) hidden."""
    for needles, shape in _SHAPE_RES:
        if any(needle in text for needle in needles):
            text = shape.sub(MASK, text)
    if any(needle in text for needle in _AWS_NEEDLES):
        text = _AWS.sub(_aws_hidden, text)
    return text


def mask_urls_and_headers(text: str) -> str:
    """``text`` with a URL's password, a bearer token and an Authorization header's value hidden."""
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK, text)
    lower = text.lower()
    if "bearer" in lower or "authorization" in lower:
        text = _AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)
        text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    return text


def _aws_hidden(found: re.Match[str]) -> str:
    secret = found.group("secret")
    if secret is None or not mixed(secret, digits=1):
        return MASK
    return f"{MASK}{found.group('sep')}{MASK}"


def mask_beside_providers(text: str, lower: str) -> str:
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
    return replace_spans(text, spans)


def _issued(value: str) -> bool:
    """Whether a bare 32 or 40 character run reads as an issued key: 32 hex (Azure), or mixed-case
    letters and digits (Mistral's 32, Cohere's 40); a commit's 40 hex or an identifier does not."""
    if len(value) == 32 and _HEX.fullmatch(value) and mixed(value, digits=3, cases=1):
        return True
    return len(value) in (32, 40) and mixed(value, digits=3, cases=2)
