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

Where each part lives: ``shapes`` (issued prefixes, AWS, keys beside a provider's name, a URL's password,
Authorization headers), ``bodies`` (private key bodies without their armour), ``env`` (environment
variables), ``assignments`` (values given to secret names, credential pairs); ``names`` (what a name and
a value say), ``known`` (the kernel's known secrets) and ``base`` (the mask, what the passes share).
:func:`mask_secrets` runs the passes, in an order that matters: a later one sees what an earlier one hid.
"""

from __future__ import annotations

from .assignments import mask_assignments, mask_auth_pairs
from .base import MASK
from .bodies import mask_key_bodies
from .env import mask_env
from .known import KNOWN_CHARS, known_secret, mask_known
from .names import secret_name
from .shapes import PROVIDER_NAMES, mask_beside_providers, mask_issued, mask_urls_and_headers

__all__ = ["KNOWN_CHARS", "MASK", "known_secret", "mask_known", "mask_secrets", "mask_value", "secret_name"]


def mask_secrets(text: str) -> str:
    """``text`` with every credential-shaped run replaced by :data:`MASK` (see the module docstring)."""
    if not text:
        return text
    text = mask_issued(text)
    text = mask_key_bodies(text)
    text = mask_urls_and_headers(text)
    text = mask_env(text)
    lower = text.lower()
    if len(lower) == len(text):  # else the lower-cased text's offsets are not the text's
        if "auth" in lower:
            text = mask_auth_pairs(text, lower)
            lower = text.lower()
        if any(name in lower for name in PROVIDER_NAMES):
            text = mask_beside_providers(text, lower)
            lower = text.lower()
    return mask_assignments(text, lower)


def mask_value(text: str, secret: str | None) -> str:
    """``text`` with one known secret (e.g. the session's API key) and every key shape masked."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, MASK)
    return mask_secrets(text)
