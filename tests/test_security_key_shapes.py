"""Security issue 26, the key shapes people have: each provider's issued format is masked wherever it
shows, the nested and pair forms of a config are masked, a private key's body is masked line by line
without its armour, and ordinary code with the same characters is left alone.

The fake keys are made here from their published formats (prefix, alphabet, length) with a fixed seed,
so the file holds no string a scanner would take for a real key, and each has the shape the provider
issues today (checked against gitleaks' rule files). Each pattern has a pathological input whose time is
compared with a quarter-size run of the same input: linear, not quadratic.
"""

from __future__ import annotations

import base64
import json
import random
import string
import time
from collections.abc import Callable

import pytest

from twinny_magics.redact import MASK, mask_secrets

HEX = "0123456789abcdef"
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"
_rng = random.Random(26)


def fake(alphabet: str, n: int) -> str:
    """``n`` characters of ``alphabet``, with a digit and a letter of each case the alphabet has."""
    while True:
        made = "".join(_rng.choice(alphabet) for _ in range(n))
        cases = [any(c.isdigit() for c in made)]
        cases += [any(c.islower() for c in made)] if set(string.ascii_lowercase) & set(alphabet) else []
        cases += [any(c.isupper() for c in made)] if set(string.ascii_uppercase) & set(alphabet) else []
        if all(cases):
            return made


def azure_key() -> str:
    """An Azure key of the 2024 format: 52 characters, ``JQQJ9``, a version letter, 26 more."""
    return fake(ALNUM, 52) + "JQQJ99" + _rng.choice(ALNUM) + "A" + fake(ALNUM, 16) + "x" + fake(ALNUM, 7)


PPLX = "pplx-" + fake(ALNUM, 48)
DATABRICKS = "dapi" + fake("0123456789abcdefgh", 32)
DIGITALOCEAN = {kind: f"do{kind}_v1_" + fake(HEX, 64) for kind in "opr"}
PINECONE = "pcsk_" + fake(ALNUM, 6) + "_" + fake(ALNUM, 63)
LANGSMITH = {kind: f"lsv2_{kind}_" + fake(HEX, 32) + "_" + fake(HEX, 10) for kind in ("pt", "sk")}
SHOPIFY = {kind: f"shp{kind}_" + fake(HEX, 32) for kind in ("at", "ss", "ca", "pa")}
TELEGRAM = "7123456789:AA" + fake(URLSAFE, 33)
GOOGLE_SECRET = "GOCSPX-" + fake(URLSAFE, 28)
GOOGLE_ACCESS = "ya29." + fake(URLSAFE, 150)
GOOGLE_REFRESH = "1//0" + fake(URLSAFE, 99)
AZURE = azure_key()
AZURE_HEX = fake(HEX, 32)
SAS_SIG = fake(ALNUM, 40) + "%3D"
COHERE = fake(ALNUM, 40)
MISTRAL = fake(ALNUM, 32)
AWS_ID = "AKIA" + fake(string.ascii_uppercase + string.digits, 16).upper()
AWS_SECRET = fake(ALNUM + "+/", 40)
ANTHROPIC_ADMIN = "sk-ant-admin01-" + fake(URLSAFE, 93) + "AA"
STORAGE_KEY = base64.b64encode(_rng.randbytes(64)).decode()

