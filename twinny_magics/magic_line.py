"""What a ``%%agent`` line takes: the options' flags and ``%config`` traits, the help, the subcommands.

All of it is read from the option table (:mod:`.options`); the magic (:mod:`.magic`) decorates its method
with these. IPython and traitlets only, like the magic: loading the extension stays fast.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from IPython.core import magic as _magic
from IPython.core import magic_arguments as _arguments
from IPython.core.error import UsageError
from traitlets import Bool, Enum, Float, Int, List, TraitType, Unicode

from twinny_magics.options import OPTIONS, Option, add_flag, scoped, with_flags

#: The options that make a different session when they change.
SESSION_OPTIONS = tuple(name for name in scoped("session") if name != "secret_files")
#: The options that apply to one cell of the same session (the flags of the magic's line).
TURN_OPTIONS = tuple(o.name for o in with_flags() if o.scope == "turn")
SUBCOMMANDS = ", ".join(
    [
        *("status", "reset", "new", "plan N", "apply [N…]", "discard [N…]", "use NAME", "save [PATH]"),
        *("load PATH [--settings]", "export PATH", "models [FOLDER…]", "pull NAME"),
    ]
)

_F = TypeVar("_F", bound=Callable[..., Any])


class _Decorator(Protocol):
    def __call__(self, func: _F, /) -> _F: ...


# IPython's magic_arguments is untyped, and line_cell_magic is typed for both of its uses at once:
# these are typed views of them.
line_cell_magic = cast("_Decorator", _magic.line_cell_magic)
magic_arguments: Callable[..., _Decorator] = _arguments.magic_arguments
argument: Callable[..., _Decorator] = _arguments.argument
parse_argstring: Callable[[Any, str], Any] = _arguments.parse_argstring


def trait(o: Option) -> TraitType[Any, Any]:
    """The ``%config`` trait of an option."""
    trait: TraitType[Any, Any]
    if o.choices:
        trait = Enum(list(o.choices), o.default, help=o.help)
    elif o.type is list:
        trait = List(Unicode(), default_value=o.default, allow_none=o.nullable, help=o.help)
    else:
        kinds: dict[type, Any] = {str: Unicode, int: Int, float: Float, bool: Bool}
        trait = kinds[o.type](o.default, allow_none=o.nullable, help=o.help)
    return trait.tag(config=True)


def option_flags(func: _F) -> _F:
    """The ``%%agent`` flags of the options that have one, in the table's order."""
    for o in reversed(tuple(with_flags())):
        func = add_flag(argument, o)(func)
    return func


def with_help(func: _F) -> _F:
    """Give the magic its help (what ``%%agent?`` shows), every option named in it."""
    names = ", ".join(o.name for o in OPTIONS)
    listed = textwrap.fill(names, 100)
    func.__doc__ = HELP.replace("{options}", listed)
    return func


#: What ``%%agent?`` shows (``{options}``: every option's name).
HELP = """Ask the coding agent: the cell is the question, the notebook's folder its workspace.

%%agent [options]   the cell below is the question; each cell is a turn of one session.
%agent              the session (an Agent): s = %agent; s.plan; s.estimator.ratio; s.replies
%agent status       server, model, window, plan, ratio, replies, pending edits
%agent reset        forget earlier turns and notes (same server and estimate)
%agent new          a new session
%agent plan N       how an N-token window is shared out
%agent apply [N…]   apply the edits waiting for review (all, or by number in status)
%agent discard [N…] discard them
%agent use NAME     make the Agent in variable NAME the session (e.g. over a ScriptedServer)
%agent save [PATH]  write the session to PATH as JSON (default: .twinny_sessions/<time>.json
                    next to the notebook, a folder the tools never show); never the API key.
                    Sessions also save there by themselves after every reply (--autosave off,
                    %config TwinnyMagics.autosave = False to stop), and a new kernel's first
                    cell says which %agent load resumes the last one
%agent load PATH    resume a saved session: its turns, notes and learned ratio, on the server
                    configured now (else the saved address); its edits are never applied
%agent export PATH  a transcript: PATH.md (Markdown) or PATH.html (the cell's pieces, inert)
%%agent compare --b OPTIONS [--a OPTIONS]   measure a change: the cell's questions, one a line
                    ("Which port? :: 8000", patterns the answer must match; "!pattern" must
                    not), each run under variant A and variant B in a fresh session on a fresh
                    copy of the workspace, greedy and seeded. Shows pass rates, the grid of
                    ✓/✗, what B fixed and broke, and an exact McNemar test; returns the results.
                    OPTIONS are Agent options as Python keyword arguments, values may name the
                    notebook's variables: --b 'closing_prompt=short, mode=text'. Also
                    --questions FILE, --repeat N, --seed S, --temperature T (default 0),
                    --save FILE, --resume FILE, --concurrency N (runs at once; auto: the
                    server's slots), --servers URL,URL (runs spread over several servers of one
                    model), and --server/--model/--kind/--window/--steps/
                    --mode/--grammar/--workspace for both. See twinny_magics.experiment.

Defaults for every option: %config TwinnyMagics.<option> = value, for
{options}
Options on the %%agent line override them for that cell. Changing server, model, kind, workspace,
window or api key starts a new session. The kernel's stop button stops a reply; the session
keeps working.
"""


def load_arguments(rest: list[str]) -> tuple[str, dict[str, str], bool]:
    """``%agent load PATH [--settings] [--server URL] [--model NAME] [--kind KIND]``: the path, the server
    named on the line, and whether the file's guarded settings are to be taken."""
    usage = (
        "%agent load PATH [--settings] [--server URL] [--model NAME] [--kind KIND]: resume a session saved "
        "with %agent save (or Agent.save). --settings also takes its permissions and prompts (listed first)."
    )
    path: str | None = None
    named: dict[str, str] = {}
    settings = False
    words = iter(rest)
    for word in words:
        if word == "--settings":
            settings = True
        elif word in ("--server", "--model", "--kind"):
            value = next(words, None)
            if value is None:
                raise UsageError(usage)
            named[{"--server": "base_url"}.get(word, word[2:])] = value
        elif path is None and not word.startswith("--"):
            path = word
        else:
            raise UsageError(usage)
    if path is None:
        raise UsageError(usage)
    return path, named, settings
