"""The README and docs/ cannot drift: every example in them runs, every link lands, every list that
repeats the code matches it.

- Every ```` ```python ```` block runs in a fresh namespace, its working folder a fresh copy of a small
  workspace (`WORKSPACE`); a block that needs a model builds its own (a ``ScriptedServer``).
- Every ```` ```ipython ```` block runs cell by cell (cells are separated by a blank line) in a real
  IPython shell with the extension loaded; its ``%%agent`` cells are answered by a scripted model whose
  replies the HTML comment right above the block names: ``<!-- docs-test: scripted ["…"] -->``.
- What cannot run here (a real Ollama, the set-up scripts) is ```` ```text ```` or ```` ```bash ````;
  any other fence is refused, so an example is never skipped by accident.
- Every relative link and anchor, and every repository path named in backquotes, exists.
- The README's options table is the one ``scripts/docs_tables.py`` writes from ``OPTIONS``; the budget
  table is ``plan_context``'s; the servers' ports and windows are ``servers.kinds``'; the deny list's
  names are withheld (or shown) by ``SecretFiles``.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from twinny_magics import Agent, ScriptedServer, plan_context
from twinny_magics.servers.kinds import (
    DEFAULT_PORTS,
    HOSTED_WINDOW,
    KINDS,
    LOCAL_UNKNOWN_WINDOW,
    NEVER_ASKED,
    SMALL_WINDOW,
)
from twinny_magics.tools.denied import SecretFiles

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 250
PICTURE_MAX_BYTES = 200_000

#: The small workspace every example runs in (a fresh copy each): what the examples' questions are about.
WORKSPACE = {
    "app.py": 'from http.server import HTTPServer\nPORT = 8000\nserver = HTTPServer(("", PORT), None)\n',
    "shop/server.js": (
        'const http = require("http");\n'
        "const port = 8000;\n"
        'http.createServer((req, res) => res.end("hello")).listen(port);\n'
    ),
    "shop/README.md": "# corner shop\n\nStart it with `node server.js`, then open http://localhost:8000/.\n",
}

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<ticks>`{3,})(?P<lang>[\w-]*)[^\n`]*$")
DIRECTIVE = re.compile(r"^<!-- docs-test: (?P<what>.*?) -->$", re.DOTALL)
RUNNABLE = {"python", "ipython"}
NOT_RUN = {"text", "bash"}


@dataclass(frozen=True)
class Block:
    """One fenced block of a document: where it is, its language, its text, the directive above it."""

    path: Path
    line: int
    lang: str
    code: str
    directive: str | None

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        ticks = opening["ticks"]
        end = i + 1
        while end < len(lines) and not re.match(rf"^ {{0,3}}{ticks}`*\s*$", lines[end]):
            end += 1
        before = i - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        directive = DIRECTIVE.match(lines[before].strip()) if before >= 0 else None
        code = "\n".join(lines[i + 1 : end]) + "\n"
        found.append(Block(path, i + 1, opening["lang"], code, directive["what"] if directive else None))
        i = end + 1
    return found


ALL_BLOCKS = [block for path in DOCS for block in blocks(path)]


def runnable(lang: str) -> list[Any]:
    return [pytest.param(b, id=b.name) for b in ALL_BLOCKS if b.lang == lang]


def scripted_replies(block: Block) -> list[str]:
    """The replies the directive above ``block`` queues for its scripted model."""
    if block.directive is None or not block.directive.startswith("scripted "):
        raise AssertionError(
            f"{block.name}: a %%agent example needs the replies of its scripted model named above it: "
            '<!-- docs-test: scripted ["…"] -->'
        )
    replies = json.loads(block.directive.removeprefix("scripted "))
    assert isinstance(replies, list), block.name
    assert all(isinstance(r, str) for r in replies), block.name
    return replies


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "workspace"
    for name, text in WORKSPACE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def shell(workspace: Path) -> Iterator[InteractiveShell]:
    ip = start_ipython() or InteractiveShell.instance()
    ip.config.pop("TwinnyMagics", None)
    yield ip
    if "twinny_magics" in ip.extension_manager.loaded:
        ip.extension_manager.unload_extension("twinny_magics")
    ip.config.pop("TwinnyMagics", None)


# --- the examples --------------------------------------------------------------------------------------


def test_every_fenced_block_is_run_here_or_says_it_cannot_be() -> None:
    """A block in another language would be skipped without anyone noticing."""
    assert ALL_BLOCKS
    odd = [f"{b.name} ```{b.lang}" for b in ALL_BLOCKS if b.lang not in RUNNABLE | NOT_RUN]
    assert not odd, f"write each as python or ipython (run) or text or bash (not run): {odd}"


def test_only_ipython_examples_take_a_scripted_model_from_a_comment() -> None:
    """A Python example builds its scripted model in its own code, where a reader sees it."""
    wrong = [b.name for b in ALL_BLOCKS if b.lang != "ipython" and (b.directive or "").startswith("scripted")]
    assert not wrong


@pytest.mark.parametrize("block", runnable("python"))
def test_the_python_example_runs(block: Block, workspace: Path) -> None:
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    with capture_output():
        exec(compile(block.code, block.name, "exec"), namespace)


@pytest.mark.parametrize("block", runnable("ipython"))
def test_the_ipython_example_runs_cell_by_cell(block: Block, shell: InteractiveShell) -> None:
    replies = scripted_replies(block) if "%%agent" in block.code else []
    cells = [cell for cell in re.split(r"\n\s*\n", block.code.strip()) if cell.strip()]

    def answer_from_a_script() -> None:
        magics = shell.magics_manager.registry["TwinnyMagics"]
        magics.output = "text"
        magics.session_factory = lambda **options: Agent(server=ScriptedServer(list(replies)), **options)

    if cells[0].strip() != "%load_ext twinny_magics":
        shell.extension_manager.load_extension("twinny_magics")
    for cell in cells:
        if "TwinnyMagics" in shell.magics_manager.registry:
            answer_from_a_script()
        with capture_output() as shown:
            result = shell.run_cell(cell)
        assert result.success, f"{block.name}: {cell!r} failed:\n{shown.stdout}\n{shown.stderr}"
        if cell.startswith("%%agent"):
            assert replies[0] in shown.stdout, shown.stdout  # the scripted answer, shown in the cell


# --- links and paths -----------------------------------------------------------------------------------

INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)\)")
REPO_PATH = re.compile(r"^(?:twinny_magics|tests|benchmarks|scripts|notebooks|docs|requirements)/[\w./*-]*$")


def prose(path: Path) -> str:
    """A document without its fenced blocks."""
    kept, fence = [], None
    for line in path.read_text(encoding="utf-8").splitlines():
        opening = FENCE.match(line)
        if fence is None and opening is not None:
            fence = opening["ticks"]
        elif fence is not None and re.match(rf"^ {{0,3}}{fence}`*\s*$", line):
            fence = None
        elif fence is None:
            kept.append(line)
    return "\n".join(kept)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = INLINE_CODE.sub(lambda m: m.group(2), heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in prose(path).splitlines():
        if match := re.match(r"^#{1,6} (.+?)#*\s*$", line):
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_lands_on_a_file_and_an_anchor(path: Path) -> None:
    text = INLINE_CODE.sub("", prose(path))
    broken = []
    for match in LINK.finditer(text):
        target = match["target"]
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: not this repository's
        file, _, anchor = target.partition("#")
        goal = (path.parent / file).resolve() if file else path
        if not goal.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (goal.suffix != ".md" or anchor not in anchors(goal)):
            broken.append(f"{target}: no heading #{anchor} in {goal.name}")
    assert not broken, f"{path.name}: {broken}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_named_in_backquotes_exists(path: Path) -> None:
    named = {m.group(2).strip() for m in INLINE_CODE.finditer(prose(path))}
    missing = [
        name
        for name in sorted(named)
        if REPO_PATH.match(name) and not (list(ROOT.glob(name)) if "*" in name else (ROOT / name).exists())
    ]
    assert not missing, f"{path.name} names paths that are not in the repository: {missing}"


# --- the README ----------------------------------------------------------------------------------------


def test_the_readme_is_a_front_door_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    for command in ("bash scripts/demo.sh", "bash scripts/test.sh"):
        assert f"```bash\n{command}\n```" in readme
        assert (ROOT / command.split()[1]).is_file()
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_the_picture_of_a_first_cell_is_a_small_png() -> None:
    picture = ROOT / "docs" / "first-agent-cell.png"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert picture.stat().st_size < PICTURE_MAX_BYTES
    assert "(docs/first-agent-cell.png)" in (ROOT / "README.md").read_text(encoding="utf-8")


def docs_tables() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_tables", ROOT / "scripts" / "docs_tables.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_options_table_is_the_one_written_from_the_declared_options() -> None:
    tables = docs_tables()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert tables.with_table(readme) == readme, "run: .venv/bin/python scripts/docs_tables.py"
    from twinny_magics.options import OPTIONS

    table = readme.split(tables.BEGIN)[1].split(tables.END)[0]
    assert [line.split("`")[1] for line in table.strip().splitlines()[2:]] == [o.name for o in OPTIONS]


# --- lists that repeat the code ------------------------------------------------------------------------


def table_rows(text: str, header: str) -> list[list[str]]:
    """The cells of the Markdown table whose header line starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def whole(number: str) -> int:
    return int(number.replace(",", ""))