# (name, text, the secret that must not survive): each was shown in clear before this change.
NEW_SHAPES = [
    ("perplexity", f'client = OpenAI(base_url=PPLX_URL, api_key=get("{PPLX}"))', PPLX),
    ("databricks", f'w = WorkspaceClient(host, "{DATABRICKS}")', DATABRICKS),
    *((f"digitalocean do{k}", f"doctl auth init -t {v}", v) for k, v in DIGITALOCEAN.items()),
    ("pinecone", f'pc = Pinecone("{PINECONE}")', PINECONE),
    *((f"langsmith {k}", f'Client(api_url=URL, "{v}")', v) for k, v in LANGSMITH.items()),
    *((f"shopify shp{k}", f'shopify.Session(shop, "{v}")', v) for k, v in SHOPIFY.items()),
    ("telegram bot token", f'bot = telebot.TeleBot("{TELEGRAM}")', TELEGRAM),
    ("google oauth client secret", f'flow = {{"installed": {{"x": "{GOOGLE_SECRET}"}}}}', GOOGLE_SECRET),
    ("google access token", f'Credentials("{GOOGLE_ACCESS}")', GOOGLE_ACCESS),
    ("google refresh token", f"creds = Credentials(None, refresh={GOOGLE_REFRESH!r})", GOOGLE_REFRESH),
    ("azure 2024 key", f'headers = {{"Ocp-Apim-Subscription": "{AZURE}"}}', AZURE),
    ("azure openai hex beside its name", f'cred = AzureKeyCredential("{AZURE_HEX}")', AZURE_HEX),
    (
        "azure sas signature",
        f"https://acct.blob.core.windows.net/c/b.csv?sv=2022-11-02&sp=r&sig={SAS_SIG}",
        SAS_SIG,
    ),
    ("cohere beside its name", f'co = cohere.ClientV2("{COHERE}")', COHERE),
    ("mistral beside its name", f'client = Mistral("{MISTRAL}")', MISTRAL),
    (
        "aws secret in the console's csv",
        f"Access key ID,Secret access key\n{AWS_ID},{AWS_SECRET}\n",
        AWS_SECRET,
    ),
    ("aws secret passed beside its id", f'boto3.Session("{AWS_ID}", "{AWS_SECRET}")', AWS_SECRET),
    ("aws secret on the line after", f"aws configure import:\n{AWS_ID}\n{AWS_SECRET}\n", AWS_SECRET),
    ("config subscript", 'config["api_key"] = "abc123def456"', "abc123def456"),
    ("nested config subscript", "cfg['openai']['api_key'] = 'abc123def456'", "abc123def456"),
    ("setattr", 'setattr(settings, "api_key", "abc123def456")', "abc123def456"),
    ("configparser set", 'parser.set("database", "password", "hunter2x")', "hunter2x"),
    ("auth keyword", 'requests.get(url, auth="abc123def456")', "abc123def456"),
]

# Shapes the masker already knew (kept here so a change to them shows): not counted as new.
KNOWN_SHAPES = [
    ("anthropic admin key", f"ANTHROPIC_ADMIN = {ANTHROPIC_ADMIN}", ANTHROPIC_ADMIN),
    ("aws secret labelled", f"Access key: {AWS_ID}\nSecret access key: {AWS_SECRET}", AWS_SECRET),
    ("azure openai key by its name", f"AZURE_OPENAI_API_KEY={AZURE_HEX}", AZURE_HEX),
    (
        "azure storage connection string",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={STORAGE_KEY};EndpointSuffix=core.windows.net",
        STORAGE_KEY,
    ),
    ("settings attribute", 'settings.api_key = "abc123def456"', "abc123def456"),
    ("nested json", json.dumps({"openai": {"api_key": "abc123def456"}}), "abc123def456"),
    ("nested yaml", "providers:\n  openai:\n    api_key: abc123def456\n", "abc123def456"),
]


@pytest.mark.parametrize(
    ("text", "secret"), [(t, s) for _, t, s in NEW_SHAPES], ids=[n for n, _, _ in NEW_SHAPES]
)
def test_each_issued_key_shape_is_masked(text: str, secret: str) -> None:
    out = mask_secrets(text)
    assert secret not in out, out
    assert MASK in out


@pytest.mark.parametrize(
    ("text", "secret"), [(t, s) for _, t, s in KNOWN_SHAPES], ids=[n for n, _, _ in KNOWN_SHAPES]
)
def test_the_shapes_known_before_stay_masked(text: str, secret: str) -> None:
    assert secret not in mask_secrets(text)


def test_what_is_around_a_masked_pair_still_reads() -> None:
    assert mask_secrets(f'boto3.Session("{AWS_ID}", "{AWS_SECRET}")') == f'boto3.Session("{MASK}", "{MASK}")'
    assert mask_secrets('config["api_key"] = "abc123def456"') == f'config["api_key"] = "{MASK}"'
    assert mask_secrets(f"{AWS_ID},{AWS_SECRET}") == f"{MASK},{MASK}"


# Ordinary code and data with the same letters: left alone.
PLAIN = [
    "commit 3f2a9c1d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c (azure pipelines)",  # a commit's 40 hex
    "class AzureCognitiveServicesSpeechRecognizerClientFactoryX: pass",  # a long name, no digits
    'mistral_model = "open-mistral-nemo-2407"',
    'dapi_version = "v2"',
    "shp_file = 'roads.shp'",
    'signature = f"sig={sig}"',
    "time 12:34:56 AA battery",
    'getattr(obj, "token", "default_token")',
    'MovedAttribute("HTTPPasswordMgr", "urllib2", "urllib.request")',
    "('http', 'joe', 'password', 'proxy.example.com:3128')",
    'input_field("password", "Enter your password")',
    'author=("Jane", "Doe")',
    "requests.get(url, auth=auth)",
    'auth=("user", getpass())',
    'auth="basic"',
    "aws_id = AKIA_PREFIX + suffix",
]


