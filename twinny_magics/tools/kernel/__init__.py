"""The notebook kernel's tools: the cells run so far, code run as a cell, cells proposed.

Three tools, offered only inside an IPython kernel:

- ``cell_history``: the cells the user ran, newest last — source, value, the tail of what they printed,
  rich outputs named, and an error as its exception line plus the frames in the user's own code
  (`CellLog` watches the shell's ``pre_run_cell``/``post_run_cell`` events from ``%load_ext`` on; cells
  run before it show their value from ``Out`` only). Read-only; ``%%agent`` cells are left out.
- ``run_python``: code run in the user's namespace, as a cell would run it (its names stay defined, the
  last expression is its value), on the kernel's *main* thread — matplotlib and most GUI-bound libraries
  are not thread-safe, and the reply's loop runs on a worker (see ``Agent.run``): the worker hands the
  code to `MAIN`, which the waiting main thread serves. Approved like a command (``kernel=ask``), or run
  (``allow``), or not offered (``off``). Output is captured, never shown raw in the cell: stdout and
  stderr keep a bounded tail, rich outputs are named, figures left open by an inline backend are
  flushed into the capture; the kernel's known secrets are hidden in what the model is told, as in
  ``cell_history``. The time limit escalates (`_Interrupts`): an interrupt of its own to the
  main thread; after a grace for the code's cleanup, an interrupt every quarter second (and, where the
  code took SIGINT away, an exception raised in the main thread); after a second grace the reply stops
  waiting — the model gets an error, the reply a notice that the kernel is still busy with that code,
  and no more code runs until it ends. The kernel's stop button interrupts the code and ends the reply;
  ``raise KeyboardInterrupt`` in the code is only an error. The kernel stays usable after each (after
  the last, once the code ends: an interrupt or a restart).
- ``propose_cell``: a new code cell for the notebook, never run. Inserted below the ``%%agent`` cell when
  that cell ends, by IPython's next-input payload (what ``%load`` uses; JupyterLab and Notebook 7 put
  the text in a new cell below and do not run it) — after the user chose Insert, or at once under
  ``cells=insert``. Where nobody can insert (a terminal, a headless run) it is shown as code to copy.

And two that read the kernel's variables without running the user's program (except under a time bound):
``kernel_variables`` (every variable in a line, `variables`) and ``inspect_variable`` (one up close,
`inspection`).

The modules:

- ``state``        `Kernel`, the tools' state in one shell; `Proposal`, a proposed cell
- ``main_thread``  `MAIN`, the main thread that runs the agent's code while the reply waits
- ``run``          run_python's code run as a cell, under the escalating time limit
- ``variables``    kernel_variables: every variable in a line
- ``inspection``   inspect_variable: one variable up close, by kind
- ``libraries``    pandas, polars and NumPy objects described by their own libraries
- ``rendering``    values as short masked text, built-ins through their own types' methods
- ``bounded``      the user's code run under a time bound, and a value's type named without asking it

What a cell did and the shell's record of cells stay outside, in ``twinny_magics.cells`` (pure) and
``twinny_magics.cell_log`` (installed by ``%load_ext``, which must not import the tools).
"""

from __future__ import annotations

from twinny_magics.tools.kernel.main_thread import MAIN, MainThread
from twinny_magics.tools.kernel.state import CellsMode, Kernel, KernelMode, Proposal

__all__ = ["MAIN", "CellsMode", "Kernel", "KernelMode", "MainThread", "Proposal"]
