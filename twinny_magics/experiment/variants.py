"""A variant: a name and the :class:`~twinny_magics.agent.Agent` options it changes.

Options are checked against the Agent's real signature and settings (names, and the values of those
whose type says which are allowed) when the variant is made, so a typo is refused before anything runs,
with the options there are. ``workspace`` is not an option here: every run gets its own copy.

:func:`parse_options` reads options written as Python keyword arguments, for the magic and the command
line (``closing_prompt="Be brief.", steps=4, mode=text``).
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union, get_args, get_origin

#: Options the experiment owns: each run gets its own copy of the workspace.
RESERVED = frozenset({"workspace"})
#: Options that choose the server (connected once per experiment, not once per run).
SERVER_OPTIONS = ("base_url", "model", "kind", "api_key", "window", "timeout", "server")


@functools.cache
def agent_options() -> dict[str, Any]:
    """Every option a variant may set, with its type (``Agent``'s own arguments and its settings)."""
    from twinny_magics.agent import Agent  # noqa: PLC0415 - the session loads on first use
    from twinny_magics.settings import Settings  # noqa: PLC0415

    hints = {**typing.get_type_hints(Settings), **typing.get_type_hints(Agent.__init__)}
    names = [f.name for f in dataclasses.fields(Settings)] + [
        name
        for name, p in inspect.signature(Agent.__init__).parameters.items()
        if name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    return {name: hints.get(name, Any) for name in dict.fromkeys(names) if name not in RESERVED}


@functools.cache
def agent_defaults() -> dict[str, Any]:
    """Each Agent option's default."""
    from twinny_magics.agent import Agent  # noqa: PLC0415
    from twinny_magics.settings import Settings  # noqa: PLC0415

    parameters = inspect.signature(Agent.__init__).parameters
    own = {name: p.default for name, p in parameters.items() if p.default is not inspect.Parameter.empty}
    return {**{f.name: f.default for f in dataclasses.fields(Settings)}, **own}


#: Options that say where the server is and how to reach it, not what runs there (the model is checked
#: apart, as the server names it).
WHERE = frozenset({"base_url", "server", "api_key", "timeout"})


def effective(shared: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    """What a variant runs with (``own`` over ``shared``) as JSON, options at the Agent's default left out.

    Two experiments whose variants have the same effective options made the same runs, however the
    options were spelled (``%%agent compare`` from a session, or ``run()`` with options).
    """
    defaults = agent_defaults()
    out = {}
    for name, value in {**shared, **own}.items():
        if name in WHERE:
            continue
        default = defaults.get(name)
        if jsonable(value) == jsonable(default) or (_empty(value) and _empty(default)):
            continue
        out[name] = jsonable(value)
    return dict(sorted(out.items()))


def _empty(value: object) -> bool:
    """None or an empty dict or list: ``extra={}`` and ``extra=None`` run alike (0 and False do not)."""
    return value is None or (isinstance(value, Mapping | list | tuple) and not value)


def check_options(options: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``options`` if every name is an Agent option and every value fits its type; else ValueError."""
    known = agent_options()
    for name, value in options.items():
        if name in RESERVED:
            raise ValueError(
                f"{where}: {name} is the experiment's (workspace= of run(); each run gets its own copy)."
            )
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" Did you mean {close[0]}?" if close else ""
            raise ValueError(
                f"{where}: no option {name!r}.{hint} The options are: {', '.join(sorted(known))}."
            )
        if not _fits(value, known[name]):
            raise ValueError(f"{where}: {name}={value!r} is not {_shape(known[name])}.")
    _check_ranges(options, where)
    return dict(options)


def _check_ranges(options: Mapping[str, Any], where: str) -> None:
    for name in ("steps", "max_calls", "window"):
        value = options.get(name)
        if isinstance(value, int) and value < 1:
            raise ValueError(f"{where}: {name}={value} must be 1 or more.")
    descriptions = options.get("tool_descriptions")
    if isinstance(descriptions, Mapping):
        from twinny_magics.tools.registry import TOOLS  # noqa: PLC0415

        unknown = sorted(set(descriptions) - set(TOOLS))
        if unknown:
            raise ValueError(
                f"{where}: no tool named {unknown[0]!r} to describe; the tools are: {', '.join(TOOLS)}."
            )
    temperature = options.get("temperature")
    if isinstance(temperature, int | float) and not 0 <= temperature <= 2:
        raise ValueError(f"{where}: temperature={temperature:g} must be from 0 to 2.")


def _fits(value: object, hint: object) -> bool:
    """Whether ``value`` fits the type ``hint`` (types that cannot be checked cheaply always fit)."""
    origin = get_origin(hint)
    if hint is Any:
        return True
    if origin is Literal:
        return value in get_args(hint)
    if origin in (Union, types.UnionType):
        return any(_fits(value, arg) for arg in get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin in (dict, Mapping) or hint in (dict, Mapping):
        return isinstance(value, Mapping)
    return True


def _shape(hint: object) -> str:
    origin = get_origin(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(hint))
    if origin in (Union, types.UnionType):
        return " or ".join(_shape(a) for a in get_args(hint))
    if hint is type(None):
        return "None"
    name = getattr(hint, "__name__", None) or str(hint)
    return "a " + name if name != "Mapping" else "a dict"


class Variant:
    """A name and the Agent options it changes, e.g. ``Variant("short", closing_prompt="Be brief.")``.

    ``factory`` (optional) makes the session instead of :class:`~twinny_magics.agent.Agent`: any callable
    that takes the Agent's keyword arguments and returns an object with ``run(question) -> Reply`` (a
    loop to compare against, such as a benchmark's baseline).
    """

    def __init__(self, name: str, *, factory: Callable[..., Any] | None = None, **options: Any) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError("A variant needs a name (a non-empty string).")
        self.name = name.strip()
        self.factory = factory
        self.options = check_options(options, f"Variant {self.name!r}")

    def __repr__(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"Variant({self.name!r}{', ' + options if options else ''})"

    @classmethod
    def loaded(cls, name: str, options: Mapping[str, Any]) -> Variant:
        """A variant as saved results describe it (not checked: an object option is saved as its type)."""
        variant = cls.__new__(cls)
        variant.name, variant.factory, variant.options = name, None, dict(options)
        return variant

    def describe(self) -> dict[str, Any]:
        """The options as JSON (an object as its type, the API key never)."""
        described = {name: jsonable(value) for name, value in self.options.items() if name != "api_key"}
        if "api_key" in self.options:
            described["api_key"] = "(set)"
        if self.factory is not None:
            described["factory"] = jsonable(self.factory)
        return described


def jsonable(value: object) -> Any:
    """``value`` as JSON: plain data as it is, anything else by its type (a server, a toolset)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    name = getattr(value, "__qualname__", None) or type(value).__qualname__
    return f"<{name}>"


def parse_options(spec: str, namespace: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Options written as keyword arguments: ``closing_prompt="Be brief.", steps=4, mode=text``.

    Each value is a Python expression, evaluated in ``namespace`` (a notebook's variables) when one is
    given, else read as a literal; a bare word or a hyphenated one that names nothing (``text``,
    ``call-first``) is taken as that text. ValueError says what could not be read.
    """
    spec = spec.strip()
    if not spec:
        return {}
    try:
        tree = ast.parse(f"f({spec})", mode="eval")
    except SyntaxError as error:
        raise ValueError(f"Cannot read {spec!r} as name=value options ({error.msg}).") from None
    call = tree.body
    if not isinstance(call, ast.Call) or call.args or any(k.arg is None for k in call.keywords):
        raise ValueError(f"Write options as name=value, separated by commas: {spec!r}.")
    source = f"f({spec})"
    options: dict[str, Any] = {}
    for keyword in call.keywords:
        assert keyword.arg is not None
        segment = ast.get_source_segment(source, keyword.value) or ""
        options[keyword.arg] = _value(keyword.value, segment, namespace)
    return options


def _value(node: ast.expr, segment: str, namespace: Mapping[str, Any] | None) -> Any:
    try:
        if namespace is None:
            return ast.literal_eval(node)
        code = compile(ast.Expression(node), "<options>", "eval")
        return eval(code, {"__builtins__": __builtins__}, dict(namespace))  # the user's own line
    except (NameError, ValueError):
        word = segment.strip()
        if word.replace("-", "").replace("_", "").replace(".", "").isalnum():
            return word
        raise ValueError(f"Cannot read the value {segment!r}; put text in quotes.") from None
    except Exception as error:
        raise ValueError(f"The value {segment!r} failed: {type(error).__name__}: {error}.") from None
