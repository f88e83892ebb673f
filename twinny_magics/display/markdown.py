"""Model text as inert HTML: Markdown rendered with raw HTML off, then sanitized against an allowlist.

Why not hand the frontend ``text/markdown``: JupyterLab treats output that a cell it just ran produced as
trusted and renders raw HTML inside Markdown unsanitized, so a model (or a prompt-injected file it read)
could write ``<img src=x onerror=…>`` and run JavaScript that drives the kernel over Jupyter's API, or a
Markdown image whose URL carries data out with no click. So the text is rendered here, in two layers:

1. `markdown-it-py <https://markdown-it-py.readthedocs.io>`_ in CommonMark mode with ``html`` off: raw
   HTML in the text comes out as escaped text; links are kept only for ``http``, ``https`` and ``mailto``
   (anything else — ``javascript:``, ``data:``, relative paths — is shown as text); an image is never
   loaded: it is shown as its alt text and its address, as text.
2. `nh3 <https://nh3.readthedocs.io>`_ (the Rust ``ammonia`` sanitizer) with an allowlist of the tags
   Markdown makes, ``rel="noopener noreferrer"`` and ``target="_blank"`` on links, and only
   ``text-align`` in styles — so even a bug in the first layer cannot put a script, an event handler, a
   frame or a remote resource on the page.

What comes out is plain HTML with no scripts, no event handlers and no element that fetches anything.

The same parse also writes Markdown back out (`inert_markdown`, for the Markdown export of a session,
which others render with raw HTML on): the model's formatting, with no image, no raw HTML and no link
but http(s) and mailto; `markdown_text` and `code_span` put plain strings into such a file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token
from markdown_it.tree import SyntaxTreeNode
from markdown_it.utils import EnvType, OptionsDict

from twinny_magics.display.reprs import esc

LINK_SCHEMES = frozenset({"http", "https", "mailto"})

# What CommonMark, tables and strikethrough produce; nothing that loads, runs or frames anything.
TAGS = frozenset(
    {
        "a",
        "blockquote",
        "br",
        "code",
        "del",
        "em",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "li",
        "ol",
        "p",
        "pre",
        "s",
        "span",
        "strong",
        "table",
        "tbody",
        "td",
        "th",
        "thead",
        "tr",
        "ul",
    }
)
ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "th": {"style"},
    "td": {"style"},
    "span": {"style", "title"},
}
STYLE_PROPERTIES = frozenset({"text-align", "color"})
IMAGE_STYLE = "color:#888"


def link_allowed(url: str) -> bool:
    """Whether a link may be clickable: an absolute ``http(s)`` or ``mailto`` address."""
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return False
    return scheme in LINK_SCHEMES


def _image(_renderer: object, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """An image as text: its alt text and its address, never an ``<img>`` (it would load at once)."""
    token = tokens[idx]
    alt = "".join(child.content for child in token.children or []) or "image"
    source = str(token.attrGet("src") or "")
    where = f" — {esc(source)}" if source else ""
    return f'<span style="{IMAGE_STYLE}" title="image not loaded">[image: {esc(alt)}{where}]</span>'


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    # A link that may not be clickable stays what the model wrote, as text (markdown-it then leaves
    # `[text](url)` unparsed), so the user still sees where it pointed.
    md.validateLink = link_allowed  # type: ignore[method-assign]
    md.add_render_rule("image", _image)
    return md


_MD = _parser()


def sanitize(html: str) -> str:
    """HTML reduced to the allowlist (see the module docstring)."""
    return nh3.clean(
        html,
        tags=set(TAGS),
        clean_content_tags={"script", "style"},
        attributes={tag: set(names) for tag, names in ATTRIBUTES.items()},
        url_schemes=set(LINK_SCHEMES),
        link_rel="noopener noreferrer",
        set_tag_attribute_values={"a": {"target": "_blank"}},
        filter_style_properties=set(STYLE_PROPERTIES),
        strip_comments=True,
    )


#: Longer text is shown as plain wrapped text: markdown-it renders ~3 MB/s, but runs of ``[`` or ``![``
#: cost it ~20 µs a character, and a reply re-rendered while it streams should not hold the kernel.
MARKDOWN_MAX_CHARS = 100_000


def markdown_html(text: str) -> str:
    """Model text (Markdown) as sanitized HTML: formatting kept, nothing live (see the module docstring)."""
    if len(text) > MARKDOWN_MAX_CHARS:
        return f'<div style="white-space:pre-wrap">{esc(text)}</div>'
    return sanitize(_MD.render(text))


# -- Markdown out, for a file others render -------------------------------------------------------------
#
# A transcript exported as Markdown is rendered by whatever opens it (GitHub, VS Code, JupyterLab), most
# with raw HTML on and remote images loaded. So model text is not copied into it: it is parsed here (the
# parser above: no raw HTML, links only http(s)/mailto) and written out again from the parse, every
# character of its text escaped that a renderer could take as syntax. What comes out renders as the model's
# formatting (headings, lists, emphasis, code, tables, http(s) and mailto links) and nothing else: an image
# is text (``[image: alt — address]``), raw HTML is text, a code span or fence is longer than any run of
# backticks inside it.

_ENTITY = re.compile(r"&(?:#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)")
# Characters that are syntax wherever they stand (the underscore is handled on its own: see `_escape`).
_SYNTAX = {"\\": "\\\\", "`": "\\`", "*": "\\*", "[": "\\[", "]": "\\]", "<": "&lt;", "|": "\\|", "~": "\\~"}
# A line that starts with one of these, or with a number and '.' or ')', may start a block.
_LINE_START = re.compile(r"[-+=>#]|\d{1,9}[.)]")
_INFO = re.compile(r"[\w+#.-]{1,40}")


def _escape(text: str, *, line_start: bool = False) -> str:
    """``text`` as Markdown that renders as exactly that text, nothing else."""
    out: list[str] = []
    for i, char in enumerate(text):
        if char == "_":
            # Between two letters or digits an underscore cannot open or close emphasis: `read_file`.
            inside = 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()
            out.append("_" if inside else "\\_")
        elif char == "#" and (i == 0 or text[i - 1].isspace()):
            out.append("\\#")  # a heading, or a heading's closing sequence
        elif char == "&" and _ENTITY.match(text, i):
            out.append("\\&")  # `&amp;` is text, not the character it names
        else:
            out.append(_SYNTAX.get(char, char))
    escaped = "".join(out)
    if escaped.endswith("!"):
        escaped = escaped[:-1] + "\\!"  # before a link that follows, '!' would make it an image
    if line_start:
        if escaped[:1].isspace():
            escaped = "&#32;" + escaped[1:]  # an indent would start a code block
        start = _LINE_START.match(escaped)
        if start is not None:
            end = start.end() - 1
            escaped = escaped[:end] + "\\" + escaped[end:]
    return escaped


def markdown_text(text: str) -> str:
    """Plain text (a name, a kind, an error) as Markdown that shows it as it is, on one line."""
    return _escape(" ".join(text.split()), line_start=True)


def markdown_lines(text: str) -> str:
    """Plain text of several lines as Markdown that shows it as it is, line for line (hard breaks)."""
    lines = [_escape(line.strip(), line_start=True) for line in text.strip().splitlines()]
    return "\\\n".join(line for line in lines if line) or "\\(empty\\)"


def code_span(text: str, *, in_table: bool = False) -> str:
    """``text`` as an inline code span: one line, delimited by more backticks than any run inside it."""
    text = " ".join(text.splitlines())
    if in_table:
        text = text.replace("|", "\\|")  # a table's cells split at '|' before code spans are seen
    if not text:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    padded = text.startswith(("`", " ")) or text.endswith(("`", " "))
    if padded and text.strip():
        text = f" {text} "
    return f"{fence}{text}{fence}"


def code_fence(text: str, info: str = "") -> str:
    """``text`` as a fenced code block whose fence is longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    word = _INFO.match(info.strip())
    return f"{fence}{word.group(0) if word else ''}\n{text.rstrip()}\n{fence}"


