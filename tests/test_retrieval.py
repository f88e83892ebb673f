"""retrieval: a question's words, where files are cut into chunks, and the map, the search results and
the head start written within their character budgets."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from twinny_magics.outline import Definition
from twinny_magics.retrieval import (
    CHUNK_LINES,
    HEAD_START_INTRO,
    MAP_LEAD,
    MAX_TERMS,
    MIN_CHUNK_LINES,
    SEARCH_LEAD,
    STOPWORDS,
    Chunk,
    FileInfo,
    Survey,
    chunk_bounds,
    file_score,
    head_start_text,
    identifier_parts,
    index_words,
    match_query,
    path_words,
    query_terms,
    render_chunks,
    render_map,
    search_text,
    size_text,
)

# -- words ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        ("Where is merge_with defined?", ["merge_with", "merge"]),
        ("what does groupBy return", ["groupby", "group"]),
        ("What is MAX_SIZE?", ["max_size", "max", "size"]),
        ("what does the parser do with parse_args", ["parse_args", "parser", "parse", "args"]),
        ("HTTPServer on port 8080", ["httpserver", "8080", "http", "server", "port"]),
        ("Which file has the list_files function?", ["list_files"]),  # its parts are question words
        ("where is FILE defined", ["file"]),  # a question word written as code is a name
    ],
)
def test_query_terms_names_whole_and_split_names_first(question: str, terms: list[str]) -> None:
    assert query_terms(question) == terms


@pytest.mark.parametrize(
    "question",
    [
        "",
        "   ",
        "\U0001f642\U0001f642 \U0001f389",
        "?!... --- ***",
        "what is the file?",
        "Where is it defined? Which is it, and how many?",
        "a b c x y",  # one-letter words say nothing
    ],
)
def test_query_terms_of_a_question_with_nothing_to_search_is_empty(question: str) -> None:
    assert query_terms(question) == []


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("Что делает функция сортировки", ["что", "делает", "функция", "сортировки"]),
        ("关于 数据 的 函数", ["关于", "数据", "函数"]),  # one character is too short, as in English
        ("データを読み込む関数はどこ", ["データを読み込む関数はどこ"]),
        ("Welche Funktion berechnet die Summe", ["welche", "funktion", "berechnet", "die", "summe"]),
    ],
)
def test_query_terms_keeps_words_of_other_languages(question: str, words: list[str]) -> None:
    assert query_terms(question) == words


def test_query_terms_do_not_cut_accented_words_into_fragments() -> None:
    assert query_terms("Welche Funktion berechnet die Größe?") == [
        "welche",
        "funktion",
        "berechnet",
        "die",
        "größe",
    ]
    assert identifier_parts("naïve") == ["naïve"]


def test_query_terms_are_capped_and_never_repeat() -> None:
    many = " ".join(f"name_{i} name_{i}" for i in range(100))
    terms = query_terms(many)
    assert len(terms) == MAX_TERMS
    assert len(set(terms)) == len(terms)
    assert query_terms("merge merge Merge MERGE merge_with merge") == ["merge", "merge_with"]


@given(st.text(max_size=300))
def test_query_terms_are_lower_case_words_without_stopwords(question: str) -> None:
    terms = query_terms(question)
    assert len(terms) <= MAX_TERMS
    assert len(set(terms)) == len(terms)
    for term in terms:
        assert re.fullmatch(r"\w+", term), term
        assert term == term.lower()
        assert len(term) > 1 or term.isdigit()
    # The FTS5 expression quotes every term: no word is ever read as an operator.
    assert match_query(terms).count('"') == 2 * len(terms) + 2 * sum(t.count('"') for t in terms)


def test_stopwords_are_lower_case_single_words() -> None:
    assert all(w == w.lower() and w.isalpha() for w in STOPWORDS)
    assert {"what", "where", "file", "function"} <= STOPWORDS


def test_identifier_parts_and_index_words() -> None:
    assert identifier_parts("merge_with") == ["merge_with", "merge", "with"]
    assert identifier_parts("groupBy") == ["groupby", "group", "by"]
    assert identifier_parts("HTTPServer") == ["httpserver", "http", "server"]
    assert identifier_parts("parse2") == ["parse2", "parse", "2"]
    assert identifier_parts("plain") == ["plain"]
    assert identifier_parts("X") == ["x"]
    assert (
        index_words("mergeWith(a); HTTPServer x_1") == "mergewith merge with a httpserver http server x_1 x 1"
    )
    assert path_words("toolz/itertoolz-extra.py") == "toolz itertoolz extra py"
    assert match_query(['say "hi"', "OR"]) == '"say ""hi""" OR "OR"'


