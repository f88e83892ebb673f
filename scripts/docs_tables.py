"""The README's options table, written from the options as they are declared (``twinny_magics.options``).

    .venv/bin/python scripts/docs_tables.py          # rewrite the table in README.md
    .venv/bin/python scripts/docs_tables.py --check  # exit 1 if it is not current

The table sits between two HTML comments in README.md; everything else in the file is left as it is.
``tests/test_docs.py`` checks that it is current, so a new option (one entry in ``OPTIONS``) fails the
test until this has been run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from twinny_magics.options import OPTIONS, Option  # noqa: E402 - after the path is set

README = ROOT / "README.md"
BEGIN = "<!-- options table: written by scripts/docs_tables.py from twinny_magics/options.py -->"
END = "<!-- end of the options table -->"


# A pipe inside a table cell, escaped so that it does not end the cell.
PIPE = "\\|"


def _number(value: float) -> str:
    return f"{value:g}"


def _flag(o: Option) -> str:
    """The flag as written on the ``%%agent`` line, with what it takes."""
    if o.flag is None:
        return "—"
    if o.switch:
        return f"`{o.spelling}`"
    if o.type is bool:
        return f"`{o.spelling} on{PIPE}off`"
    if o.choices:
        return f"`{o.spelling} {PIPE.join(o.choices)}`"
    return f"`{o.spelling} {o.metavar or o.name.upper()}`"


def _default(o: Option) -> str:
    if o.default is None:
        return "unset"
    if o.type is bool:
        return "on" if o.default else "off"
    if isinstance(o.default, (int, float)):
        return _number(o.default)
    return f"`{o.default}`"


def _takes(o: Option) -> str:
    if o.choices:
        return ", ".join(f"`{c}`" for c in o.choices)
    if o.type is bool:
        return "on, off"
    if o.type is list:
        return "patterns"
    if o.type in (int, float):
        what = "a whole number" if o.type is int else "a number"
        if o.least is not None and o.most is not None:
            return f"{what} from {_number(o.least)} to {_number(o.most)}"
        if o.least is not None:
            return f"{what} {'above' if o.above else 'from'} {_number(o.least)}"
        return what
    return "—"


def options_table() -> str:
    """The options as a Markdown table, in the order ``%%agent?`` lists them."""
    rows = [
        "| option | on the `%%agent` line | default | takes | scope | what it does |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for o in OPTIONS:
        # Markdown would read "<session id>" as an HTML tag, and a pipe as the end of the cell.
        what = o.help.replace("&", "&amp;").replace("<", "&lt;").replace("|", PIPE)
        rows.append(f"| `{o.name}` | {_flag(o)} | {_default(o)} | {_takes(o)} | {o.scope} | {what} |")
    return "\n".join(rows)


def with_table(readme: str) -> str:
    """``readme`` with the text between the markers replaced by the current table."""
    if readme.count(BEGIN) != 1 or readme.count(END) != 1:
        raise SystemExit(f"README.md must hold each marker once:\n{BEGIN}\n{END}")
    head, rest = readme.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{options_table()}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="only check that the table is current")
    args = parser.parse_args()
    readme = README.read_text(encoding="utf-8")
    current = with_table(readme)
    if args.check:
        if current != readme:
            print("README.md's options table is not current: run scripts/docs_tables.py", file=sys.stderr)
            return 1
        return 0
    if current != readme:
        README.write_text(current, encoding="utf-8")
        print("Wrote the options table in README.md.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
