"""What streaming detection costs: a reply fed in 4-character chunks against one parse of the whole.

Run: ``.venv/bin/python benchmarks/bench_streaming.py``. Prints a table and writes
``benchmarks/results_streaming.json``. For 4 KB, 16 KB and 64 KB replies (prose, inline code, a Python
block full of brackets, a ```tool call at the end) it times:

- ``parse``: one ``parse_reply`` of the finished text;
- ``stream``: a ``StreamDetector`` fed 4-character chunks, then ``flush`` and ``finish`` (which parses once);
- ``naive``: what rescanning would cost, ``displayable_length`` of the whole text so far after each chunk;

and counts the characters the streaming scanner examined per character of text. Times are the best of
several runs; ratios are what to read, since absolute numbers depend on the machine.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from twinny_magics.protocol import StreamDetector, displayable_length, parse_reply

CHUNK = 4
SIZES = (4 * 1024, 16 * 1024, 64 * 1024)
RESULTS = Path(__file__).with_name("results_streaming.json")
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {p: {"type": "string"} for p in params}},
        },
    }
    for name, description, params in (
        ("read_file", "Read a file.", ("path",)),
        ("grep", "Search file contents.", ("pattern", "path")),
        ("list_dir", "List a folder.", ("path",)),
    )
]
PROSE = (
    "The loop keeps every request inside the window: it estimates the prompt, trims old results "
    "(`trim_results(messages, plan)`) and asks the server for its context [see budget.py]. "
)
CODE = (
    "```python\n"
    "def fit(messages: list[dict], plan: Plan) -> list[dict]:\n"
    '    sizes = {m["role"]: len(m["content"]) for m in messages}\n'
    "    return [m for m in messages if sizes[m['role']] < plan.limit]  # {braces} <tags> [lists]\n"
    "```\n"
)
CALL = '\n```tool\n{"name": "read_file", "arguments": {"path": "twinny_magics/budget.py"}}\n```\n'


def reply_of(size: int) -> str:
    """A reply of ``size`` characters: paragraphs and code blocks, then one call."""
    unit = PROSE * 3 + "\n\n" + CODE + "\n"
    body = (unit * (size // len(unit) + 1))[: size - len(CALL)]
    return body + CALL


def best_of(runs: int, work: Callable[[], Any]) -> float:
    """The fastest of ``runs`` timings of ``work``, in seconds."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def stream(text: str) -> StreamDetector:
    detector = StreamDetector(TOOLS)
    for i in range(0, len(text), CHUNK):
        detector.feed(text[i : i + CHUNK])
    detector.flush()
    detector.finish()
    return detector


def naive(text: str) -> None:
    for i in range(CHUNK, len(text) + CHUNK, CHUNK):
        displayable_length(text[:i])


def measure(size: int) -> dict[str, Any]:
    text = reply_of(size)
    detector = stream(text)
    assert [c.name for c in detector.finish().calls] == ["read_file"]
    assert detector.shown == len(text) - len(CALL) + 1  # everything before the fence shows
    parse_s = best_of(7, lambda: parse_reply(text, TOOLS))
    stream_s = best_of(5, lambda: stream(text))
    naive_s = best_of(1 if size > 16 * 1024 else 3, lambda: naive(text))
    return {
        "bytes": len(text),
        "chunks": -(-len(text) // CHUNK),
        "parse_ms": round(parse_s * 1000, 3),
        "stream_ms": round(stream_s * 1000, 3),
        "naive_rescan_ms": round(naive_s * 1000, 3),
        "stream_over_parse": round(stream_s / parse_s, 2),
        "naive_over_parse": round(naive_s / parse_s, 1),
        "scanned_per_char": round(detector.scanned / len(text), 3),
    }


def main() -> None:
    rows = [measure(size) for size in SIZES]
    columns = (  # (title, key, format)
        ("reply KB", "bytes", lambda v: f"{v // 1024}"),
        ("chunks", "chunks", str),
        ("parse ms", "parse_ms", lambda v: f"{v:.2f}"),
        ("stream ms", "stream_ms", lambda v: f"{v:.2f}"),
        ("stream/parse", "stream_over_parse", lambda v: f"{v:.2f}"),
        ("naive ms", "naive_rescan_ms", lambda v: f"{v:.1f}"),
        ("naive/parse", "naive_over_parse", lambda v: f"{v:.1f}"),
        ("scanned/char", "scanned_per_char", lambda v: f"{v:.3f}"),
    )
    print(f"Streaming detection, {CHUNK}-character chunks (stream = feed all + flush + one finish parse)")
    print(" ".join(f"{title:>12}" for title, _, _ in columns))
    for row in rows:
        print(" ".join(f"{fmt(row[key]):>12}" for _, key, fmt in columns))
    RESULTS.write_text(
        json.dumps(
            {
                "chunk_chars": CHUNK,
                "python": sys.version.split()[0],
                "machine": platform.machine(),
                "rows": rows,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
