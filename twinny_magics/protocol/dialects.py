"""How each dialect of tool call is read, once the pass over a reply has found where one may start.

Pure: no I/O. A reader looks at one position and returns None ("no call here") or a ``Read``: the calls
it read, the problems it found (a call meant but not readable) and where it stopped. ``strong`` says the
context already means a call (inside ``<tool_call>``, ``[TOOL_CALLS]``, a ```` ```tool ```` fence): there
anything unreadable is a problem; elsewhere it is just text. Readers nest (a fence holding a tag holding
JSON) and share one ``TextScan``, so every character is scanned a bounded number of times. FunctionGemma's
``call:NAME{…}`` body has a grammar of its own, read by ``gemma``; what a read gives (``Read``,
``Problem``) and how a call is made from what was read are in ``reads``.
"""

from __future__ import annotations

import re
from typing import Any

from twinny_magics.conversation import ToolCall
from twinny_magics.protocol.gemma import (
    GEMMA_CLOSE,
    GEMMA_OPEN,
    GEMMA_RESPONSE,
    GemmaSyntaxError,
    read_arguments,
)
from twinny_magics.protocol.markers import FUNCTION, GEMMA, MARKERS, MISTRAL, tag_markers, tag_pattern
from twinny_magics.protocol.reads import CallReader, Problem, Read
from twinny_magics.protocol.scan import call_arguments, decode_lenient, skip_ws
from twinny_magics.protocol.schema import resolve_name

__all__ = ["HSPACE", "DialectReader", "Problem", "Read"]

# The tags and tokens around a call, from the one table of markers: those whose body is a call (a body we
# cannot read is a problem) and those some templates wrap a call in that also occur in ordinary prose (a
# body that is not a call leaves them alone).
_TAGS = tag_markers()
_TAG_AT = re.compile(tag_pattern())
_FUNCTION_OPENERS = tuple(m.opener for m in MARKERS if m.dialect == FUNCTION)
_IDENT = re.compile(r"[A-Za-z_][\w.\-]*")
HSPACE = re.compile(r"[ \t]*")
_PYLIST_AT = re.compile(r"\[[ \t]*[A-Za-z_][\w.\-]*[ \t]*\(")
_FIRST_KEY = re.compile(r'\{\s*"([^"\\\n]{0,64})"')
_CALL_KEYS = frozenset(
    {"name", "function", "tool_name", "tool", "arguments", "parameters", "tool_calls", "thought"}
)
# xLAM's first format: {"thought": "...", "tool_calls": [calls]}; the thought is what the model said.
_WRAPPER_KEYS = frozenset({"thought", "tool_calls"})
_GEMMA_CALL = re.compile(r"(?:call[ \t]*:[ \t]*)?([A-Za-z_][\w.\-]*)\s*\{")
_NAME_KEYS = ("name", "tool_name", "tool", "function")
_ARGS_KEYS = ("arguments", "parameters", "args", "input", "tool_input", "params")
_CALL_SHAPED = re.compile(r'"(?:arguments|parameters)"\s*:')
_NAME_HINT = re.compile(r'"(?:name|tool_name)"\s*:\s*"([^"\\\n]{1,64})"')
_FUNC_ATTR = re.compile(r"""<function\s+name\s*=\s*["']([^"'\n<>]{1,128})["']\s*>""")
_PARAM_NAME = re.compile(r"<parameter=([^>=<\n]{0,128})")
_MAX_TAG_DEPTH = 3


