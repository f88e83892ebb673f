"""The short forms: ``%%agent compare`` in a notebook and ``python -m twinny_magics.experiment``.

Both read questions one a line, each with the patterns its answer must match after `` :: ``::

    Which port does app.py listen on? :: \\b8000\\b
    What does README.md say to run? :: python app\\.py :: !npm
    Summarise app.py.

A pattern starting with ``!`` must not match (``\\!`` for a pattern that starts with a ``!``); a line
with no pattern is run and its answer recorded, not judged; ``#`` starts a comment line. Variants are
written as Agent options in Python keyword-argument syntax (:func:`~.variants.parse_options`).
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from twinny_magics.experiment.checks import Not, Question
from twinny_magics.experiment.variants import SERVER_OPTIONS, Variant, parse_options
from twinny_magics.options import add_flag, option

if TYPE_CHECKING:
    from twinny_magics.agent import Agent
    from twinny_magics.experiment.progress import Progress
    from twinny_magics.experiment.results import Results

#: `` :: `` between a question and its patterns (``std::vector``, with no spaces, is not one).
_SEPARATOR = re.compile(r"\s::(?:\s|$)")


def parse_questions(text: str, where: str = "the cell") -> list[Question]:
    """Questions one a line: ``question :: pattern :: !pattern``; blank and ``#`` lines are skipped."""
    questions = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        question, *patterns = (part.strip() for part in _SEPARATOR.split(line))
        if not question:
            raise ValueError(f"Line {number} of {where} has patterns but no question.")
        checks: list[str | Not] = []
        for pattern in patterns:
            if not pattern:
                raise ValueError(f"Line {number} of {where} has an empty pattern after ::.")
            if pattern.startswith("!"):
                checks.append(Not(pattern[1:].strip()))
            else:
                checks.append(pattern[1:] if pattern.startswith("\\!") else pattern)
        try:
            questions.append(Question(question, checks or None))
        except (ValueError, TypeError) as error:
            raise ValueError(f"Line {number} of {where}: {error}") from None
    return questions


class _LineParser(argparse.ArgumentParser):
    """A parser for a magic's line: a mistake is a ValueError to show, never an exit of the kernel."""

    def error(self, message: str) -> NoReturn:
        raise ValueError(message)


def _parser(prog: str, magic: bool) -> argparse.ArgumentParser:
    kind = _LineParser if magic else argparse.ArgumentParser
    parser = kind(prog=prog, add_help=not magic)
    if not magic:
        parser.add_argument("questions", help="a file of questions, one a line: question :: pattern")
    parser.add_argument(
        "--a", default="", metavar="OPTIONS", help="variant A, e.g. 'mode=\"text\"' (default: none)"
    )
    parser.add_argument(
        "--b", default="", metavar="OPTIONS", help="variant B, e.g. 'closing_prompt=\"Be brief.\"'"
    )
    if magic:
        parser.add_argument("--questions", metavar="FILE", help="more questions from a file, one a line")
    parser.add_argument("--names", default="A,B", metavar="A,B", help="the two variants' names (default A,B)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N", help="run each question N times")
    parser.add_argument(
        "--seed", type=int, default=0, metavar="S", help="the seed (repetition r sends S + r)"
    )
    parser.add_argument(
        "--temperature", type=float, metavar="T", help="sampling temperature (default 0: greedy)"
    )
    parser.add_argument(
        "--concurrency",
        type=_concurrency,
        default=1,
        metavar="N",
        help="runs at once (default 1; auto: as many as the server has slots)",
    )
    parser.add_argument(
        "--servers",
        type=_servers,
        metavar="URL,URL",
        help="several servers of one model: the runs are spread over them (--concurrency on each)",
    )
    parser.add_argument("--save", metavar="FILE", help="save the results as JSON")
    parser.add_argument("--resume", metavar="FILE", help="keep the runs saved in FILE and run the rest")
    for name in ("server", *SHARED, "workspace"):
        described = {"server": "the model server", "workspace": "the folder each run gets a copy of"}
        add_flag(parser.add_argument, option(name), described=described.get(name))
    if not magic:
        parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    return parser


def _concurrency(text: str) -> int | str:
    """``--concurrency``'s value: a whole number from 1, or ``auto``."""
    if text.strip().lower() == "auto":
        return "auto"
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 6) or int(digits) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of runs at once (1 or more) or auto")
    return int(digits)


def _servers(text: str) -> list[str]:
    """``--servers``' value: addresses, comma-separated."""
    urls = [url.strip() for url in text.split(",") if url.strip()]
    if not urls:
        raise argparse.ArgumentTypeError(f"{text!r}: give server addresses, comma-separated")
    return urls


def parse_line(line: str, prog: str = "%%agent compare") -> argparse.Namespace:
    """The options of a ``%%agent compare`` line (ValueError says what is wrong)."""
    import shlex  # noqa: PLC0415

    try:
        return _parser(prog, magic=True).parse_args(shlex.split(line))
    except (argparse.ArgumentError, ValueError) as error:
        raise ValueError(f"{prog}: {error} (see %agent?)") from None