@pytest.mark.parametrize("text", PLAIN)
def test_ordinary_code_with_key_letters_is_left_alone(text: str) -> None:
    assert mask_secrets(text) == text


# --- a private key's body without its armour ------------------------------------------------------

KEY_DER = _rng.randbytes(1190)
BODY = base64.b64encode(KEY_DER).decode()
LINES = [BODY[i : i + 64] for i in range(0, len(BODY), 64)]
PEM = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(LINES) + "\n-----END PRIVATE KEY-----\n"


def numbered(text: str, first: int, last: int) -> str:
    """read_file's view of lines ``first``..``last`` of ``text`` (its ``  12: `` prefix)."""
    lines = text.split("\n")
    width = len(str(last))
    body = [f"{n:>{width}}: {lines[n - 1]}" for n in range(first, last + 1)]
    return f"keys/server.pem, lines {first}–{last} of {len(lines)}:\n" + "\n".join(body)


def visible_key_bytes(out: str) -> int:
    """How many of the key body's lines (or their longest 16-character pieces) survive in ``out``."""
    return sum(any(line[i : i + 16] in out for i in range(0, len(line) - 15, 8)) for line in LINES)


def test_a_key_read_from_a_later_line_shows_no_body_line() -> None:
    window = numbered(PEM, 5, 14)  # no BEGIN line in the window
    out = mask_secrets(window)
    assert visible_key_bytes(out) == 0, out
    assert out.splitlines()[1] == f" 5: {MASK}"


def test_the_end_of_a_key_and_its_shorter_last_line_are_masked() -> None:
    out = mask_secrets(numbered(PEM, 12, len(PEM.split("\n"))))
    assert visible_key_bytes(out) == 0, out
    assert "-----END PRIVATE KEY-----" in out


def test_one_body_line_in_a_grep_hit_is_masked() -> None:
    hits = f"keys/server.pem:7: {LINES[5]}\nsrc/app.py:3: import ssl"
    out = mask_secrets(hits)
    assert LINES[5] not in out
    assert out == f"keys/server.pem:7: {MASK}\nsrc/app.py:3: import ssl"


@pytest.mark.parametrize(
    "shown",
    [
        "\n".join(LINES[3:9]),  # the raw lines (cat, a cell's print)
        "\n".join(f"    {n:>6}\t{line}" for n, line in enumerate(LINES[3:9], 4)),  # cat -n
        "\n".join(f"{n}-{line}" for n, line in enumerate(LINES[3:9], 4)),  # grep -C context lines
        "\n".join(f"  {n} │ {line}" for n, line in enumerate(LINES[3:9], 4)),  # a table's rule
        "KEY = (\n" + "\n".join(f'    "{line}"' for line in LINES[3:9]) + "\n)",  # literals in code
    ],
    ids=["raw", "cat -n", "grep context", "table", "string literals"],
)
def test_body_lines_are_masked_under_every_tool_prefix(shown: str) -> None:
    assert visible_key_bytes(mask_secrets(shown)) == 0


def test_an_openssh_body_of_70_columns_is_masked() -> None:
    lines = [BODY[i : i + 70] for i in range(0, 700, 70)]
    out = mask_secrets("\n".join(f"{n:>2}: {line}" for n, line in enumerate(lines, 3)))
    assert not any(line in out for line in lines), out


def test_a_key_in_a_json_string_is_masked_when_its_begin_is_cut_off() -> None:
    service_account = json.dumps({"type": "service_account", "private_key": PEM, "client_email": "a@b.iam"})
    at = service_account.index(LINES[3])
    window = "…" + service_account[at - 30 : at + 200] + "…"  # grep's window on a long line
    out = mask_secrets(window)
    assert visible_key_bytes(out) == 0, out
    assert out.startswith("…")
    assert out.endswith("…")


def test_a_certificate_or_public_key_body_is_left_alone() -> None:
    cert = PEM.replace("PRIVATE KEY", "CERTIFICATE")
    assert mask_secrets(numbered(cert, 8, len(cert.split("\n")))) == numbered(cert, 8, len(cert.split("\n")))
    public = PEM.replace("PRIVATE KEY", "PUBLIC KEY")
    assert mask_secrets(numbered(public, 1, 6)) == numbered(public, 1, 6)
    in_json = json.dumps({"cert": cert})
    assert mask_secrets(in_json) == in_json


