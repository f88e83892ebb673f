"""What a cell did, as the model reads it (twinny_magics.cells), and the kernel tools' pieces on a page.

Pure functions: records are built here by hand; the real kernel is in test_kernel_tools.py.
"""

from __future__ import annotations

import base64
import struct
import zlib

from hypothesis import given
from hypothesis import strategies as st

from twinny_magics import cells
from twinny_magics.cells import CellRecord
from twinny_magics.conversation import ToolCall, ToolResult
from twinny_magics.display.items import ApprovalItem, CallItem


def png_header(width: int, height: int) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    body = b"IHDR" + header
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + body + struct.pack(">I", zlib.crc32(body))


def test_outputs_are_named_not_dumped() -> None:
    image = base64.b64encode(png_header(640, 480) + b"\x00" * 5000).decode()
    assert cells.output_name({"image/png": image, "text/plain": "<Figure>"}) == "[image/png 640×480]"
    assert cells.output_name({"image/jpeg": "abc"}) == "[image/jpeg]"
    assert cells.output_name({"image/png": "not base64 at all!"}) == "[image/png]"
    html = "<table>" + "<tr><td>1</td></tr>" * 1000 + "</table>"
    assert cells.output_name({"text/html": html, "text/plain": "df"}) == f"[text/html {len(html):,} chars]"
    assert cells.output_name({"text/plain": "hello\n  world"}) == "hello world"
    assert cells.output_name({"application/vnd.custom+json": {"a": 1}}) == "[application/vnd.custom+json]"


def test_an_error_names_its_line_and_the_users_frames_only() -> None:
    def library() -> None:
        raise KeyError("totl")

    def users() -> None:
        library()

    try:
        users()
    except KeyError as exc:
        error = exc
    here = __file__
    text = cells.error_text(error, lambda name: "cell [7]" if name == here else None)
    lines = text.split("\n")
    assert lines[0] == "KeyError: 'totl'"
    assert any("in users: library()" in line for line in lines)
    assert all(line.startswith(("KeyError", "  cell [7]")) for line in lines)
    # Library frames (here: every frame) are left out when they are not the user's.
    assert cells.error_text(error, lambda name: None) == "KeyError: 'totl'"


def chained(cause: bool) -> BaseException:
    try:
        try:
            {}["a"]
        except KeyError as inner:
            if cause:
                raise ValueError("bad") from inner
            raise ValueError("bad value") from None
    except ValueError as exc:
        return exc
    raise AssertionError("not raised")


def test_a_chained_error_says_what_it_was_raised_while_handling() -> None:
    assert cells.error_text(chained(False), lambda name: None) == "ValueError: bad value"
    assert "(caused by KeyError: 'a')" in cells.error_text(chained(True), lambda name: None)


def test_an_exception_whose_str_raises_is_still_named() -> None:
    class Nasty(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert cells.error_text(Nasty(), lambda name: None) == "Nasty (its message could not be shown)"


def test_a_cell_reads_as_labelled_parts() -> None:
    record = CellRecord(3, "df = load()\ndf", value="[DataFrame 10×2]\n   a  b", printed="loading\n")
    record.printed_chars = 5000
    record.add_output("[image/png 10×10]")
    text = cells.cell_text(record)
    assert text.split("\n")[:3] == ["[3]", "    df = load()", "    df"]
    assert "  printed (5,000 chars, the end shown):" in text
    assert "  outputs: [image/png 10×10]" in text
    assert "  value: [DataFrame 10×2]" in text
    assert cells.cell_text(CellRecord(4, "x = 1")).endswith("  (no output)")
    assert cells.cell_text(record, source=False).startswith("  printed")


def test_outputs_past_the_limit_are_counted() -> None:
    record = CellRecord(1, "for i in range(20): display(i)")
    for i in range(20):
        record.add_output(str(i))
    assert len(record.outputs) == cells.OUTPUTS
    assert f"and {20 - cells.OUTPUTS} more" in cells.cell_text(record)


@given(
    st.lists(
        st.tuples(st.text(max_size=3000), st.text(max_size=2000), st.text(max_size=2000)),
        min_size=1,
        max_size=30,
    ),
    st.integers(min_value=300, max_value=8000),
)
def test_the_history_fits_its_budget_newest_last_oldest_left_out_first(
    parts: list[tuple[str, str, str]], chars: int
) -> None:
    records = [
        CellRecord(
            n, cells.clip(src, cells.SOURCE_CHARS), value=cells.clip(val, cells.VALUE_CHARS), printed=out
        )
        for n, (src, val, out) in enumerate(parts, 1)
    ]
    text = cells.history_text(records, chars)
    assert len(text) <= chars + 120
    assert text.split("\n")[0].startswith(f"{len(records)} cell(s) run in this kernel")
    # The newest cell is always there.
    assert f"[{len(records)}]" in text
    left = len(records) - sum(1 for n in range(1, len(records) + 1) if f"\n[{n}]\n" in text + "\n")
    if left:
        assert f"the {left} oldest left out" in text


def test_no_history_says_what_to_do() -> None:
    assert "No cells have run" in cells.history_text([])


def test_clip_keeps_lines_whole_and_says_what_it_left_out() -> None:
    text = "\n".join(f"line {i}" for i in range(1000))
    head = cells.clip(text, 100)
    assert head.endswith("chars more]")
    assert all(line.startswith(("line", "[…")) for line in head.split("\n"))
    tail = cells.clip(text, 100, tail=True)
    assert tail.startswith("[… ")
    assert tail.endswith("line 999")


def test_agent_cells_are_recognised() -> None:
    assert cells.is_agent_cell("%%agent\nWhy?")
    assert cells.is_agent_cell("  %agent status")
    assert not cells.is_agent_cell("x = '%%agent'")
    assert not cells.is_agent_cell("%%agentx\n")


# -- on the page: the code of a run or a proposed cell is shown exactly and inert -------------------------

HOSTILE = "x = 1  # </pre><script>alert(1)</script>\u202e\nprint('<img src=x onerror=alert(2)>')"


def test_a_kernel_run_shows_its_code_inert_and_exact() -> None:
    call = ToolCall("run_python", {"code": HOSTILE})
    item = CallItem("1.0", call, ToolResult(call, "Ran in the kernel:\n  value: <b>1</b>", 1))
    html = item.html()
    assert "<script>" not in html
    assert "<img" not in html
    assert "&lt;script&gt;" in html
    assert "⟨U+202E⟩" in html
    assert "&lt;b&gt;1&lt;/b&gt;" in html
    assert "    │ x = 1  # </pre><script>alert(1)</script>⟨U+202E⟩" in item.text()


def test_approval_items_say_what_asks() -> None:
    run = ApprovalItem("df.head()", tool="run_python")
    assert run.headline().startswith("run_python asks to run Python in the kernel")
    assert "Run / Don't run" in run.headline()
    cell = ApprovalItem("df = df.dropna()", tool="propose_cell", state="approved")
    assert cell.headline().startswith("propose_cell proposes a new cell")
    assert "to be inserted below when the reply ends (not run)" in cell.headline()
    assert "<script>" not in ApprovalItem(HOSTILE, tool="propose_cell").html()
