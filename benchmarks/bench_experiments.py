"""Experiments run at once on the embedded server's slots and on two servers: runs per hour, agreement, CPU.

    .venv/bin/python benchmarks/bench_experiments.py [--questions 4] [--threads 1] [--concurrency 2,4]
        [--fleet 1,2] [--litellm 1,2]

The same experiment (``--questions`` questions about a small workspace × two variants, greedy, seeds 0…)
runs in these configurations, each on a fresh SmolLM2-135M llama.cpp server in a subprocess
(``python -m twinny_magics.servers.embedded``, ``--threads`` threads) whose slots match:

- ``sequential``: 1 slot, one run at a time (the baseline every other configuration is compared with);
- ``c=N``: N slots, ``run(..., concurrency=N)`` (each run pinned to a slot of its own);
- ``c=1 on N slots``: the N-slot server, one run at a time (what the server's set-up alone changes);
- ``2 servers × N``: two servers of N slots each, ``run(..., servers=[a, b], concurrency=N)`` (``--fleet``);
- ``LiteLLM 2 × N``: the same two servers behind the real LiteLLM proxy as two deployments of one model
  name (each with ``max_parallel_requests: N``), ``run(..., base_url=proxy, concurrency=2N)``
  (``--litellm``; the proxy from ``.venv-gateway``, started offline as the gateway tests start it).

Every slot has the same window (``--slot-window`` tokens; the server's ``--ctx`` is N times that), so each
run plans for the same window whatever the configuration. For each: wall time, runs per hour, the speed-up
over sequential, generated tokens per second over the whole experiment, the runner's own CPU per run
(this process; the server is another one), the pass rate, and agreement with sequential: runs whose
reply is identical (the same answer text and the same tool calls), by run.

Prints a table and writes benchmarks/results_experiments.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twinny_magics.experiment import Not, Question, Results, Variant, run  # noqa: E402

RESULTS = Path(__file__).with_name("results_experiments.json")

#: llama.cpp's own batched decoding numbers on a GPU (examples/batched-bench/README.md, "Sample results":
#: LLaMA 7B F16, all layers on the GPU, 128 prompt + 128 generated tokens a sequence): sequences decoded
#: together -> (prompt tokens read per second, generated tokens per second), over all sequences.
GPU_BATCHED = {
    1: (1186.64, 41.57),
    2: (1295.19, 50.90),
    4: (1373.96, 74.44),
    8: (1363.27, 139.43),
    16: (1304.68, 242.23),
    32: (1201.73, 465.40),
}


def gpu_estimate(read_per_run: float, generated_per_run: float) -> dict[str, float]:
    """Runs per hour at each batch size on that GPU, for runs that read and generate this many tokens.

    An estimate: every run is taken to be under way with B-1 others for its whole length, reading its
    prompts at the batched prompt speed and generating at the batched generation speed; tool time and
    the runner are left out (they overlap with other runs' requests).
    """
    out = {}
    for batch, (read_speed, generate_speed) in GPU_BATCHED.items():
        seconds = batch * read_per_run / read_speed + batch * generated_per_run / generate_speed
        out[str(batch)] = round(batch / seconds * 3600)
    return out


WORKSPACE = {
    "server.js": (
        "const http = require('http');\n\n"
        "const PORT = 8000;\n\n"
        "http.createServer((req, res) => {\n"
        "  res.end('open');\n"
        "}).listen(PORT);\n"
    ),
    "README.md": "# corner shop\n\nStart it with `node server.js`, then open http://localhost:8000/.\n",
    "prices.json": '{"apple": 3, "pear": 4, "plum": 2}\n',
    "notes.txt": "Deliveries come on Tuesday. The shop closes at 18:00.\n",
}
QUESTIONS = [
    Question("Which port does the server listen on?", check=r"\b8000\b", name="port"),
    Question("How do I start the shop?", check=[r"node server\.js", Not("npm")], name="start"),
    Question("What does a plum cost?", check=r"\b2\b", name="plum"),
    Question("When do deliveries come?", check=r"tuesday", name="deliveries"),
    Question("When does the shop close?", check=r"18", name="close"),
    Question("Which file holds the prices?", check=r"prices\.json", name="prices"),
    Question("What does the server answer?", check=r"\bopen\b", name="answer"),
    Question("What is the shop called?", check=r"corner", name="name"),
]
VARIANTS = [
    Variant("default", steps=3),
    Variant(
        "answer",
        steps=3,
        closing_prompt="Now answer the question in one sentence, using the tool result above.",
    ),
]


def start_server(
    slots: int, slot_window: int, threads: int, log: Path
) -> tuple[subprocess.Popen[bytes], str]:
    """A SmolLM2 server with ``slots`` slots of ``slot_window`` tokens each, in a subprocess."""
    command = [
        sys.executable,
        "-m",
        "twinny_magics.servers.embedded",
        "--port",
        "0",
        "--ctx",
        str(slot_window * slots),
        "--parallel",
        str(slots),
        "--threads",
        str(threads),
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=sink, cwd=ROOT)
    assert process.stdout is not None
    line = process.stdout.readline().decode()
    if not line.startswith("ready "):
        process.kill()
        raise RuntimeError(f"the server did not start: {line!r}\n{log.read_text(errors='replace')[-2000:]}")
    return process, line.split()[1]


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout is not None:
        process.stdout.close()


GATEWAY = ROOT / ".venv-gateway" / "bin" / "litellm"
GATEWAY_KEY = "sk-bench-experiments"


def start_gateway(
    backends: list[str], slots: int, slot_window: int, folder: Path
) -> tuple[subprocess.Popen[bytes], str]:
    """The LiteLLM proxy routing one model name, ``smollm2``, to every backend (one deployment each)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    deployments = [
        {
            "model_name": "smollm2",
            "litellm_params": {
                "model": "openai/smollm2",
                "api_base": url + "/v1",
                "api_key": "none",
                "max_parallel_requests": slots,
            },
            "model_info": {"max_input_tokens": slot_window},
        }
        for url in backends
    ]
    config = {
        "model_list": deployments,
        "general_settings": {"master_key": GATEWAY_KEY},
        "litellm_settings": {"telemetry": False, "num_retries": 0},
    }
    (folder / "litellm.yaml").write_text(json.dumps(config, indent=1))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False"}
    command = [str(GATEWAY), "--config", str(folder / "litellm.yaml"), "--host", "127.0.0.1"]
    with (folder / "litellm.log").open("wb") as log:
        process = subprocess.Popen(
            [*command, "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError((folder / "litellm.log").read_text(errors="replace")[-2000:])
        try:
            if httpx.get(url + "/health/liveliness", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    stop_gateway(process)
    raise RuntimeError("LiteLLM did not start in 180 s")


def stop_gateway(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def fingerprint(record: Any) -> str:
    """What makes two replies the same: the answer text and every tool call, in order."""
    reply = record.reply
    if reply is None:
        return f"<{record.outcome}: {record.why}>"
    calls = [[call.name, call.arguments] for step in reply.steps for call in step.calls]
    return json.dumps([reply.text, calls], sort_keys=True, default=str)


def measure(
    plan: tuple[str, int, int, int, str], args: argparse.Namespace, workspace: Path, logs: Path
) -> tuple[dict[str, Any], Results]:
    """One configuration (name, servers, slots each, concurrency, how) on fresh servers: row and results.

    ``how``: ``one`` (one server, ``base_url=``), ``fleet`` (``servers=[...]``, concurrency on each), or
    ``litellm`` (the servers behind the LiteLLM proxy, ``base_url=`` the proxy).
    """
    name, count, slots, concurrency, how = plan
    started_servers = []
    gateway: subprocess.Popen[bytes] | None = None
    try:
        for number in range(count):
            log = logs / f"{name.replace(' ', '_')}-{number}.log"
            started_servers.append(start_server(slots, args.slot_window, args.threads, log))
        urls = [url for _, url in started_servers]
        where: dict[str, Any] = {"base_url": urls[0]}
        if how == "fleet":
            where = {"servers": urls}
        elif how == "litellm":
            gateway, proxy = start_gateway(urls, slots, args.slot_window, logs)
            where = {"base_url": proxy, "kind": "litellm", "model": "smollm2", "api_key": GATEWAY_KEY}
        cpu = time.process_time()
        started = time.perf_counter()
        results = run(
            QUESTIONS[: args.questions],
            VARIANTS,
            workspace=workspace,
            progress="off",
            concurrency=concurrency,
            max_errors=0,
            **where,
        )
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu
    finally:
        if gateway is not None:
            stop_gateway(gateway)
        for process, _ in started_servers:
            stop_server(process)
    runs = results.runs
    generated = sum(r.generated_tokens for r in runs)
    # What the server had to read afresh: the prompt less what its cache held (the run's own earlier steps).
    read = sum(
        (q.prompt_tokens or 0) - (q.cached_tokens or 0) for r in runs if r.reply for q in r.reply.requests
    )
    row = {
        "name": name,
        "servers": count,
        "via": how,
        "slots": slots,
        "concurrency": concurrency,
        "most_at_once": results.settings.get("most_at_once", 1),
        "runs": len(runs),
        "errors": sum(r.outcome == "error" for r in runs),
        "passed": sum(r.passed for r in runs),
        "wall_seconds": round(wall, 2),
        "runs_per_hour": round(len(runs) / wall * 3600, 1),
        "mean_run_seconds": round(sum(r.seconds for r in runs) / len(runs), 2),
        "prompt_tokens": sum(r.prompt_tokens for r in runs),
        "prompt_tokens_read": read,
        "generated_tokens": generated,
        "generated_per_second": round(generated / wall, 1),
        "runner_cpu_ms_per_run": round(cpu / len(runs) * 1000, 1),
        "turned_away_busy": results.settings.get("busy", 0),
        "moved": results.settings.get("moved", 0),
        "runs_by_server": {
            label: sum(r.server == label for r in runs) for label in sorted({r.server for r in runs})
        },
    }
    return row, results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=4, help="questions (of 8) to run, under 2 variants")
    parser.add_argument("--threads", type=int, default=1, help="the server's CPU threads")
    parser.add_argument("--slot-window", type=int, default=2048, help="each slot's window in tokens")
    parser.add_argument("--concurrency", default="2", help="the concurrencies to try beside sequential: 2,4")
    parser.add_argument("--fleet", default="", help="slots on each of two servers (servers=[...]): 1,2")
    parser.add_argument("--litellm", default="", help="slots on each of two servers behind LiteLLM: 1,2")
    parser.add_argument("--no-store", action="store_true", help=f"print only; do not write {RESULTS.name}")
    args = parser.parse_args(argv)
    levels = [int(n) for n in args.concurrency.split(",") if n.strip()]
    fleet = [int(n) for n in args.fleet.split(",") if n.strip()]
    behind = [int(n) for n in args.litellm.split(",") if n.strip()]
    rows: list[dict[str, Any]] = []
    base: Results | None = None
    with tempfile.TemporaryDirectory(prefix="bench-experiments-") as folder:
        workspace = Path(folder) / "shop"
        workspace.mkdir()
        for path, text in WORKSPACE.items():
            (workspace / path).write_text(text)
        logs = Path(folder)
        plan = [("sequential", 1, 1, 1, "one")]
        for n in levels:
            plan += [(f"c={n}", 1, n, n, "one"), (f"c=1 on {n} slots", 1, n, 1, "one")]
        plan += [(f"2 servers x {n}", 2, n, n, "fleet") for n in fleet]
        plan += [(f"LiteLLM 2 x {n}", 2, n, 2 * n, "litellm") for n in behind]
        for step in plan:
            row, results = measure(step, args, workspace, logs)
            if base is None:
                base = results
            same = [fingerprint(a) == fingerprint(base[a.question, a.variant]) for a in results.runs]
            row["identical_to_sequential"] = sum(same)
            row["differ"] = [r.key for r, s in zip(results.runs, same, strict=True) if not s]
            row["speedup"] = round(rows[0]["wall_seconds"] / row["wall_seconds"], 2) if rows else 1.0
            rows.append(row)
            same_count = f"{row['identical_to_sequential']}/{row['runs']}"
            print(f"{row['name']}: {row['wall_seconds']} s, {same_count} identical", flush=True)
    header = (
        f"{'configuration':<16} {'slots':>5} {'at once':>7} {'runs':>4} {'passed':>6} {'same':>5} "
        f"{'wall s':>7} {'runs/h':>7} {'speed-up':>8} {'gen tok/s':>9} {'s/run':>6} {'CPU ms/run':>10}"
    )
    print()
    print(header)
    for r in rows:
        print(
            f"{r['name']:<16} {r['slots']:>5} {r['most_at_once']:>7} {r['runs']:>4} {r['passed']:>6} "
            f"{r['identical_to_sequential']:>5} {r['wall_seconds']:>7} {r['runs_per_hour']:>7} "
            f"{r['speedup']:>8} {r['generated_per_second']:>9} {r['mean_run_seconds']:>6} "
            f"{r['runner_cpu_ms_per_run']:>10}"
        )
    report = {
        "questions": args.questions,
        "variants": [v.name for v in VARIANTS],
        "server_threads": args.threads,
        "slot_window": args.slot_window,
        "cores": os.cpu_count(),
        "note": (
            "Small on purpose: a shared 2-core machine with another benchmark running; the server had "
            f"{args.threads} thread(s). Read ratios, not absolute times."
        ),
        "rows": rows,
        "gpu_estimate_runs_per_hour": gpu_estimate(
            rows[0]["prompt_tokens_read"] / rows[0]["runs"], rows[0]["generated_tokens"] / rows[0]["runs"]
        ),
        "gpu_estimate_note": (
            "An estimate, not a measurement: llama.cpp's published batched-bench numbers (LLaMA 7B F16 on a "
            "GPU) applied to the tokens the sequential runs read and generated; key: sequences at once."
        ),
    }
    if args.no_store:
        return 0
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nGPU estimate (runs per hour by sequences at once): {report['gpu_estimate_runs_per_hour']}")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