@pytest.mark.parametrize(
    "text",
    [
        "sha256 " + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",  # hex: one case
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "data:image/png;base64," + base64.b64encode(_rng.randbytes(300)).decode(),  # one long line
        base64.encodebytes(_rng.randbytes(300)).decode(),  # MIME lines are 76 wide
        "    " + "a_very_long_identifier_name_without_digits_in_it_at_all_anywhere_x",
    ],
    ids=["hash with its name", "a bare hash", "data uri", "mime base64", "identifier"],
)
def test_long_base64_that_is_not_a_key_body_is_left_alone(text: str) -> None:
    assert mask_secrets(text) == text


def test_masking_a_key_body_is_idempotent() -> None:
    once = mask_secrets(numbered(PEM, 3, 12))
    assert mask_secrets(once) == once


# --- every new pattern stays linear -----------------------------------------------------------------

BODY_LINE = LINES[0]
ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "pplx- repeated": lambda n: "pplx-" * (n // 5),
    "dapi repeated": lambda n: "dapi" * (n // 4),
    "do_v1_ hex run": lambda n: "dop_v1_" + "a" * n,
    "pcsk_ repeated": lambda n: "pcsk_" * (n // 5),
    "lsv2_pt_ repeated": lambda n: ("lsv2_pt_" + "a" * 31 + "_") * (n // 40),
    "shpat_ repeated": lambda n: "shpat_" * (n // 6),
    "digits:AA repeated": lambda n: "1234567:AA" * (n // 10),
    "GOCSPX- repeated": lambda n: "GOCSPX-" * (n // 7),
    "ya29. repeated": lambda n: "ya29." * (n // 5),
    "1//0 repeated": lambda n: "1//0" * (n // 4),
    "JQQJ9 after 52 letters, repeated": lambda n: ("a" * 52 + "JQQJ9") * (n // 57),
    "&sig= repeated": lambda n: "&sig=" * (n // 5),
    "AKIA id then separators": lambda n: ("AKIAABCDEFGHIJKLMNOP" + " ," * 6) * (n // 32),
    "azure then 39-letter runs": lambda n: ("azure " + "a1" * 19 + "b ") * (n // 46),
    "os.environ[ unclosed": lambda n: 'os.environ["A_KEY"] = "' * (n // 23),
    "setdefault( repeated": lambda n: 'setdefault("A_KEY", ' * (n // 20),
    "%env without a newline": lambda n: "%env A_KEY " * (n // 11),
    "run_line_magic env repeated": lambda n: "run_line_magic('env', '" * (n // 23),
    "export repeated": lambda n: "export " * (n // 7),
    "NAME= repeated on one line": lambda n: "A_KEY=" * (n // 6),
    "NAME= lines": lambda n: "A_KEY=x\n" * (n // 8),
    "auth=( repeated": lambda n: "auth=(" * (n // 6),
    "auth pair unclosed": lambda n: 'auth=("a", "' * (n // 12),
    "pair of names unclosed": lambda n: '"api_key", "' * (n // 12),
    "subscript assignment repeated": lambda n: '"api_key"] = "' * (n // 14),
    "body lines": lambda n: (BODY_LINE + "\n") * (n // 65),
    "63-column lines": lambda n: (BODY_LINE[:63] + "\n") * (n // 64),
    "one long base64 line": lambda n: (BODY * (n // len(BODY) + 1))[:n],
    "escaped body lines": lambda n: ("\\n" + BODY_LINE) * (n // 66),
    "escaped runs of 63": lambda n: ("\\n" + BODY_LINE[:63]) * (n // 65),
    "armour between body lines": lambda n: (BODY_LINE + "\n-----END CERTIFICATE-----\n") * (n // 91),
    "line prefixes without a body": lambda n: ("a" * 299 + ":12: \n") * (n // 306),
}


def _best_time(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        mask_secrets(text)
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.parametrize("make", ADVERSARIAL.values(), ids=list(ADVERSARIAL))
def test_each_new_pattern_is_linear_on_pathological_input(make: Callable[[int], str]) -> None:
    """Four times the input takes about four times as long (a quadratic pattern would take sixteen).

    Measured up to three times: the machine is shared, and one busy moment must not fail a linear
    pattern (a quadratic one fails every time)."""
    small_text, large_text = make(20_000), make(80_000)
    tries = []
    for _ in range(3):
        small, large = _best_time(small_text), _best_time(large_text)
        tries.append((small, large))
        if large < max(small, 0.0003) * 10:
            return
    pytest.fail(f"not linear: {tries}")
