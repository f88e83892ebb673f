"""``python -m twinny_magics.experiment QUESTIONS --b OPTIONS``: compare two variants from a terminal."""

from __future__ import annotations

from twinny_magics.experiment.cells import main

raise SystemExit(main())