def test_the_budget_table_is_what_plan_context_makes() -> None:
    rows = table_rows((ROOT / "docs" / "budget.md").read_text(encoding="utf-8"), "| window | reply |")
    assert len(rows) == 5
    for window, reply, limit, target, result_chars, notes_chars in rows:
        plan = plan_context(whole(window))
        written = (whole(reply), whole(limit), whole(target), whole(result_chars), whole(notes_chars))
        assert written == (plan.reply, plan.limit, plan.target, plan.result_chars, plan.notes_chars)


def test_the_servers_page_says_the_ports_and_windows_the_code_uses() -> None:
    text = (ROOT / "docs" / "servers.md").read_text(encoding="utf-8")
    rows = table_rows(text, "| kind | asked | read |")
    for kind, _, read in rows:
        if port := re.search(r"\((?:port )?(\d+)\)", kind):
            assert DEFAULT_PORTS[int(port.group(1))] == kind.split("`")[1]
        if read == f"{HOSTED_WINDOW:,}":
            assert set(re.findall(r"`(\w+)`", kind)) == set(NEVER_ASKED)
    assert any(read == f"{HOSTED_WINDOW:,}" for _, _, read in rows)
    assert f"A local server that will not say counts as {LOCAL_UNKNOWN_WINDOW:,}." in text
    assert f"Under {SMALL_WINDOW:,} tokens the reply starts with a warning" in text
    notebook = (ROOT / "docs" / "notebook.md").read_text(encoding="utf-8")
    kinds = re.search(r"`--kind` \((.*?)\)", notebook, re.DOTALL)
    assert kinds is not None
    assert re.findall(r"`(\w+)`", kinds.group(1)) == list(KINDS)


