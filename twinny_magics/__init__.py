"""twinny_magics: a coding agent for small local models inside Jupyter."""

from __future__ import annotations

__version__ = "0.1.0"
