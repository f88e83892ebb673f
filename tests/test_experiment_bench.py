"""The task benchmark through the experiment runner at once: ``bench_tasks.py --concurrency N`` and
``--server`` given more than once (the runs spread over the servers). Scripted servers, no model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from twinny_magics.servers.scripted import ScriptedServer

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import bench_tasks  # noqa: E402 - the benchmarks folder is not a package
import tasks_toolz  # noqa: E402


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        sdist = tasks_toolz.cached_sdist()
    except tasks_toolz.SourceMissing as error:
        pytest.fail(str(error))
    return tasks_toolz.unpack(sdist, tmp_path_factory.mktemp("bench") / "workspace")


def test_the_task_benchmark_runs_at_once_over_two_servers_and_keeps_the_sequential_order(
    source: Path, tmp_path: Path
) -> None:
    chosen = [t for t in tasks_toolz.build_tasks(source) if t.name == "locate-countby"]
    configs = ["defaults", "none", "naive", "no-tools"]
    # Every request answered alike, so which run gets which reply does not matter.
    a, b = (ScriptedServer(["toolz/recipes.py"] * 20, window=100_000) for _ in range(2))
    results = bench_tasks.bench(
        chosen,
        configs,
        workspace=source,
        server_options={"servers": [a, b]},
        record=tmp_path / "record.json",
        concurrency=2,
    )
    assert [r.variant for r in results.runs] == configs
    assert [r.outcome for r in results.runs] == ["pass"] * 4, [r.why for r in results.runs]
    assert results.settings["concurrency"] == 4
    assert {r.server for r in results.runs} == {"server 1", "server 2"}
    assert a.requests
    assert b.requests


def test_the_command_line_takes_concurrency_and_the_server_more_than_once() -> None:
    args = bench_tasks.parser().parse_args(
        ["--server", "http://a.test:8080", "--server", "http://b.test:8080", "--concurrency", "auto"]
    )
    assert args.concurrency == "auto"
    with bench_tasks.serving(args) as (options, model):
        assert options == {"servers": ["http://a.test:8080", "http://b.test:8080"]}
        assert model == "http://a.test:8080"
    one = bench_tasks.parser().parse_args(["--server", "http://a.test:8080", "--concurrency", "3"])
    assert one.concurrency == 3
    with bench_tasks.serving(one) as (options, _):
        assert options == {"base_url": "http://a.test:8080"}
    assert bench_tasks.parser().parse_args([]).concurrency == 1
    with pytest.raises(SystemExit, match="--session"):
        bench_tasks.bench_from_args(bench_tasks.parser().parse_args(["--session", "--concurrency", "2"]))