def deny_list_names(paragraph: str) -> tuple[list[str], list[str]]:
    """The names the paragraph says are withheld, and those it says stay visible.

    A name inside parentheses that open with "not", or that follow an "except", is one that stays
    visible; every other name in backquotes is withheld.
    """
    withheld: list[str] = []
    visible: list[str] = []
    in_visible: set[int] = set()
    for group in re.finditer(r"\(([^()]*)\)", paragraph):
        before = paragraph[max(0, group.start() - 60) : group.start()]
        if group.group(1).lstrip().startswith("not ") or "except" in before:
            visible += exceptions(group.group(1))
            in_visible.update(range(group.start(), group.end()))
    for match in re.finditer(r"`([^`]+)`", paragraph):
        if match.start() not in in_visible:
            withheld.append(match.group(1))
    return withheld, visible


def exceptions(group: str) -> list[str]:
    """The names of a "(not …)" group; a bare suffix after the first name is read after its stem:
    "(not `.env.example`, `.sample`)" names `.env.example` and `.env.sample`."""
    names: list[str] = re.findall(r"`([^`]+)`", group)
    first = names[0] if names else ""
    stem = first.rsplit(".", 1)[0]
    return [stem + n if n != first and n.startswith(".") and n.count(".") == 1 else n for n in names]


def example_path(name: str) -> tuple[str, bool]:
    """A path the pattern ``name`` covers, and whether it is a folder."""
    name = name.rstrip("…")
    if name.endswith("/"):
        return name.rstrip("/"), True
    return name.replace("*", "x"), False


def test_the_deny_list_the_security_page_names_is_the_code_s() -> None:
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    match = re.search(r"likely secrets:(.*?)\(full list: `twinny_magics/tools/denied\.py`\)", text, re.DOTALL)
    assert match is not None, "the deny list's names go between 'likely secrets:' and '(full list: …)'"
    withheld, visible = deny_list_names(match.group(1))
    assert len(withheld) > 20
    assert visible
    secrets = SecretFiles()
    shown = []
    for name in withheld:
        path, is_dir = example_path(name)
        if secrets.match(path, is_dir=is_dir) is None:
            shown.append(name)
    hidden = [name for name in visible if secrets.match(name, is_dir=False) is not None]
    assert not shown, f"the page says these are withheld, the deny list shows them: {shown}"
    assert not hidden, f"the page says these stay visible, the deny list withholds them: {hidden}"