def test_size_text() -> None:
    assert size_text(812) == "812 B"
    assert size_text(9_626) == "9.4 KB"
    assert size_text(27 * 1024) == "27 KB"
    assert size_text(3 * 1024 * 1024 // 2) == "1.5 MB"
    assert size_text(27 * 1024 * 1024) == "27 MB"


# -- chunks -----------------------------------------------------------------------------------------------


@given(
    lines=st.integers(0, 400),
    starts=st.sets(st.integers(-5, 420), max_size=60),
    blank=st.lists(st.booleans(), max_size=420),
)
def test_chunk_bounds_cover_every_line_once_within_the_limit(
    lines: int, starts: set[int], blank: list[bool]
) -> None:
    chunks = chunk_bounds(lines, starts, blank)
    covered = [n for first, last in chunks for n in range(first, last + 1)]
    assert covered == list(range(1, lines + 1))
    for first, last in chunks:
        assert 1 <= first <= last <= lines
        assert last - first + 1 <= CHUNK_LINES
    firsts = [first for first, _ in chunks]
    # A definition starts a chunk unless the chunk it falls in is still under MIN_CHUNK_LINES long.
    for start in starts:
        if 1 <= start <= lines and start not in firsts:
            first = max(f for f in firsts if f <= start)
            assert start - first < MIN_CHUNK_LINES


@given(lines=st.integers(0, 400), blank=st.lists(st.booleans(), max_size=420))
def test_chunk_bounds_without_definitions_end_at_blank_lines(lines: int, blank: list[bool]) -> None:
    chunks = chunk_bounds(lines, [], blank)
    for first, last in chunks[:-1]:
        size = last - first + 1
        assert size == CHUNK_LINES or (size >= CHUNK_LINES // 2 and blank[last - 1])


def test_chunk_bounds_examples() -> None:
    assert chunk_bounds(0, []) == []
    assert chunk_bounds(1, []) == [(1, 1)]
    assert chunk_bounds(100, []) == [(1, 40), (41, 80), (81, 100)]
    assert chunk_bounds(50, [1, 10, 12, 30]) == [(1, 9), (10, 29), (30, 50)]


# -- the map ----------------------------------------------------------------------------------------------

_NAME = st.text("abcdefgh_XY", min_size=1, max_size=20)
_DEFINITION = st.builds(
    Definition,
    st.sampled_from(["def", "class", "const", "#"]),
    _NAME,
    st.integers(1, 5000),
    st.lists(_NAME, max_size=12).map(tuple),
)


def _survey(folders: st.SearchStrategy[str], notes: bool) -> st.SearchStrategy[Survey]:
    info = st.builds(
        lambda folder, name, size, definitions: FileInfo(f"{folder}{name}.py", size, tuple(definitions)),
        folders,
        _NAME,
        st.integers(0, 10**9),
        st.lists(_DEFINITION, max_size=30),
    )
    return st.builds(
        lambda files, truncated, pending: Survey(
            list({f.path: f for f in files}.values()), truncated, pending
        ),
        st.lists(info, max_size=80),
        st.booleans() if notes else st.just(False),
        st.integers(0, 10**6) if notes else st.just(0),
    )


@given(
    survey=_survey(st.text("abcdefghij/", max_size=40).map(lambda f: f.strip("/") + "/"), notes=True),
    terms=st.lists(_NAME, max_size=5),
    chars=st.integers(0, 20_000),
)
def test_render_map_stays_within_its_budget(survey: Survey, terms: list[str], chars: int) -> None:
    """Whatever the survey (many folders, a truncated walk, files pending) and the budget."""
    text = render_map(survey, terms, chars)
    assert len(text) <= chars
    shown = {line.split(" ", 1)[0] for line in text.splitlines()[1:] if not line.startswith(("[", "("))}
    assert shown <= {f.path.split(" ", 1)[0] for f in survey.files}


@given(
    survey=_survey(st.sampled_from(["", "src/", "docs/", "src/pkg/"]), notes=True),
    terms=st.lists(_NAME, max_size=5),
    chars=st.integers(500, 20_000),  # room for the lead and every note
)
def test_render_map_starts_with_its_lead(survey: Survey, terms: list[str], chars: int) -> None:
    assert render_map(survey, terms, chars).startswith(MAP_LEAD)


def test_render_map_is_empty_when_not_even_its_lead_fits() -> None:
    survey = Survey([FileInfo("a.py", 10)])
    assert render_map(survey, [], 0) == ""
    assert render_map(survey, [], len(MAP_LEAD)) == ""
    assert render_map(Survey(), [], len(MAP_LEAD) + 12) == MAP_LEAD + "\n(no files)"


@pytest.mark.parametrize("chars", [110, 130])
def test_render_map_never_drops_its_lead_for_the_left_out_note(chars: int) -> None:
    survey = Survey([FileInfo(f"src/m{i}.py", 100, (Definition("def", "f", 1),)) for i in range(5)])
    text = render_map(survey, ["f"], chars)
    assert text == "" or text.startswith(MAP_LEAD), text


def _many_folders() -> Survey:
    return Survey(
        [
            FileInfo(f"package_{i % 40}/module/file_{i}.py", 1000 + i, (Definition("def", f"func_{i}", 3),))
            for i in range(400)
        ],
        truncated=True,
        pending=12,
    )


@pytest.mark.parametrize("chars", [600, 1500, 4000, 16_000])
def test_render_map_with_many_folders_and_notes_stays_within_its_budget(chars: int) -> None:
    text = render_map(_many_folders(), ["func_3"], chars)
    assert len(text) <= chars
    assert text.startswith(MAP_LEAD)
    assert "[Not shown, by folder: " in text
    assert text.endswith("[12 files not indexed yet (definitions and search come later).]")
    assert "more files than the map looks at" in text


def _workspace_files() -> list[FileInfo]:
    files = [
        FileInfo(
            f"src/pkg_{i % 7}/module_{i}.py",
            2000 + i,
            tuple(Definition("def", f"helper_{i}_{j}", 1 + 10 * j) for j in range(6)),
        )
        for i in range(150)
    ]
    files.append(
        FileInfo(
            "src/pkg_3/deep/merging.py",
            4321,
            (
                Definition("def", "unrelated", 3),
                Definition("class", "Merger", 20, ("run", "merge_with")),
                Definition("def", "merge_with", 80),
            ),
        )
    )
    files += [FileInfo(f"docs/page_{i}.md", 500) for i in range(30)]
    return files


def test_render_map_ranks_the_file_defining_the_questions_name_first() -> None:
    survey = Survey(_workspace_files())
    terms = query_terms("Where is merge_with defined?")
    text = render_map(survey, terms, 600)
    assert len(text) <= 600
    line = next(line for line in text.splitlines() if line.startswith("src/pkg_3/deep/merging.py"))
    assert "def merge_with 80" in line
    assert "class Merger 20 (merge_with, run)" in line  # the member asked about comes first
    # The definitions are listed by line; the files best first, so the defining file is the first row.
    assert line.index("Merger") < line.index("def merge_with")
    assert text.splitlines()[1] == line
    # Without the name, the file is no better than its neighbours and may be left out of a small map.
    assert "merging.py" not in render_map(survey, ["nothing_like_it"], 600)


def test_file_score_orders_definition_then_path_then_nothing() -> None:
    terms = ["merge_with", "merge", "toolz"]
    defines = FileInfo("a/b/c.py", 10, (Definition("def", "merge_with", 1),))
    member = FileInfo("a/b/d.py", 10, (Definition("class", "C", 1, ("merge_with",)),))
    in_path = FileInfo("toolz/x.py", 10)
    nothing = FileInfo("x.py", 10, (Definition("def", "other", 1),))
    bare = FileInfo("y.txt", 10)
    deep = FileInfo("a/b/c/d/y.txt", 10)
    assert file_score(defines, terms) == file_score(member, terms)  # a member's name counts as a name
    scores = [file_score(f, terms) for f in (defines, in_path, nothing, bare, deep)]
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores)) == len(scores)


