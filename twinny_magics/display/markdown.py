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
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token
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