def inherited() -> tuple[str, ...]:
    """The settings both variants take from an adopted session, read from how each is declared: every
    setting a saved session keeps (``load`` ``taken`` or ``guarded``: how its replies run, what they may do
    and are told), but those the experiment sets itself (``runner.DEFAULTS``: greedy, edits applied to
    each run's copy) and those that say how to reach its server (``variants.SERVER_OPTIONS``, taken from
    the session's server instead). A new setting is inherited, or not, by its declaration."""
    from twinny_magics.experiment.runner import DEFAULTS  # noqa: PLC0415 - the runner loads the session
    from twinny_magics.settings import loaded  # noqa: PLC0415

    own = {*DEFAULTS, *SERVER_OPTIONS}
    return tuple(name for name in loaded("taken") + loaded("guarded") if name not in own)


def base_options(defaults: Mapping[str, Any], session: Agent | None) -> dict[str, Any]:
    """What both variants start from: an adopted session's server and settings (:func:`inherited`), else
    the ``%config`` defaults of the same settings and the server's."""
    from twinny_magics.settings import from_options  # noqa: PLC0415

    if session is None:
        given = from_options(defaults)
        options = {name: given.get(name) for name in SERVER_OPTIONS if name != "server"}
        options.update({name: given[name] for name in inherited() if name in given})
        return {**options, "workspace": given.get("workspace")}
    settings = vars(session.settings)
    options = {name: settings[name] for name in inherited()}
    options["workspace"] = str(session.workspace)
    if session.server is not None:
        options["server"] = session.server
    else:
        options.update({name: settings[name] for name in SERVER_OPTIONS if name != "server"})
    return options


#: Options of the line that every variant shares (given: they override the session's).
SHARED = ("model", "kind", "window", "api_key", "timeout", "mode", "steps", "grammar", "commands")


def compare(
    args: argparse.Namespace,
    questions: list[Question],
    *,
    base: Mapping[str, Any],
    namespace: Mapping[str, Any] | None,
    progress: Progress,
) -> Results:
    """Run the comparison the parsed ``args`` describe: variants A and B over ``questions``."""
    from twinny_magics.experiment.runner import run  # noqa: PLC0415

    if not args.a.strip() and not args.b.strip():
        raise ValueError("Say what to compare: --b 'closing_prompt=\"…\"' (and --a for the other side).")
    if args.questions:
        questions = questions + parse_questions(
            Path(args.questions).read_text(encoding="utf-8"), args.questions
        )
    if not questions:
        raise ValueError("No questions: write one a line (question :: pattern), or give --questions FILE.")
    options = dict(base)
    if args.server:
        options.pop("server", None)
        options["base_url"] = args.server
    if args.servers:  # the fleet replaces the session's server
        options.pop("server", None)
        options.pop("base_url", None)
    given = vars(args)
    options.update({name: given[name] for name in SHARED if given[name] is not None})
    options["temperature"] = args.temperature if args.temperature is not None else 0.0
    names = [name.strip() for name in args.names.split(",")]
    if len(names) != 2 or not all(names) or names[0] == names[1]:
        raise ValueError(f"--names {args.names}: give two different names, e.g. --names default,short.")
    variants = [
        Variant(names[0], **parse_options(args.a, namespace)),
        Variant(names[1], **parse_options(args.b, namespace)),
    ]
    workspace = args.workspace or options.pop("workspace", None) or os.getcwd()
    options.pop("workspace", None)
    return run(
        questions,
        variants,
        workspace=workspace,
        repeat=args.repeat,
        seed=args.seed,
        resume=args.resume,
        save=args.save,
        progress=progress,
        concurrency=args.concurrency,
        servers=args.servers,
        **options,
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m twinny_magics.experiment QUESTIONS --b OPTIONS …``: compare two variants in a terminal."""
    import json  # noqa: PLC0415

    from twinny_magics.display.reprs import plain  # noqa: PLC0415
    from twinny_magics.errors import TwinnyError  # noqa: PLC0415
    from twinny_magics.experiment import report  # noqa: PLC0415

    parser = _parser("python -m twinny_magics.experiment", magic=False)
    args = parser.parse_args(argv)
    try:
        questions = parse_questions(Path(args.questions).read_text(encoding="utf-8"), args.questions)
        args.questions = None  # read: compare() reads --questions only as the magic's extra file
        results = compare(args, questions, base={}, namespace=None, progress="text")
    except (ValueError, TypeError, OSError, TwinnyError) as error:
        parser.error(str(error))
    if args.json:
        print(json.dumps(results.to_json(), indent=1))
    else:
        print(plain(report.results_text(results)))
        if len(results.variants) > 1:
            print()
            print(plain(report.comparison_text(results.compare())))
    return 1 if results.stopped else 0