def test_render_map_says_what_it_left_out_by_folder() -> None:
    survey = Survey(_workspace_files(), truncated=True, pending=3)
    text = render_map(survey, ["merge_with"], 800)
    lines = text.splitlines()
    shown = {line.split(" ", 1)[0] for line in lines[1:] if not line.startswith("[")}
    note = next(line for line in lines if line.startswith("[Not shown, by folder: "))
    counts = dict(re.findall(r"([\w./]+): (\d+)", note.removeprefix("[Not shown, by folder: ")))
    for folder in {f.path.rsplit("/", 1)[0] for f in survey.files}:
        left = sum(1 for f in survey.files if f.path.rsplit("/", 1)[0] == folder and f.path not in shown)
        if left:
            assert counts[folder] == str(left), folder
    assert int(counts["docs"]) == 30 - sum(1 for p in shown if p.startswith("docs/"))
    assert "list_dir lists a folder" in note
    assert "[The workspace has more files than the map looks at" in text
    assert "[3 files not indexed yet" in text


def test_render_map_of_nothing_and_of_a_large_budget() -> None:
    assert render_map(Survey(), ["x"], 1000) == MAP_LEAD + "\n(no files)"
    survey = Survey(_workspace_files())
    text = render_map(survey, [], 1_000_000)
    assert "Not shown" not in text
    assert len(text.splitlines()) == 1 + len(survey.files)
    assert "docs/page_0.md 500 B" in text.splitlines()


