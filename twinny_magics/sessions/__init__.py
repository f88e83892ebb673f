"""Sessions that outlive the kernel: save, load, export and replay (``Agent.save`` / ``%agent save``).

- ``reading``   `Reader`, the checked reading of JSON a person may have edited; `SessionFileError`
- ``replies``   a reply as JSON and back (shared with saved experiment results); `SavedEdit`
- ``document``  the session document: what is saved, masked; reading it back, each setting by its type
- ``files``     the file: atomic write, bounded read, the default place (``.twinny_sessions/``), each
                autosaved session's own file there, and the newest one (what a new kernel offers)
- ``replay``    a `ScriptedServer` that replays the saved model replies (a `ReplayServer` when a real
                server counts the requests)

Only ``files`` does I/O. Nothing here imports the session (`Agent`), not even for types: an Agent writes
its own record (`SavedSession`, ``Agent.record``) and builds itself from one (``Agent.load``). The
transcript a person reads (``Agent.export``) is the display's: :mod:`twinny_magics.display.transcript`.
"""

from __future__ import annotations

from twinny_magics.sessions.document import FORMAT, VERSION, Restored, SavedServer, SavedSession
from twinny_magics.sessions.reading import SessionFileError
from twinny_magics.sessions.replies import SavedEdit

__all__ = ["FORMAT", "VERSION", "Restored", "SavedEdit", "SavedServer", "SavedSession", "SessionFileError"]
