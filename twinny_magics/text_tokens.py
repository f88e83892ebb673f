"""A text's tokens without its tokenizer: counts of tokenizer-shaped features, weighed and calibrated.

Pure: no I/O. Where the server cannot count a text (Ollama, LM Studio, a gateway, a hosted API: no
``/tokenize``), one ratio of characters to tokens errs by the kind of text — a log line runs 1.4
characters a token, prose 4 — so a conversation's next tool result can weigh twice or half what the
last one taught. Byte-level BPE tokenizers (GPT-2, Llama 3, SmolLM2, Qwen, Mistral's Tekken) split text
the same way before merging: words with their leading space, digits, runs of punctuation, runs of
whitespace, non-ASCII. Counting those pieces by shape, and weighing each shape by what it costs in
tokens, predicts a text's tokens far better than its length does: fitted on SmolLM2's vocabulary,
p95 error 3.5% on conversations whose texts the fit never saw, against 24% for the learned ratio
(``benchmarks/bench_estimator.py``). Against vocabularies three times larger (Qwen2.5, Qwen3.6) the
same weights overestimate by about 10%; :class:`TextTokens` learns a factor from the server's counts
that takes most of that back.

Where the model's tokenizer family is known (:func:`tokenizer_family`, from its name or the server's
metadata), its own weights (:data:`FAMILY_WEIGHTS`) take the place of SmolLM2's, so the factor has
little left to learn. ``benchmarks/fit_text_weights.py`` fits every set on the family's real counts and
checks them.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence

# Splits text roughly as byte-level BPE pre-tokenizers do: a word with its leading space, single digits,
# runs of punctuation, runs of non-ASCII, whitespace.
PRETOKEN = re.compile(
    r"'(?:s|t|re|ve|m|ll|d)| ?[A-Za-z]+| ?[0-9]| ?[^\sA-Za-z0-9\x80-\U0010ffff]+"
    r"|[\x80-\U0010ffff]+|\s+(?!\S)|\s+"
)

#: What is counted, in this order.
FEATURES = (
    "short_words",  # 1-3 letters: nearly always one token
    "mid_words",  # 4-7 letters: one token when common, two when not
    "long_words",  # 8+ letters
    "long_excess",  # letters beyond 8: long words split into pieces
    "capital_excess",  # letters beyond 4 of Capitalised words: names are rarer than words
    "no_space_words",  # words not after a space (after punctuation, a newline): fewer merges
    "inner_capitals",  # camelCase humps: each is usually a token boundary
    "digits",  # digits are single tokens in these tokenizers
    "punct_runs",
    "punct_chars",
    "whitespace_runs",
    "non_ascii",  # characters outside ASCII: 1-3 tokens each
    "non_ascii_repeats",  # repeated ones (progress bars) rarely merge
)

#: Tokens each feature costs in SmolLM2's vocabulary (49,152 tokens, byte-level BPE), fitted on the 160
#: texts of ``benchmarks/estimator_corpus.py`` (code, JSON, Markdown, grep output, listings, CSS, logs,
#: prose) by ``benchmarks/fit_text_weights.py``: non-negative, minimising the relative error.
SMOLLM2_WEIGHTS: Mapping[str, float] = {
    "short_words": 0.953,
    "mid_words": 0.989,
    "long_words": 1.220,
    "long_excess": 0.057,
    "capital_excess": 0.093,
    "no_space_words": 0.552,
    "inner_capitals": 0.087,
    "digits": 1.074,
    "punct_runs": 0.830,
    "punct_chars": 0.076,
    "whitespace_runs": 0.734,
    "non_ascii": 0.596,
    "non_ascii_repeats": 1.498,
}


def _weights(*values: float) -> Mapping[str, float]:
    return dict(zip(FEATURES, values, strict=True))


#: The same fit for each tokenizer family people run, on that family's real counts of the same corpus
#: (``benchmarks/fit_text_weights.py``; the feature order of :data:`FEATURES`). Larger vocabularies
#: merge more: long words, punctuation runs and camelCase cost less than in SmolLM2's, runs of
#: whitespace more (they merge into indentation tokens less often than SmolLM2's code-heavy vocabulary
#: does). Held out, each family's own weights estimate a 12-request conversation's prompt within p95
#: 3.3-4.4%, where SmolLM2's err 4.9-18% (``benchmarks/results_fit.json``).
FAMILY_WEIGHTS: Mapping[str, Mapping[str, float]] = {
    "smollm2": SMOLLM2_WEIGHTS,
    # Qwen, Qwen1.5, Qwen2, Qwen2.5, Qwen3 (one vocabulary of 151,643 ranks), QwQ.
    "qwen2": _weights(0.987, 0.783, 1.288, 0.0, 0.0, 0.0, 0.012, 1.201, 0.533, 0.174, 1.180, 0.277, 0.350),
    # Qwen3.5 and Qwen3.6: 248,044 ranks, and a pattern that keeps combining marks with their letters.
    "qwen3.5": _weights(0.941, 0.723, 1.055, 0.061, 0.0, 0.0, 0.020, 1.139, 0.628, 0.178, 1.672, 0.351, 0.0),
    # Llama 3, 3.1, 3.2, 3.3 (128,000 ranks: cl100k's and 28,000 more), SmolLM3.
    "llama3": _weights(1.029, 0.793, 1.149, 0.0, 0.0, 0.0, 0.015, 0.703, 0.501, 0.200, 1.249, 0.456, 0.0),
    # OpenAI's cl100k_base, which Phi-4 uses.
    "cl100k": _weights(1.030, 0.787, 1.189, 0.0, 0.0, 0.0, 0.014, 0.717, 0.501, 0.201, 1.182, 0.568, 0.192),
    # OpenAI's o200k_base, which Phi-4-mini and gpt-oss use.
    "o200k": _weights(0.928, 0.804, 1.296, 0.0, 0.0, 0.0, 0.016, 0.702, 0.509, 0.204, 1.265, 0.456, 0.0),
    # Mistral's Tekken: Mistral NeMo, Small 3.x, Ministral, Devstral, Pixtral, Magistral.
    "tekken": _weights(0.905, 0.788, 1.605, 0.0, 0.0, 0.0, 0.260, 1.177, 0.610, 0.209, 0.908, 0.0, 2.013),
    # Mistral's SentencePiece of 32,768 pieces: Mistral 7B v0.3, Mixtral, Codestral 22B.
    "mistral-spm": _weights(
        0.749, 1.075, 1.563, 0.006, 0.0, 0.264, 0.073, 1.041, 0.858, 0.171, 1.471, 0.175, 0.972
    ),
    # Gemma 3's SentencePiece of 262,144 pieces; Gemma and Gemma 2 (256,000, not measured) are given it too.
    "gemma3": _weights(0.866, 0.893, 1.083, 0.030, 0.0, 0.139, 0.012, 1.039, 0.970, 0.084, 1.362, 0.212, 0.0),
}

# The family from a model's name: the first pattern found anywhere in the lowered name wins, so the
# narrower ones come first (Qwen3.5 before Qwen, SmolLM3 before SmolLM, Phi-4-mini before Phi-4).
# Names that fit none fall back to SmolLM2's weights, and the learned factor does the rest: Llama 2,
# Phi-3 and Code Llama (Llama 2's SentencePiece), Llama 4, DeepSeek, Granite... were not measured.
_NAME_FAMILIES = (
    (re.compile(r"qwen[-_ ]?3(?:\.|_)?[5-9](?!\d*b\b)"), "qwen3.5"),  # qwen3.5:9b, Qwen3.6; not qwen3-8b
    (re.compile(r"qwen|qwq"), "qwen2"),
    (re.compile(r"smollm[-_ ]?3"), "llama3"),
    (re.compile(r"smollm"), "smollm2"),
    (re.compile(r"phi[-_ ]?4[-_ ]?mini|gpt[-_ ]?oss"), "o200k"),
    (re.compile(r"phi[-_ ]?4"), "cl100k"),
    (re.compile(r"llama[-_ ]?3"), "llama3"),
    (re.compile(r"gemma"), "gemma3"),
    (
        re.compile(
            r"nemo(?!tron)|ministral|devstral|pixtral|magistral|voxtral"
            r"|mistral[-_ ]?small[-_ ]?3|mistral[-_ ]?small.*24b"
        ),
        "tekken",
    ),
    (re.compile(r"mistral|mixtral|codestral|mathstral"), "mistral-spm"),
)
# What a GGUF says of its pre-tokenizer (``tokenizer.ggml.pre``, as llama.cpp names them): exact, so it
# wins over the name, which a user may have chosen freely.
_PRE_FAMILIES = {
    "qwen2": "qwen2",
    "qwen35": "qwen3.5",
    "llama-bpe": "llama3",
    "llama3": "llama3",
    "smollm": "smollm2",
    "tekken": "tekken",
    "gpt-4o": "o200k",
}
# An architecture (GGUF ``general.architecture``, Ollama's ``details.family``) names a family only where
# one vocabulary goes with it: "llama" is Llama 2, Llama 3 and Mistral alike, "phi3" is Phi-3 and Phi-4.
_ARCHITECTURE_FAMILIES = {
    "qwen2": "qwen2",
    "qwen2moe": "qwen2",
    "qwen3": "qwen2",
    "qwen3moe": "qwen2",
    "qwen35": "qwen3.5",
    "qwen35moe": "qwen3.5",
    "gemma": "gemma3",
    "gemma2": "gemma3",
    "gemma3": "gemma3",
    "gemma3n": "gemma3",
    "gpt-oss": "o200k",
    "smollm3": "llama3",
}


def tokenizer_family(model: str | None, metadata: Mapping[str, object] | None = None) -> str | None:
    """The key of :data:`FAMILY_WEIGHTS` for a model, or None when neither its metadata nor name tells.

    ``metadata``: what the server says of the model, flat — a GGUF's ``tokenizer.ggml.pre`` and
    ``general.architecture``, or Ollama's ``/api/show`` ``model_info`` with ``family`` from its
    ``details``. The pre-tokenizer decides first, then the name, then the architecture.
    """
    meta = metadata or {}
    pre = meta.get("tokenizer.ggml.pre")
    if isinstance(pre, str) and pre.lower() in _PRE_FAMILIES:
        return _PRE_FAMILIES[pre.lower()]
    name = (model or "").lower()
    for pattern, family in _NAME_FAMILIES:
        if pattern.search(name):
            return family
    for key in ("general.architecture", "family"):
        architecture = meta.get(key)
        if isinstance(architecture, str) and architecture.lower() in _ARCHITECTURE_FAMILIES:
            return _ARCHITECTURE_FAMILIES[architecture.lower()]
    return None


def family_weights(model: str | None, metadata: Mapping[str, object] | None = None) -> Mapping[str, float]:
    """The weights for a model's tokenizer family; SmolLM2's when the family is not known."""
    family = tokenizer_family(model, metadata)
    return FAMILY_WEIGHTS[family] if family is not None else SMOLLM2_WEIGHTS


#: Tokens of pseudo-evidence at factor 1: one odd tool result cannot swing the factor on its own.
PRIOR_TOKENS = 2000.0
#: The factor stays within these: a vocabulary a third the size, or three times it, and no further.
MIN_FACTOR = 0.5
MAX_FACTOR = 2.0
#: Longer texts are weighed by a sample (about 0.2 ms a kilobyte would stall a 4 MB file write for
#: most of a second): SAMPLE_PIECES evenly spaced pieces of SAMPLE_PIECE_CHARS, scaled to the length.
SAMPLE_ABOVE = 65_536
SAMPLE_PIECES = 16
SAMPLE_PIECE_CHARS = 4096
#: Texts whose raw estimate is remembered (a request is estimated many times while it is fitted).
CACHE_SIZE = 4096


#: Tokens of the text no byte-level vocabulary merges much, whatever it was trained on — set from
#: SmolLM2's counts (``benchmarks/fit_text_weights.py`` prints them), not fitted, since the corpus has
#: none of it: letters of random-looking runs (base64, hashes in lock files, generated names: 1.65
#: characters a token), CJK and Hangul characters (1.4 tokens each) and characters beyond the Basic
#: Multilingual Plane (emoji: 2.7 tokens each). Larger vocabularies take fewer, the safe side.
ODD_LETTER_TOKENS = 0.6
WIDE_CHAR_TOKENS = 1.4
ASTRAL_CHAR_TOKENS = 2.7
VOWELS = frozenset("aeiouyAEIOUY")


def _odd_run(core: str) -> bool:
    """Whether a run of letters looks random: consonant triples or case flips in a quarter of it."""
    size = len(core)
    if size < 4:
        return False
    odd = 0
    consonants = 0
    upper = core[0].isupper()
    for ch in core:
        consonants = 0 if ch in VOWELS else consonants + 1
        odd += consonants >= 3
        if ch.isupper() != upper:
            upper = not upper
            odd += 1
    # A camelCase name flips twice per hump: allow one flip in four letters before calling it random.
    return 4 * odd >= size + size // 2


def _wide(ch: str) -> float:
    code = ord(ch)
    if code >= 0x10000:
        return ASTRAL_CHAR_TOKENS
    if 0x2E80 <= code <= 0x9FFF or 0xAC00 <= code <= 0xD7AF or 0xF900 <= code <= 0xFAFF:
        return WIDE_CHAR_TOKENS
    return 0.0


def text_features(text: str) -> list[float]:
    """Counts of :data:`FEATURES` in ``text``, then the fixed-weight tokens (odd runs, wide characters)."""
    f = [0.0] * (len(FEATURES) + 1)
    fixed = len(FEATURES)
    for match in PRETOKEN.finditer(text):
        token = match.group()
        core = token.lstrip(" ")
        first = core[:1]
        if first.isascii() and first.isalpha():
            size = len(core)
            if _odd_run(core):
                f[fixed] += ODD_LETTER_TOKENS * size
                continue
            f[0 if size <= 3 else 1 if size <= 7 else 2] += 1
            f[3] += max(0, size - 8)
            if first.isupper() and not core.isupper():
                f[4] += max(0, size - 4)
            f[5] += token == core
            f[6] += sum(1 for ch in core[1:] if ch.isupper())
        elif first.isdigit():
            f[7] += 1
        elif first and not first.isascii():
            widths = [_wide(ch) for ch in core]
            if any(widths):
                f[fixed] += sum(widths)
                core = "".join(ch for ch, width in zip(core, widths, strict=True) if not width)
            f[11] += len(core)
            f[12] += sum(1 for a, b in itertools.pairwise(core) if a == b)
        elif core and not core.isspace():
            f[8] += 1
            f[9] += len(core)
        else:
            f[10] += 1
    return f


def fit_weights(rows: Sequence[Sequence[float]], tokens: Sequence[int], sweeps: int = 3000) -> list[float]:
    """Non-negative weights w minimising the squared *relative* error of ``rows · w`` against ``tokens``.

    ``rows`` are :func:`text_features`: their last column, the fixed-weight tokens, is not fitted.

    Relative, so that a 300-character text counts as much as a 6,000-character one; non-negative, so
    that no feature is worth minus tokens (which would extrapolate badly). Projected coordinate descent
    on the normal equations: a dozen features need no numeric library.
    """
    n = len(FEATURES)
    # The fixed-weight tokens (the last column) are taken off what the fitted weights must explain.
    pairs = [(row, y - row[n]) for row, y in zip(rows, tokens, strict=True) if y - row[n] > 0]
    scaled = [[x / y for x in row[:n]] for row, y in pairs]
    gram = [[sum(r[i] * r[j] for r in scaled) for j in range(n)] for i in range(n)]
    rhs = [sum(r[i] for r in scaled) for i in range(n)]
    w = [0.0] * n
    for _ in range(sweeps):
        for i in range(n):
            if gram[i][i] <= 0:
                continue
            residual = rhs[i] - sum(gram[i][j] * w[j] for j in range(n))
            w[i] = max(0.0, w[i] + residual / gram[i][i])
    return w


class TextTokens:
    """Tokens of a text from its features, times a factor learned from what the server counted.

    ``observe(raw, tokens)``: texts whose raw (uncalibrated) estimate was ``raw`` were counted as
    ``tokens`` by the server. The factor is (all counted + prior) / (all raw + prior), within
    [:data:`MIN_FACTOR`, :data:`MAX_FACTOR`]: a server whose vocabulary is larger than SmolLM2's pulls
    it under 1, a smaller one over.
    """

    def __init__(self, weights: Mapping[str, float] = SMOLLM2_WEIGHTS, prior: float = PRIOR_TOKENS) -> None:
        self.weights = tuple(float(weights[name]) for name in FEATURES)
        self.prior = prior
        self.counted = prior
        self.estimated = prior
        self._cache: dict[str, float] = {}

    @property
    def factor(self) -> float:
        """What the server's tokens were, per token of the features' estimate."""
        if self.estimated <= 0:
            return 1.0
        return min(MAX_FACTOR, max(MIN_FACTOR, self.counted / self.estimated))

    def raw(self, text: str) -> float:
        """The features' estimate of ``text``, before the factor."""
        cached = self._cache.get(text)
        if cached is None:
            cached = self._weigh(text) if len(text) <= SAMPLE_ABOVE else self._weigh_sample(text)
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()
            self._cache[text] = cached
        return cached

    def _weigh(self, text: str) -> float:
        features = text_features(text)
        return features[-1] + sum(w * x for w, x in zip(self.weights, features, strict=False))

    def _weigh_sample(self, text: str) -> float:
        """A long text by evenly spaced pieces of it, scaled up: the cost stays that of 64 KB."""
        step = len(text) // SAMPLE_PIECES
        pieces = [text[i * step : i * step + SAMPLE_PIECE_CHARS] for i in range(SAMPLE_PIECES)]
        return sum(self._weigh(piece) for piece in pieces) * len(text) / sum(len(p) for p in pieces)

    def tokens(self, text: str) -> int:
        """Estimated tokens of ``text`` (rounded up; an empty text is none)."""
        if not text:
            return 0
        return max(1, math.ceil(self.raw(text) * self.factor))

    def observe(self, raw: float, tokens: float) -> None:
        """Texts estimated at ``raw`` (before the factor) were counted as ``tokens`` by the server."""
        if raw <= 0 or tokens <= 0:
            return
        self.estimated += raw
        self.counted += tokens

    def __repr__(self) -> str:
        return f"TextTokens(factor={self.factor:.3f})"