# -- search results and the head start ------------------------------------------------------------------

_CHUNK = st.builds(
    lambda path, start, lines, names: Chunk(path, start, start + len(lines) - 1, tuple(lines), tuple(names)),
    st.text("abc/._-", min_size=1, max_size=60),
    st.integers(1, 10_000),
    st.lists(st.text(max_size=300), min_size=1, max_size=60),
    st.lists(st.text("abcxyz_", min_size=1, max_size=30), max_size=6),
)


@given(chunks=st.lists(_CHUNK, max_size=6), chars=st.integers(0, 8000))
def test_render_chunks_stays_within_its_budget(chunks: list[Chunk], chars: int) -> None:
    text = render_chunks(chunks, chars)
    assert len(text) <= chars
    for line in text.splitlines():
        assert len(line) <= 200 + 2 + 8 + 400  # a line cut at 200 and its number, or a heading or note
    if text:
        assert any(text.startswith(f"{c.path}") and text.split("\n", 1)[0].endswith(":") for c in chunks)


def test_render_chunks_with_a_long_path_stays_within_its_budget() -> None:
    path = "src/twinny_magics/tools/workspace_helpers.py"
    chunk = Chunk(path, 100, 139, tuple(f"line {i} " + "x" * 60 for i in range(40)))
    for chars in range(0, 1200, 7):
        text = render_chunks([chunk], chars)
        assert len(text) <= chars, chars
        if text and "reads on" in text:
            number = int(text.rsplit('"start_line": ', 1)[1].split("}", 1)[0])
            assert f"{number - 1}: line {number - 101} " in text  # reads on from the first line not shown