def _link_address(url: str) -> str:
    # Percent-encoded already (markdown-it normalizes it); what is left that ends or nests an address:
    return "".join(
        "%20" if c == " " else "%3C" if c == "<" else "%3E" if c == ">" else f"\\{c}" if c in "()\\" else c
        for c in url
        if c.isprintable()
    )


class _Writer:
    """Markdown written out again from markdown-it's syntax tree (see the comment above)."""

    def __init__(self) -> None:
        self.in_table = False
        self.in_strike = False

    def blocks(self, nodes: Sequence[SyntaxTreeNode], *, tight: bool = False) -> str:
        parts: list[str] = []
        last_list: tuple[str, str] | None = None
        for node in nodes:
            if node.type in ("bullet_list", "ordered_list"):
                # Two lists in a row are kept apart by changing the marker, as the model must have.
                markers = ("-", "+") if node.type == "bullet_list" else (".", ")")
                marker = markers[1] if last_list == (node.type, markers[0]) else markers[0]
                parts.append(self.list(node, marker))
                last_list = (node.type, marker)
                continue
            last_list = None
            text = self.block(node)
            if text:
                parts.append(text)
        return ("\n" if tight else "\n\n").join(parts)

    def block(self, node: SyntaxTreeNode) -> str:
        kind = node.type
        if kind == "paragraph":
            return self.inline(node.children, line_start=True)
        if kind == "heading":
            level = int(node.tag[1:]) if node.tag[1:].isdigit() else 1
            return "#" * min(max(level, 1), 6) + " " + self.inline(node.children)
        if kind == "blockquote":
            return _prefixed(self.blocks(node.children), "> ", "> ")
        if kind in ("fence", "code_block"):
            return code_fence(node.content, node.info if kind == "fence" else "")
        if kind == "hr":
            return "***"  # '---' after a list item's marker would be a break, not an item
        if kind == "table":
            return self.table(node)
        if kind == "html_block":  # only if raw HTML were parsed: it is text here
            return markdown_lines(node.content)
        return self.blocks(node.children)

    def list(self, node: SyntaxTreeNode, marker: str) -> str:
        ordered = node.type == "ordered_list"
        start = node.attrs.get("start", 1) if ordered else 1
        number = start if isinstance(start, int) and 0 <= start < 10**9 else 1
        items = []
        tight = all(p.hidden for item in node.children for p in item.children if p.type == "paragraph")
        for offset, item in enumerate(node.children):
            head = f"{number + offset}{marker} " if ordered else f"{marker} "
            body = self.blocks(item.children, tight=tight)
            items.append(_prefixed(body, head, " " * len(head)) if body else head.rstrip())
        return ("\n" if tight else "\n\n").join(items)

    def table(self, node: SyntaxTreeNode) -> str:
        rows: list[list[tuple[str, str]]] = []
        for section in node.children:
            for row in section.children:
                cells = []
                for cell in row.children:
                    self.in_table = True
                    try:
                        text = self.inline(cell.children)
                    finally:
                        self.in_table = False
                    cells.append((text or " ", str(cell.attrs.get("style", ""))))
                rows.append(cells)
        if not rows:
            return ""
        aligns = {"text-align:left": ":---", "text-align:center": ":---:", "text-align:right": "---:"}
        header = rows[0]
        lines = ["| " + " | ".join(text for text, _ in header) + " |"]
        lines.append("| " + " | ".join(aligns.get(style, "---") for _, style in header) + " |")
        lines += ["| " + " | ".join(text for text, _ in row) + " |" for row in rows[1:]]
        return "\n".join(lines)

    def inline(self, nodes: Sequence[SyntaxTreeNode], *, line_start: bool = False) -> str:
        flat = [child for node in nodes for child in (node.children if node.type == "inline" else [node])]
        out: list[str] = []
        for node in flat:
            if node.type in ("softbreak", "hardbreak"):
                # Text that starts the new line is escaped as a line's start (`_escape`); no other span
                # can start a block: a code span closes on its line, emphasis has no space after '*'.
                out.append("\\\n" if node.type == "hardbreak" else "\n")
                line_start = True
                continue
            out.append(self.span(node, line_start=line_start))
            line_start = False
        return "".join(out)

    def span(self, node: SyntaxTreeNode, *, line_start: bool = False) -> str:
        kind = node.type
        if kind in ("text", "html_inline"):
            return _escape(node.content, line_start=line_start)
        if kind == "code_inline":
            return code_span(node.content, in_table=self.in_table)
        if kind in ("em", "strong"):
            mark = "*" if kind == "em" else "**"
            inner = self.inline(node.children)
            return f"{mark}{inner}{mark}" if inner else ""
        if kind == "s":
            if self.in_strike:
                return self.inline(node.children)
            self.in_strike = True
            try:
                inner = self.inline(node.children)
            finally:
                self.in_strike = False
            return f"~~{inner}~~" if inner else ""
        if kind == "link":
            href = str(node.attrs.get("href", ""))
            inner = self.inline(node.children) or _escape(href)
            return f"[{inner}]({_link_address(href)})" if link_allowed(href) else inner
        if kind == "image":
            alt = "".join(child.content for child in node.walk() if child.type in ("text", "code_inline"))
            source = str(node.attrs.get("src", ""))
            return _escape(f"[image: {alt or 'image'}" + (f" — {source}]" if source else "]"))
        return self.inline(node.children)


def _prefixed(text: str, first: str, rest: str) -> str:
    """``text`` with ``first`` before its first line and ``rest`` before the others (none on empty ones)."""
    lines = text.split("\n")
    out = [first + lines[0]]
    out += [(rest + line) if line else rest.rstrip() for line in lines[1:]]
    return "\n".join(out)


def inert_markdown(text: str) -> str:
    """Model text (Markdown) as Markdown that any renderer shows as that formatting, with nothing live:
    no image, no raw HTML, links only http(s) and mailto (see the comment above)."""
    if len(text) > MARKDOWN_MAX_CHARS:
        return code_fence(text, "text")
    return _Writer().blocks(SyntaxTreeNode(_MD.parse(text)).children)