class DialectReader(CallReader):
    """The readers for every dialect, over one text and one set of offered tools."""

    def _sequence(self, pos: int, *, depth: int, strong: bool, mistral: bool = False) -> Read | None:
        """One or more calls one after another (separated by whitespace, ',' or ';')."""
        text = self.text
        found: Read | None = None
        p = skip_ws(text, pos)
        while p < self.n:
            read = self._one(p, depth=depth, strong=strong, mistral=mistral)
            if read is None or read.end <= p:
                break
            if found is None:
                found = Read(read.end)
            found.take(read)
            p = skip_ws(text, read.end)
            if p < self.n and text[p] in ",;":
                p = skip_ws(text, p + 1)
        return found

    def _one(self, p: int, *, depth: int, strong: bool, mistral: bool) -> Read | None:
        text = self.text
        char = text[p]
        if char == "{":
            return self._json_value(p, strong=strong)
        if char == "[":
            if _PYLIST_AT.match(text, p):
                read = self._pylist(p)
                if read is not None:
                    return read
            return self._json_value(p, strong=strong)
        if char == "<":
            if text.startswith(_FUNCTION_OPENERS, p):
                return self._function(p, absorb_closer=False)
            tag = _TAG_AT.match(text, p)
            if tag and depth < _MAX_TAG_DEPTH:
                return self._tag(p, tag.group(), depth=depth)
            return None
        if _IDENT.match(text, p):
            return self._named(p, strong=strong, mistral=mistral)
        return None

    def _tag(self, start: int, opener: str, *, depth: int) -> Read | None:
        text, marker = self.text, _TAGS[opener]
        closer, strong, mistral = marker.closer, marker.strong, marker.dialect == MISTRAL
        body = start + len(opener)
        if marker.dialect == GEMMA:
            gemma = self._gemma(start)
            if gemma is not None:
                return gemma
        read = self._sequence(body, depth=depth + 1, strong=strong, mistral=mistral)
        if read is None or not (read.calls or read.problems):
            if not strong:
                return None
            close = self.scan.find(closer, body) if closer else -1
            end = close + len(closer) if closer and close != -1 else body
            what = "a JSON list of calls" if mistral else "a call"
            return Read(end, problems=[self._format(start, f"after {opener} I expected {what}")])
        after = skip_ws(text, read.end)
        # One closing brace too many after the JSON is a slip seen in the wild; let it go.
        stray = after
        while stray < self.n and text[stray] in "}]":
            stray = skip_ws(text, stray + 1)
        if stray != after and (stray >= self.n or (closer and text.startswith(closer, stray))):
            after = read.end = stray
        if closer and text.startswith(closer, after):
            read.end = after + len(closer)
        return read

    def _json_value(self, p: int, *, strong: bool) -> Read | None:
        text = self.text
        if text[p] == "[":
            return self._json_list(p, strong=strong)
        close = self.scan.close_of(p)
        if close < 0:
            if strong or self._call_shaped(p, self.n):
                why = "the JSON object never closes (a } is missing, or the reply was cut off)"
                return Read(p + 1, problems=[self._format(p, why, self._name_hint(p))])
            return None
        span = text[p : close + 1]
        if not self.scan.spend(len(span)):
            return Read(close + 1, problems=[self._format(p, "the call is too long to read")])
        value, error = decode_lenient(span)
        if error is not None:
            if strong or self._call_shaped(p, close):
                why = f"its JSON is not valid: {error}"
                return Read(close + 1, problems=[self._format(p, why, self._name_hint(p))])
            return None
        wrapped = self._wrapper(value, p, close + 1)
        if wrapped is not None:
            return wrapped
        outcome = self._from_object(value, p, strong=strong)
        if outcome is None:
            return Read(close + 1)  # well-formed data that is not a call
        if isinstance(outcome, Problem):
            return Read(close + 1, problems=[outcome])
        return Read(close + 1, calls=[outcome])

    def _json_list(self, p: int, *, strong: bool) -> Read | None:
        """``[{call}, {call}]`` (Mistral, xLAM, Hammer). The first element decides, as the first key does
        for an object: a list that opens with data is data, skipped whole; in a list that opens with a
        call, every element is meant as one (data there is a problem, not silently dropped)."""
        text = self.text
        found = Read(p + 1)
        q = skip_ws(text, p + 1)
        while q < self.n and text[q] == "{":
            read = self._json_value(q, strong=strong)
            if read is None:
                break
            if not (strong or read.calls or read.problems or read.said):
                close = self.scan.close_of(p)
                return Read(close + 1) if close > 0 else None  # data: nothing in it is a call
            strong = True
            found.take(read)
            q = skip_ws(text, read.end)
            if q < self.n and text[q] == ",":
                q = skip_ws(text, q + 1)
                continue
            break
        if not (found.calls or found.problems or found.said):
            return None
        if q < self.n and text[q] == "]":
            found.end = q + 1
        elif q >= self.n:
            found.end = self.n  # a list the reply ended inside: its complete calls still count
        return found

    def _wrapper(self, value: Any, pos: int, end: int) -> Read | None:
        """``{"tool_calls": [calls]}``, with xLAM's ``"thought"`` beside them; None for anything else."""
        if not (isinstance(value, dict) and isinstance(value.get("tool_calls"), list)):
            return None
        if not set(value) <= _WRAPPER_KEYS:
            return None
        thought = value.get("thought")
        found = Read(end, said=[thought.strip()] if isinstance(thought, str) and thought.strip() else [])
        for i, item in enumerate(value["tool_calls"]):
            # Problems are told apart by position; the elements of one decoded object share its start.
            outcome = self._from_object(item, pos + i, strong=True)
            if isinstance(outcome, ToolCall):
                found.calls.append(outcome)
            elif outcome is not None:
                found.problems.append(outcome)
        # An empty list with no thought says nothing: leave it as the text it is.
        return found if found.calls or found.problems or found.said else None

    def _call_shaped(self, start: int, end: int) -> bool:
        key = _FIRST_KEY.match(self.text, start)
        if key is None or key.group(1) not in _CALL_KEYS:
            return False
        # A call names its arguments near its start; looking further would make garbage text costly.
        return _CALL_SHAPED.search(self.text, start, min(end + 1, start + 256)) is not None

    def _name_hint(self, start: int) -> str | None:
        """The tool a broken JSON call names, read from its first characters, for a fitting example."""
        found = _NAME_HINT.search(self.text, start, start + 256)
        return found.group(1) if found else None

    def _from_object(self, obj: Any, pos: int, *, strong: bool) -> ToolCall | Problem | None:
        if not isinstance(obj, dict):
            return self._format(pos, "each call must be a JSON object") if strong else None
        call_id = obj.get("id") if isinstance(obj.get("id"), str) else None
        inner = obj.get("function")
        if isinstance(inner, dict) and "name" in inner:
            obj = inner  # the OpenAI shape: {"type": "function", "function": {"name", "arguments"}}
        name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
        args_key = next((k for k in _ARGS_KEYS if k in obj), None)
        if name is None:
            if self.specs and len(obj) == 1:
                # {"grep": {"pattern": "x"}}: the tool's name as the only key.
                ((key, value),) = obj.items()
                resolved = resolve_name(key, self.specs)
                if resolved is not None and isinstance(value, dict):
                    return self._make_call(pos, resolved, value)
            return self._format(pos, 'the JSON object has no "name" of a tool') if strong else None
        if args_key is None:
            if not (strong or (self.specs and resolve_name(name, self.specs))):
                return None
            arguments: Any = {}
        else:
            arguments = obj[args_key]
        if arguments is None:
            arguments = {}
        if isinstance(arguments, str):
            decoded, error = decode_lenient(arguments) if arguments.strip() else ({}, None)
            if error is not None or not isinstance(decoded, dict):
                return self._format(
                    pos, f'the "arguments" of {name} must be a JSON object, not a string', name
                )
            arguments = decoded
        if not isinstance(arguments, dict):
            return self._format(pos, f'the "arguments" of {name} must be a JSON object', name)
        return self._make_call(pos, name, arguments, call_id=call_id)

    def _pylist(self, p: int) -> Read | None:
        """``[grep(pattern="x"), read_file(path="a.py")]``; every element is meant as a call."""
        text = self.text
        found = Read(p + 1)
        q = skip_ws(text, p + 1)
        while q < self.n:
            name = _IDENT.match(text, q)
            if name is None:
                break
            paren = HSPACE.match(text, name.end())
            paren_at = paren.end() if paren else name.end()
            if paren_at >= self.n or text[paren_at] != "(":
                break
            read = self._python_call(q, name.group(), paren_at, strong=True)
            if read is None:
                break
            found.take(read)
            q = skip_ws(text, read.end)
            if q < self.n and text[q] == ",":
                q = skip_ws(text, q + 1)
                continue
            break
        if found.end == p + 1:
            return None
        if q < self.n and text[q] == "]":
            found.end = q + 1
        return found

    def _named(self, p: int, *, strong: bool, mistral: bool) -> Read | None:
        """A call that starts with the tool's name: ``grep("x")``, ``grep {"pattern": "x"}``, GLM's form."""
        text = self.text
        ident = _IDENT.match(text, p)
        if ident is None:
            return None
        name = ident.group()
        offered = bool(self.specs) and resolve_name(name, self.specs) is not None
        if not strong and not offered:
            return None
        q = ident.end()
        if mistral and text.startswith("[ARGS]", q):
            q += 6
        space = HSPACE.match(text, q)
        k = space.end() if space else q
        if k < self.n and text[k] == "(":
            return self._python_call(p, name, k, strong=strong)
        j = skip_ws(text, q) if strong else k
        if j < self.n and text[j] == "{":
            close = self.scan.close_of(j)
            if close < 0:
                if not strong:
                    return None
                return Read(j + 1, problems=[self._format(p, f"the arguments of {name} never close", name)])
            value, error = decode_lenient(text[j : close + 1])
            if error is not None or not isinstance(value, dict):
                if not strong:
                    return None
                why = f"the arguments of {name} are not a JSON object" + (f": {error}" if error else "")
                return Read(close + 1, problems=[self._format(p, why, name)])
            return self._one_call(close + 1, self._make_call(p, name, value))
        if strong and text.startswith("<arg_key>", j):
            return self._glm(p, name, j)
        if strong and offered:
            e = skip_ws(text, q)
            if e >= self.n or text.startswith(("</tool_call>", "<|tool_call_end|>", "</function_call>"), e):
                return self._one_call(q, self._make_call(p, name, {}))
        return None

    def _python_call(self, p: int, name: str, paren: int, *, strong: bool) -> Read | None:
        close = self.scan.close_of(paren, python=True)
        if close < 0:
            if not strong:
                return None
            return Read(paren + 1, problems=[self._format(p, f"the call {name}( never closes", name)])
        if not self.scan.spend(close - paren):
            return Read(close + 1, problems=[self._format(p, "the call is too long to read", name)])
        parsed = call_arguments(self.text[paren : close + 1])
        if isinstance(parsed, str):
            return Read(close + 1, problems=[self._format(p, parsed, name)]) if strong else None
        positional, keywords = parsed
        return self._one_call(close + 1, self._make_call(p, name, keywords, positional=positional))

    def _gemma(self, start: int) -> Read | None:
        """FunctionGemma's ``<start_function_call>call:NAME{k:<escape>v<escape>}<end_function_call>``.

        None when the tag holds something else (JSON, say): the generic tag reader reads that.
        """
        text = self.text
        head = _GEMMA_CALL.match(text, skip_ws(text, start + len(GEMMA_OPEN)))
        if head is None:
            return None
        name = head.group(1)
        try:
            arguments, end = read_arguments(text, head.end() - 1, self.scan)
        except GemmaSyntaxError as error:
            close = self.scan.find(GEMMA_CLOSE, start)
            stop = close + len(GEMMA_CLOSE) if close != -1 else max(error.pos, start + len(GEMMA_OPEN))
            return Read(stop, problems=[self._format(start, f"in {name}'s arguments, {error}", name)])
        for closer in (GEMMA_CLOSE, GEMMA_RESPONSE):
            after = skip_ws(text, end)
            if text.startswith(closer, after):
                end = after + len(closer)
        return self._one_call(end, self._make_call(start, name, arguments))

    def _glm(self, p: int, name: str, pos: int) -> Read:
        """GLM-4.5's body: ``name`` then ``<arg_key>k</arg_key><arg_value>v</arg_value>`` pairs."""
        text, args = self.text, dict[str, Any]()
        k = pos
        while text.startswith("<arg_key>", k):
            key_end = self.scan.find("</arg_key>", k + 9)
            value_at = skip_ws(text, key_end + 10) if key_end != -1 else -1
            value_end = self.scan.find("</arg_value>", value_at + 11) if value_at != -1 else -1
            if key_end == -1 or not text.startswith("<arg_value>", value_at) or value_end == -1:
                return Read(
                    k + 1, problems=[self._format(p, "an <arg_key>/<arg_value> pair is not closed", name)]
                )
            args[text[k + 9 : key_end].strip()] = text[value_at + 11 : value_end]
            k = skip_ws(text, value_end + 12)
        return self._one_call(k, self._make_call(p, name, args, text_values=True))

    def _function(self, p: int, *, absorb_closer: bool) -> Read | None:
        """Qwen3-coder's ``<function=NAME><parameter=K>v</parameter></function>``, closers optional."""
        text = self.text
        if text.startswith("<function=", p):
            name_at = p + 10
            gt = self.scan.find(">", name_at)
            newline = self.scan.find("\n", name_at)
            if gt == -1 or (newline != -1 and newline < gt):
                end = self.n if newline == -1 else newline
                why = "the <function=NAME> tag must end with > on the same line"
                return Read(end, problems=[self._format(p, why)])
            name, body = text[name_at:gt].strip(), gt + 1
        else:
            attr = _FUNC_ATTR.match(text, p)
            if attr is None:
                return None
            name, body = attr.group(1), attr.end()
        resolved = resolve_name(name, self.specs) if self.specs else None
        spec = self.specs.get(resolved) if resolved is not None else None
        q = skip_ws(text, body)
        if q < self.n and text[q] == "{":
            # Functionary / Llama 3.1 put JSON arguments inside the tag.
            close = self.scan.close_of(q)
            if close < 0:
                return Read(q + 1, problems=[self._format(p, f"the arguments of {name} never close", name)])
            value, error = decode_lenient(text[q : close + 1])
            end = close + 1
            after = skip_ws(text, end)
            if text.startswith("</function>", after):
                end = after + 11
            if error is not None or not isinstance(value, dict):
                return Read(
                    end, problems=[self._format(p, f"the arguments of {name} are not a JSON object", name)]
                )
            return self._one_call(end, self._make_call(p, name, value))
        args, end = self._parameters(body, frozenset(spec.params) if spec else None)
        if absorb_closer:
            after = skip_ws(text, end)
            if text.startswith("</tool_call>", after):
                end = after + 12  # the wrapper's closer without its opener
        return self._one_call(end, self._make_call(p, name, args, text_values=True))

    def _parameters(self, pos: int, known: frozenset[str] | None) -> tuple[dict[str, Any], int]:
        text, args = self.text, dict[str, Any]()
        q = pos
        while True:
            at = skip_ws(text, q)
            if text.startswith("</function>", at):
                return args, at + 11
            if not text.startswith("<parameter=", at):
                return args, q
            header = at + 11
            gt = self.scan.find(">", header)
            newline = self.scan.find("\n", header)
            if gt != -1 and (newline == -1 or gt < newline):
                raw, value_at = text[header:gt], gt + 1
            else:
                raw_end = self.n if newline == -1 else newline
                raw, value_at = text[header:raw_end], min(raw_end + 1, self.n)
            cut = min((i for i in (raw.find("="), raw.find("<")) if i != -1), default=-1)
            if cut != -1:
                # OpenHands' repair: "<parameter=command=str_replace</parameter>" holds its value.
                value_at = header + cut + (1 if raw[cut] == "=" else 0)
                raw = raw[:cut]
            value_end, q = self._value_end(value_at, known)
            args[raw.strip()] = _trim_one_newline(text[value_at:value_end])

    def _value_end(self, start: int, known: frozenset[str] | None) -> tuple[int, int]:
        """Where a parameter's value ends, and where reading goes on.

        A ``</parameter>`` ends the value when what follows it could follow a parameter (another known
        parameter, ``</function>``, the end); one followed by anything else is part of the value (code
        that writes the protocol itself). Tags opened inside the value nest, so a whole example call
        inside a value stays inside it.
        """
        text, level = self.text, 0
        first_weak = first_nested = -1
        i = start
        while True:
            j = text.find("<", i)
            if j == -1 or not self.scan.spend(j - i + 1):
                break
            if text.startswith("</parameter>", j):
                after = skip_ws(text, j + 12)
                follows = (
                    after >= self.n
                    or text.startswith(("</function>", "</tool_call>"), after)
                    or (text.startswith("<parameter=", after) and self._known_param(after, known))
                )
                if follows and level == 0:
                    return j, j + 12
                if follows and first_nested == -1:
                    first_nested = j
                if not follows and level == 0 and first_weak == -1:
                    first_weak = j
                i = j + 12
                continue
            if level == 0 and text.startswith("<parameter=", j) and self._known_param(j, known):
                return j, j
            if text.startswith(("</function>", "</tool_call>"), j):
                if level == 0:
                    return j, j
                level -= 1
            elif text.startswith(("<function=", "<tool_call>"), j):
                level += 1
            i = j + 1
        for fallback in (first_nested, first_weak):
            if fallback != -1:
                return fallback, fallback + 12
        return self.n, self.n

    def _known_param(self, pos: int, known: frozenset[str] | None) -> bool:
        if known is None:
            return True
        name = _PARAM_NAME.match(self.text, pos)
        return name is not None and name.group(1).strip() in known


def _trim_one_newline(value: str) -> str:
    """A parameter value without the one line break the template puts on each side of it."""
    if value.startswith("\r\n"):
        value = value[2:]
    elif value.startswith("\n"):
        value = value[1:]
    if value.endswith("\r\n"):
        value = value[:-2]
    elif value.endswith("\n"):
        value = value[:-1]
    return value
