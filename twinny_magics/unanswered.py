"""Said, not done: why a reply to a workspace question or a request for changes has not answered yet.

A small model often stops short of an answer: it announces a plan, shows code and says what it *would*
return, says how the value could be found, gives no number to a how-many question or no line number to a
which-line question, repeats the loop's own words, cites only a place for a question that asks what, or
answers a request for changes with part of it undone. Each is read here from the question and the reply's
text (``not_done``, ``unfinished_edit``) with the nudge the loop sends back, once a reply.

Pure: no I/O. Split from `notes`, whose fixed texts it reads (a reply that copies them answered nothing).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .naming import named_in
from .notes import (
    FINAL_ANSWER_PROMPT,
    NOTES_HEADER,
    NOTES_LEAD,
    act_now_prompt,
    asks_for_a_change,
)
from .retrieval import HEAD_START_INTRO, HEAD_START_LEAD, SEARCH_LEAD

# A reply that says what it is about to do, and stops: "I'll read the notebook…", "Let me check…", or a
# numbered plan whose first step is to read or search.
_PLAN = re.compile(
    r"^\s*(?:(?:ok(?:ay)?|sure|great)[,.!]?\s+)?(?:I'?ll|I will|I am going to|I'm going to|Let me|Let's|"
    r"I need to|I should|First,? (?:I|let)|To (?:answer|find|determine) this,? I)\b"
    r"|^\s*(?:1[.)]|Step 1:?)\s+(?:\*\*)?(?:read|open|search|grep|look|find|check|list|run)\b",
    re.IGNORECASE,
)


def announces_a_plan(text: str) -> bool:
    """Whether a reply only says what it will do ("I'll read app.py first", "1. Read the notebook"), with
    no answer in it: a small model that writes its plan and stops has not looked yet."""
    return bool(_PLAN.match(text)) and len(text) < 1500


# The last sentence of a reply that shows code and says what it *would* give ("This will return the
# maximum value."), with no value of its own in it: nothing ran the code, so nothing was answered.
_PROMISE = re.compile(
    r"(?:^|[.!?:]\s+|\n)(?:(?:When|Once|If|After)\s+(?:you\s+)?run[^,.!?\n]{0,30},\s*)?"
    r"(?:This|That|It|Running (?:it|this|that)|The (?:code|call|expression|command|cell|"
    r"output|result)s?)\b[^.!?\n]{0,40}?\bwill\s+(?:\w+ly\s+)?(?:return|give|print|output|show|display|list|"
    r"tell|produce|yield|compute|calculate|count)\s+(?P<rest>(?:the|all|each|every|its|their|how|what|which|whether|if)\b"
    r"[^!?\n]*)[.!]?\s*$",
    re.IGNORECASE,
)


def promises_a_result(text: str) -> bool:
    """Whether a reply ends, after a fence of code, by saying what that code *will* return ("This will
    return the maximum value."), describing the result without giving it (no number, no quoted text): the
    code did not run, no answer was given. A reply without a fence, or whose last sentence gives the
    value ("It will return a dict", "This prints 52"), is an answer."""
    fence = text.rfind("```")
    if fence < 0 or len(text) > 2500:
        return False
    found = _PROMISE.search(text.rstrip(), fence)
    if found is None:
        return False
    # A call or a setting restated from the question ("… of MaximumBreaks(y, k=4)") is not a value.
    rest = _RESTATED.sub(" ", found.group("rest"))
    return not re.search(r"\d|[`'\"]", rest)


_RESTATED = re.compile(r"\b\w+\([^()\n]{0,80}\)|\b\w+\s*=\s*[\w.]+")


#: An answer that says how the value could be had instead of giving it ("can be found by calling max on y").
_HOW_TO = re.compile(
    r"\bcan\s+be\s+(?:found|obtained|computed|calculated|determined|retrieved|checked)\s+(?:by|using|with|in)\b",
    re.IGNORECASE,
)
_ASKS_VALUE = re.compile(
    r"^\s*(?:what|which)\b(?!\s+(?:does|do|did|is\s+the\s+(?:purpose|role)))", re.IGNORECASE
)


def tells_how_not_what(question: str, answer: str) -> bool:
    """Whether an answer to a what-is question says how the value could be found ("… can be found by
    calling the `max` function on `y`") and gives no number, outside code fences: no value was given."""
    if _ASKS_VALUE.match(question) is None or _HOW_TO.search(answer) is None:
        return False
    prose = _PLACES.sub(" ", _FENCED.sub("", answer))
    return re.search(r"\d", prose) is None


#: Where an answer looked (``line 15``, ``cell 4``, ``lines 3-9``, a path such as
#: ``notebooks/01_maximum_breaks.ipynb``): numbers that are no value.
_PLACES = re.compile(
    r"\b(?:lines?|cells?|steps?)\s+\d+(?:\s*[-–]\s*\d+)?|[\w.-]*/[\w./-]+|\b[\w-]+\.(?:py|ipynb|md|rst|txt)\b",
    re.IGNORECASE,
)


def give_the_value_prompt() -> str:
    """The nudge sent back once when a reply said what its code would return instead of what it is."""
    return (
        "You wrote what the code would return, not what it returns: nothing ran it, so the question is not "
        "answered yet. If the evidence or the tool results above show the value (a notebook cell's outputs "
        "are the '# out:' lines under it), answer with the value itself; otherwise call a tool to find it."
    )


_HOW_MANY = re.compile(r"\bhow\s+many\b|\bnumber\s+of\b", re.IGNORECASE)
_A_NUMBER = re.compile(
    r"\d|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|hundred|dozen|none|no|single|once|twice)\b",
    re.IGNORECASE,
)


def counts_nothing(question: str, answer: str) -> bool:
    """Whether an answer to a question that asks how many ("how many", "number of") gives no number at
    all — no digit, no number word, no "none": it describes where the count is instead of giving it."""
    return bool(answer.strip()) and _HOW_MANY.search(question) is not None and not _A_NUMBER.search(answer)


def give_the_count_prompt() -> str:
    """The nudge sent back once when an answer to a how-many question gave no number."""
    return (
        "The question asks how many, and your answer gives no number. Answer with the number itself, "
        "taken from the results or evidence above (a notebook cell's outputs are the '# out:' lines "
        "under it); if they do not show it, call a tool to find it."
    )


_WHICH_LINE = re.compile(r"\b(?:which|what)\s+line\b|\bline\s+number\b", re.IGNORECASE)
_FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_LISTED = re.compile(r"^[ \t]*\d+[ \t]*[:|].*$", re.MULTILINE)


def names_no_line(question: str, answer: str) -> bool:
    """Whether an answer to a question that asks which line gives no line number in its own words: its
    only numbers are in a copy of numbered lines (a fence or a listing of ``592: class …`` rows), where
    the first one read is the copy's first line, not the answer. A copy of one line is an answer."""
    if not answer.strip() or _WHICH_LINE.search(question) is None or len(_LISTED.findall(answer)) == 1:
        return False
    prose = _LISTED.sub("", _FENCED.sub("", answer))
    return re.search(r"\d", prose) is None


def give_the_line_prompt() -> str:
    """The nudge sent back once when an answer to a which-line question gave no line number of its own."""
    return (
        "The question asks for a line number, and your answer gives none in its own words: a copy of "
        "numbered lines is not an answer. Say the line number in a sentence — the number before ':' on the "
        "line that holds what the question asks about, in the evidence or results above."
    )


#: Words in a row that make a passage of the loop's own text: "the question's words" is common prose,
#: "it is a start not the whole" is the loop's.
_RUN = 6
#: At most this many words of a reply's own beside at least `_COPIED` of the loop's: it answered nothing.
_OWN_WORDS = 12
_COPIED = 10
#: A reply of one passage of the loop's words and at most this many of its own answered nothing either.
_NEXT_TO_NOTHING = 2


def _plain_words(text: str) -> list[str]:
    """Lower-case words without apostrophes and a plural's s: "matches the question's words" and
    "match the question word" read alike."""
    words = re.findall(r"[\w'./-]*\w", text.lower())
    return [re.sub(r"(?<=\w\w)(?:es|s)$", "", w.replace("'", "")) for w in words]


def _runs(words: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(words[k : k + _RUN]) for k in range(len(words) - _RUN + 1)}


#: Passages of what the loop says around its evidence and notes (the what of the intro left out).
_LOOP_RUNS = frozenset(
    run
    for text in (
        HEAD_START_LEAD,
        *HEAD_START_INTRO.split("{what}"),
        "the parts of files that best match the question's words",
        SEARCH_LEAD,
        NOTES_HEADER,
        NOTES_LEAD,
        FINAL_ANSWER_PROMPT,
    )
    for run in _runs(_plain_words(text))
)


def copies_the_loop(answer: str) -> bool:
    """Whether an answer is the loop's own words said back ("The loop found … It is a start, not the whole
    workspace: read_file reads any file in full, grep searches for exact text."): ten words or more in
    passages of six in a row of what the loop says around its evidence, and at most a dozen words of the
    reply's own beside them, no more than it copied. An answer that quotes a phrase of it has more of
    its own."""
    words = _plain_words(_FENCED.sub(" ", answer))
    copied: set[int] = set()
    for k in range(len(words) - _RUN + 1):
        if tuple(words[k : k + _RUN]) in _LOOP_RUNS:
            copied.update(range(k, k + _RUN))
    own = [word for k, word in enumerate(words) if k not in copied]
    if len(own) <= _NEXT_TO_NOTHING:  # "The loop found in the workspace for this question." and no more
        return bool(copied) and not any(ch.isdigit() for word in own for ch in word)
    return len(copied) >= _COPIED and len(own) <= _OWN_WORDS and len(own) <= len(copied)


def say_the_answer_prompt() -> str:
    """The nudge sent back once when a reply said the loop's own words back instead of answering."""
    return (
        "Your reply repeats the loop's words about the evidence (\"It is a start, not the whole "
        'workspace…"); it does not answer the question. Answer it in your own words: the name, value, '
        "line or number it asks for, from the evidence or results above, or call a tool if they do not "
        "show it."
    )


#: A question that asks where ("which file", "on which line", "where is"): a place is its answer.
_ASKS_PLACE = re.compile(
    r"\bwhere\b|\bin\s+which\b|\b(?:which|what)\s+(?:\w+\s+)?(?:files?|lines?|modules?|folders?|paths?|"
    r"director(?:y|ies)|notebooks?|cells?)\b|\bline\s+numbers?\b",
    re.IGNORECASE,
)
#: A place as an answer cites it: ``litecli/main.py:43``, ``app.py, line 4``, ``line 12 of app.py``.
_CITED_PLACE = re.compile(
    r"`?[\w./-]*\w\.[A-Za-z]\w{0,7}`?(?:\s*[:,]\s*(?:lines?\s+)?\d+(?:\s*[-–]\s*\d+)?)?|\blines?\s+\d+(?:\s+of)?",
    re.IGNORECASE,
)


def only_cites(question: str, answer: str) -> bool:
    """Whether an answer is only a place (``litecli/main.py:43``) for a question that does not ask where:
    "which names does main.py import" answered with the line, not the names on it."""
    if not answer.strip() or _ASKS_PLACE.search(question) or _FENCED.search(answer):
        return False
    if asks_for_a_change(question):
        return False
    rest = _CITED_PLACE.sub(" ", answer)
    return _CITED_PLACE.search(answer) is not None and not re.search(r"[A-Za-z0-9_]{2,}", rest)


def say_what_is_there_prompt() -> str:
    """The nudge sent back once when an answer gave only a file:line to a question that asks what."""
    return (
        "Your answer gives only a place (a file:line), and the question does not ask where: it asks what. "
        "Say the answer itself in words — the names, value or text the question asks for, as the line "
        "shows them — and cite the file:line after it."
    )


def not_done(question: str, answer: str, *, ran: bool, mode: str) -> tuple[str, str] | None:
    """Why an answer to a workspace question has not done what it said or was asked, and the nudge to
    send back (once a reply): the loop's own words said back, a place alone for a question that asks
    what, a plan announced before any tool ran (``ran``), a value promised by code that did not run, how
    to find a value instead of it, a how-many question answered with no number, a which-line question
    answered with no line number; None when it is an answer."""
    if copies_the_loop(answer):
        problem = "said the loop's own words back instead of answering: asked for the answer"
        return problem, say_the_answer_prompt()
    if only_cites(question, answer):
        return "answered with only a file:line, not what is there: asked for it", say_what_is_there_prompt()
    if not ran and announces_a_plan(answer):
        problem = "announced what it would do without doing it: nudged to do it"
        return problem, act_now_prompt(mode, question)
    if promises_a_result(answer):
        problem = "said what its code would return without the value: asked for the value"
        return problem, give_the_value_prompt()
    if tells_how_not_what(question, answer):
        return "said how to find the value instead of giving it: asked for the value", give_the_value_prompt()
    if counts_nothing(question, answer):
        return "answered a how-many question with no number: asked for it", give_the_count_prompt()
    if names_no_line(question, answer):
        return "answered a which-line question with no line number: asked for it", give_the_line_prompt()
    return None


_EVERY_USE = re.compile(
    r"\brenam\w*|\b(?:every|all|each)\b[^.?!\n]{0,40}\b(?:call|use|usage|occurrence|reference|import)", re.I
)


def asks_every_use(question: str) -> bool:
    """Whether a request for a change asks for every use changed too: a rename, or "update every call"."""
    return _EVERY_USE.search(question) is not None


def finish_prompt(left: str) -> str:
    """The nudge sent back once when a rename was answered as done while the old name is still used."""
    return (
        f"Not done yet: your last edit says {left}. The request asks for every use changed. Read those "
        "lines and edit each one with edit_file, then answer."
    )


def untouched_prompt(names: Sequence[str]) -> str:
    """The nudge sent back once when a request naming several things was answered with some unchanged."""
    said = ", ".join(names)
    return (
        f"Not done yet: the request also names {said}, which none of your edits changed. If the request "
        "asks for a change there too, make it now with edit_file (read the lines first if you need them); "
        "then answer."
    )


def unfinished_edit(question: str, left: str, edits: Sequence[str]) -> tuple[str, str] | None:
    """Why an answer to a request for changes is not done yet, and the nudge, when the edits made so far
    (``edits``: the text of each one's arguments) leave part of it: a rename whose old name is still used
    (``left``, what the latest edit said) when every use should change; or, of two names or more the
    request gives as code (``multi_line`` and ``destructive_warning``), one that no edit touched while
    another was. None when neither."""
    if left and asks_every_use(question):
        return "answered with a rename half made: told where the old name is still used", finish_prompt(left)
    names = [chain[-1] for chain in named_in(question).names]
    touched = [name for name in names if any(name in edit for edit in edits)]
    untouched = [name for name in names if name not in touched]
    if len(names) < 2 or not touched or not untouched:
        return None
    return "answered with a named part of the request unchanged: told which", untouched_prompt(untouched[:3])
