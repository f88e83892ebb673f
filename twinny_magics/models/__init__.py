"""Models by name: a small catalog of models measured with this loop, what of it is on disk, and ``pull``.

``catalog()`` lists them; ``on_disk()`` says which are here (in the Hugging Face cache, or shipped, like
the embedded SmolLM2); ``pull(name)`` downloads one with ``huggingface_hub`` into its usual cache,
checked (room first, then the checksum); ``resolve(name_or_path)`` is the GGUF file a ``--model`` value
names, and ``start(name_or_path)`` serves it on the embedded llama.cpp server at the catalog's window.
``magic_models``/``magic_pull`` are what ``%agent models`` and ``%agent pull NAME`` show. The catalog is
pure (``models.catalog``); the hub and the disk are in ``models.hub``. See docs/models.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from twinny_magics._lazy import lazy_names
from twinny_magics.models.catalog import CATALOG, CatalogModel, best, find

if TYPE_CHECKING:
    from twinny_magics.models.hub import (
        OnDisk,
        Pulled,
        best_on_disk,
        for_embedded,
        on_disk,
        pull,
        resolve,
        start,
    )
    from twinny_magics.models.notebook import magic_models, magic_pull

__all__ = [
    "CATALOG",
    "CatalogModel",
    "OnDisk",
    "Pulled",
    "best",
    "best_on_disk",
    "catalog",
    "find",
    "for_embedded",
    "magic_models",
    "magic_pull",
    "on_disk",
    "pull",
    "resolve",
    "start",
]

_LAZY = {
    "OnDisk": "twinny_magics.models.hub",
    "Pulled": "twinny_magics.models.hub",
    "best_on_disk": "twinny_magics.models.hub",
    "for_embedded": "twinny_magics.models.hub",
    "on_disk": "twinny_magics.models.hub",
    "pull": "twinny_magics.models.hub",
    "resolve": "twinny_magics.models.hub",
    "magic_models": "twinny_magics.models.notebook",
    "magic_pull": "twinny_magics.models.notebook",
    "start": "twinny_magics.models.hub",
}

__getattr__: Any = lazy_names(__name__, _LAZY, globals())


def catalog() -> tuple[CatalogModel, ...]:
    """The catalog, best first."""
    return CATALOG
