"""Text that cannot drive a terminal or hide part of itself: pure functions over strings.

Two uses, two strengths:

- :func:`inert` is for text written to a terminal (terminal IPython, a command's output given to the
  model). Every escape sequence — 7-bit and 8-bit CSI (colours, cursor moves), OSC (window titles,
  OSC 52 clipboard writes, OSC 8 links) ended by BEL or ST, DCS, SOS, PM and APC strings, two-character
  ``ESC x`` sequences — is removed; every control character left (C0 but newline and tab, DEL, C1) and
  every bidirectional control (U+202E, U+2066…, which reorder what is shown) is made visible as a
  marker such as ``⟨U+202E⟩``. The result has no ESC, no C0 or C1 control but ``\\n`` and ``\\t``, and
  ``inert(inert(t)) == inert(t)``. Other text (emoji with zero-width joiners, any script) is untouched.
- :func:`visible` is for showing exactly what is about to run (a command waiting for approval): nothing
  is removed — an escape sequence is shown character by character — and besides controls and bidi
  controls every invisible character (zero-width spaces and joiners, word joiners, byte-order marks,
  soft hyphens, line and paragraph separators, tag characters, Hangul fillers) is marked too. A literal
  ``⟨`` is marked as well, so that every marker in the result is one.
"""

from __future__ import annotations

import re
import unicodedata

#: A character shown as a marker, e.g. ``⟨U+202E⟩``.
MARK_OPEN, MARK_CLOSE = "⟨", "⟩"

# ECMA-48 escape sequences, in their 7-bit (ESC-introduced) and 8-bit (C1) forms:
#   CSI  ESC [ or U+009B, parameter bytes 0x30-0x3F, intermediate bytes 0x20-0x2F, a final byte 0x40-0x7E
#   OSC, DCS, SOS, PM, APC  (ESC ] P X ^ _ or U+009D 0090 0098 009E 009F) a string ended by ST
#        (ESC \ or U+009C) or, as xterm accepts for OSC, BEL; the string itself holds no control but
#        0x08-0x0D (ECMA-48), so a scan for its end stops at the next introducer (linear time)
#   nF/Fp/Fe/Fs  ESC, intermediate bytes, a final byte 0x30-0x7E (ESC 7, ESC c, ESC ( B, ESC # 8, ...)
# An unterminated string sequence is not matched: its introducer is then a lone control, made visible,
# and the text after it is kept (the model or the reader sees it; nothing can be hidden by swallowing).
_CSI = r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
_STRING = r"(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])[^\x00-\x07\x0e-\x1f\x7f-\x9f]*(?:\x07|\x1b\\|\x9c)"
# (without intermediates, not the final bytes that open a CSI or a string: those stay lone introducers)
_SHORT = r"\x1b(?:[ -/]+[0-~]|[0-OQ-WYZ\\`-~])"
_ESCAPE = re.compile(f"{_CSI}|{_STRING}|{_SHORT}")

# Controls: C0 but tab and newline, DEL, C1.
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f"
# Bidirectional formatting: embeddings and overrides, isolates, marks (Arabic letter mark included).
_BIDI = "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c"
_INERT = re.compile(f"[{_CONTROL}{_BIDI}]")

# Letters that draw nothing (Unicode category Lo, so not caught by the category test below).
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
# What may start an escape sequence: ESC and the C1 introducers.
_INTRODUCER = re.compile("[\x1b\x90-\x9f]")


def strip_escapes(text: str) -> str:
    """``text`` without its terminal escape sequences (a lone or unterminated introducer is kept)."""
    if not _INTRODUCER.search(text):
        return text
    return _ESCAPE.sub("", text)


def marker(char: str) -> str:
    """``⟨U+202E⟩``: how a hidden character is shown."""
    return f"{MARK_OPEN}U+{ord(char):04X}{MARK_CLOSE}"


def inert(text: str) -> str:
    """``text`` safe to write to a terminal: escape sequences removed, controls and bidi made visible.

    ``\\r\\n`` becomes ``\\n``; a lone ``\\r`` (which would let later text overwrite a line) is marked.
    """
    text = strip_escapes(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return mark_controls(text)


def mark_controls(text: str) -> str:
    """``text`` with every control (but ``\n`` and ``\t``) and bidi control shown as a marker.

    The second half of :func:`inert`, for text whose escape sequences are already gone: stripping twice
    would join what the first pass left into new sequences (``ESC`` + ``ESC[0m`` + ``a`` is ``ESC a``).
    """
    return _INERT.sub(lambda match: marker(match.group()), text)


def hidden(char: str) -> bool:
    """Whether ``char`` is a control, formats text invisibly, or draws nothing (tab and newline: no)."""
    if char in "\n\t":
        return False
    if char == MARK_OPEN or char in _BLANK_LETTERS:
        return True
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Co", "Cn", "Cs")


def visible_parts(text: str) -> list[tuple[str, bool]]:
    """``text`` as runs of ``(shown text, is a marker)``: the pieces of :func:`visible`, for styling."""
    parts: list[tuple[str, bool]] = []
    plain: list[str] = []
    for char in text:
        if hidden(char):
            if plain:
                parts.append(("".join(plain), False))
                plain = []
            parts.append((marker(char), True))
        else:
            plain.append(char)
    if plain:
        parts.append(("".join(plain), False))
    return parts


def visible(text: str) -> str:
    """``text`` exactly, with every control, bidi, invisible character and ``⟨`` shown as a marker."""
    if text.isprintable() and MARK_OPEN not in text and not any(c in _BLANK_LETTERS for c in text):
        return text
    return "".join(part for part, _ in visible_parts(text))
