"""What a question names, read as a table: the files and the definitions (outer first), and the bonus a
chunk gains for them."""

from __future__ import annotations

import pytest

from twinny_magics.naming import Named, defining_line, hop_names, named_bonus, named_in, named_queries


@pytest.mark.parametrize(
    ("question", "paths", "names"),
    [
        ("the class X line in a/b.py", ("a/b.py",), (("X",),)),
        ("X in a/b.py", ("a/b.py",), (("X",),)),
        ("a/b.py's X", ("a/b.py",), (("X",),)),
        ("def f", (), (("f",),)),
        ("On which line of toolz/itertoolz.py is groupby defined?", ("toolz/itertoolz.py",), (("groupby",),)),
        ("What is the constant K in setup.cfg?", ("setup.cfg",), (("K",),)),
        ("What does PluginManager.register raise?", (), (("PluginManager", "register"),)),
        ("Where is `merge_with` used?", (), (("merge_with",),)),
        ("Which file defines the function countby?", (), (("countby",),)),
        ("What does the project do?", (), ()),
        ("What message does memoize raise for a list?", (), (("memoize",),)),
        ("Which test file has the tests for countby?", (), (("countby",),)),
        # A kind's plural before "in a file" names no definition; written as a constant, it does.
        (
            "The special commands in a/dbcommands.py use a decorator. Which file defines it?",
            ("a/dbcommands.py",),
            (),
        ),
        ("What are the COMMANDS in a/main.py?", ("a/main.py",), (("COMMANDS",),)),
    ],
)
def test_what_a_question_names(
    question: str, paths: tuple[str, ...], names: tuple[tuple[str, ...], ...]
) -> None:
    named = named_in(question)
    assert named.paths == paths
    assert named.names == names


@pytest.mark.parametrize(
    ("line", "name", "defines"),
    [
        ("def f(x):", "f", True),
        ("    async def f(x):", "f", True),
        ("class X(Base):", "X", True),
        ("K = 5", "K", True),
        ("K: int = 5", "K", True),
        ("if K == 5:", "K", False),
        ("return f(x)", "f", False),
        ("def fx():", "f", False),
        ("    K = 5", "K", True),  # a class attribute
        ("        commands = []", "commands", False),  # a method's local
        ("\tK = 5", "K", True),
    ],
)
def test_a_definition_line_is_told_from_a_use(line: str, name: str, defines: bool) -> None:
    assert (defining_line([line], name) == 0) is defines


def test_the_bonus_prefers_the_definition_in_the_named_file() -> None:
    named = named_in("the class X line in a/b.py")
    defines, uses = ["class X:", "    pass"], ["y = X()"]
    assert named_bonus(named, "a/b.py", defines, None) > named_bonus(named, "c.py", defines, None)
    # The question asks about a/b.py: its use of X there comes before X's definition elsewhere.
    assert named_bonus(named, "a/b.py", uses, None) > named_bonus(named, "c.py", defines, None)
    assert named_bonus(named, "c.py", uses, None) == 0.0
    # With no file named, a definition anywhere is what is asked for.
    assert named_bonus(named_in("the class X"), "c.py", defines, None) > 0.0
    method = named_in("PluginManager.register")
    inside = ["    def register(self, plugin):"]
    assert named_bonus(method, "m.py", inside, "PluginManager") > named_bonus(method, "m.py", inside, "Other")


def test_named_queries_quote_every_word_so_no_name_is_an_operator() -> None:
    queries = named_queries(Named(("a/NOT.py",), (('AND"x',), ("OR",))))
    assert all('"and""x"' in q or '"or"' in q or "names" in q for q in queries)
    assert named_queries(Named()) == []


def test_a_second_look_follows_what_a_named_definition_points_to() -> None:
    named = named_in(
        "What does PluginManager set _inner_hookexec to, and what does TeardownWarning derive from?"
    )
    lines = [
        "class TeardownWarning(pkg.BaseWarning, Mixin, metaclass=Meta):",
        "        self._inner_hookexec = _multicall  # the default",
        "        self.other = thing",
        "class Unrelated(Base):",
    ]
    assert hop_names(named, lines) == (["_multicall"], ["BaseWarning", "Mixin"])
    assert hop_names(named_in("What is X?"), lines) == ([], [])


@pytest.mark.parametrize(
    "text", ["a" * 20_000, "a." * 10_000, "a/" * 10_000, "a.a/" * 5_000, "x in a.py " * 2_000]
)
def test_a_long_degenerate_question_is_read_in_linear_time(text: str) -> None:
    import time

    started = time.perf_counter()
    named_in(text)
    assert time.perf_counter() - started < 1.0