def test_render_chunks_numbers_lines_and_says_how_to_read_on() -> None:
    chunk = Chunk("a.py", 8, 12, ("def f():", "    return 1", "", "x = 2", "y" * 500), ("f",))
    text = render_chunks([chunk], 10_000)
    assert text.splitlines() == [
        "a.py (f):",
        " 8: def f():",
        " 9:     return 1",
        "10: ",
        "11: x = 2",
        "12: " + "y" * 200 + " …",
    ]
    cut = render_chunks([chunk], 200)
    assert cut.splitlines()[-1] == (
        "[… a.py goes on: read_file with start_line at the next line's number reads it.]"
    )
    # No number but the lines' own: a small model took a hint's start_line for the answer.
    lines = cut.splitlines()
    assert not re.search(r"\d", lines[0] + lines[-1])
    assert render_chunks([], 1000) == ""


def test_render_chunks_leaves_out_a_chunk_with_no_room() -> None:
    chunks = [Chunk(f"f{i}.py", 1, 3, ("a", "b", "c")) for i in range(20)]
    text = render_chunks(chunks, 400)
    assert len(text) <= 400
    assert "f0.py" in text
    assert "f19.py" not in text


def test_head_start_text_marks_itself_and_stays_within_budget() -> None:
    survey = Survey(_workspace_files()[-35:])  # merging.py, a few modules and the docs: 3 folders
    chunks = [
        Chunk(
            "src/pkg_3/deep/merging.py", 80, 90, tuple(f"    line {i}" for i in range(11)), ("merge_with",)
        ),
        Chunk("docs/page_1.md", 1, 3, ("# Page", "", "merge_with is used here")),
    ]
    terms = ["merge_with", "merge"]
    for chars in (600, 900, 1500, 3000, 8000, 16_000):
        text = head_start_text(survey, chunks, terms, chars)
        assert len(text) <= chars, chars
        assert text.startswith("Found by the loop before your first step (not by you)")
        if chars >= 1500:
            assert MAP_LEAD in text
    full = head_start_text(survey, chunks, terms, 16_000)
    assert SEARCH_LEAD in full
    assert "80:     line 0" in full
    assert full.index(MAP_LEAD) < full.index(SEARCH_LEAD)
    assert head_start_text(None, [], terms, 5000) == ""
    only_map = head_start_text(survey, [], terms, 5000)
    assert only_map.startswith(HEAD_START_INTRO.format(what="a map of the workspace"))
    assert SEARCH_LEAD not in only_map
    only_evidence = head_start_text(None, chunks, terms, 5000)
    assert MAP_LEAD not in only_evidence
    assert SEARCH_LEAD in only_evidence


def test_head_start_text_at_its_smallest_has_a_map_with_its_lead_or_none() -> None:
    files = [FileInfo(f"src/m{i}.py", 100, (Definition("def", "f", 1),)) for i in range(5)]
    survey = Survey([*files, FileInfo("docs/a.md", 10)])
    chunks = [Chunk("src/m1.py", 1, 2, ("def f():", "    pass"), ("f",))]
    text = head_start_text(survey, chunks, ["f"], 600)
    assert "[Not shown, by folder" not in text or MAP_LEAD in text


def test_search_text_answers_or_offers_one_grep_call() -> None:
    none = search_text("zebra_stripes qq", [], 6000, 12)
    assert "No part of the 12 files indexed matches 'zebra_stripes qq'" in none
    call = json.loads(none.split("grep for exact text: ", 1)[1])
    assert call == {"name": "grep", "arguments": {"pattern": "(?i)zebra_stripes"}}
    assert search_text("what is the", [], 6000, 3).endswith("(a name from the code).")
    chunk = Chunk("a.py", 1, 2, ("def zebra():", "    pass"), ("zebra",))
    one = search_text("zebra", [chunk], 6000, 3)
    assert one.startswith("1 best match for 'zebra' (read_file reads on):\n")
    assert "1: def zebra():" in one
    two = search_text("zebra", [chunk, chunk], 6000, 3)
    assert two.startswith("2 best matches for 'zebra'")
    assert len(search_text("zebra", [chunk] * 50, 1000, 3)) <= 1000
