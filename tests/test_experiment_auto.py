"""``concurrency="auto"`` beyond llama.cpp: a LiteLLM proxy's deployments, and kinds that do not say.

LiteLLM's ``/model/info`` lists each deployment of a model name with its ``litellm_params``; its
``max_parallel_requests`` is how many the proxy sends that deployment at once. Ollama and vLLM say no
such number in any route they answer (their fakes in ``tests/fakes`` have the documented shapes), so
they get one. The last test asks the real LiteLLM proxy in front of two real llama.cpp servers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakes import FakeOllama, FakeVLLM

from twinny_magics.experiment import Question, Variant, run
from twinny_magics.experiment.slots import MAX_SLOTS, said_parallel, server_slots
from twinny_magics.servers.connect import ConnectedServer
from twinny_magics.servers.kinds import ServerInfo


class FakeProxy:
    """LiteLLM's ``/model/info`` as given (raw JSON text, so hostile numbers stay hostile)."""

    def __init__(self, body: str, status: int = 200) -> None:
        self.body, self.status = body, status
        self.asked: list[tuple[str, str | None]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.asked.append((request.url.path, request.headers.get("authorization")))
        if request.url.path != "/model/info":
            return httpx.Response(404, json={"detail": "Not Found"})
        return httpx.Response(self.status, content=self.body.encode())


def deployment(name: str, parallel: str | None) -> str:
    params = '{"model": "openai/smollm2", "api_base": "http://127.0.0.1:1/v1"'
    params += f', "max_parallel_requests": {parallel}}}' if parallel is not None else "}"
    return f'{{"model_name": "{name}", "litellm_params": {params}, "model_info": {{"id": "x"}}}}'


def info(*entries: str) -> str:
    return '{"data": [' + ", ".join(entries) + "]}"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (info(deployment("smollm2", "2"), deployment("smollm2", "3")), 5),  # the sum of the deployments
        (info(deployment("smollm2", "4"), deployment("other", "8")), 4),  # only the model's own
        (info(deployment("SmolLM2", "2")), 2),  # names compare as the probe compares them
        (info(deployment("smollm2", None), deployment("smollm2", None)), 2),  # 1 each when not said
        (info(deployment("smollm2", None)), 1),
        (info(deployment("smollm2", '"2"')), 2),
        (info(deployment("smollm2", "0")), 1),
        (info(deployment("smollm2", "-5")), 1),
        (info(deployment("smollm2", "true")), 1),
        (info(deployment("smollm2", "2.5")), 1),
        (info(deployment("smollm2", '"many"')), 1),
        (info(deployment("smollm2", "1e400")), MAX_SLOTS),  # huge: capped
        (info(deployment("smollm2", "9" * 5000)), MAX_SLOTS),
        (info(*[deployment("smollm2", "64")] * 3), MAX_SLOTS),
        (info(*[deployment("smollm2", None)] * 10_000), MAX_SLOTS),
        (info(deployment("other", "8")), 1),  # the model is not there
        ('{"data": {"smollm2": 4}}', 1),
        ('{"data": [1, "two", null]}', 1),
        ('{"data": [{"model_name": "smollm2", "litellm_params": "max_parallel_requests=9"}]}', 1),
        ("[]", 1),
        ("{not json", 1),
        ("", 1),
    ],
)
def test_auto_on_litellm_adds_its_deployments_parallel_requests_and_a_hostile_answer_is_one_or_a_cap(
    body: str, expected: int
) -> None:
    proxy = FakeProxy(body)
    server = ConnectedServer(ServerInfo("http://proxy.test:4000", "litellm", "smollm2", "sk-team"))
    with httpx.Client(transport=httpx.MockTransport(proxy)) as client:
        assert server_slots(server, client) == expected
    assert proxy.asked == [("/model/info", "Bearer sk-team")]


def test_a_proxy_that_refuses_model_info_gets_one() -> None:
    proxy = FakeProxy('{"error": {"message": "Authentication Error"}}', status=401)
    server = ConnectedServer(ServerInfo("http://proxy.test:4000", "litellm", "smollm2"))
    with httpx.Client(transport=httpx.MockTransport(proxy)) as client:
        assert server_slots(server, client) == 1


def test_without_a_model_name_every_deployment_counts() -> None:
    body = json.loads(info(deployment("a", "2"), deployment("b", "3")))
    assert said_parallel(body, None) == 5
    assert said_parallel(body, "a") == 2
    assert said_parallel({"data": []}, None) is None


def test_ollama_and_vllm_say_no_parallel_count_in_any_route_so_auto_is_one_and_asks_nothing() -> None:
    ollama = FakeOllama(loaded={"llama3:latest": 8192})
    vllm = FakeVLLM()
    for fake, info_ in [
        (ollama, ServerInfo("http://ollama.test:11434", "ollama", "llama3:latest")),
        (vllm, ServerInfo("http://vllm.test:8000", "vllm", "Qwen/Qwen2.5-Coder-7B-Instruct")),
    ]:
        with httpx.Client(transport=httpx.MockTransport(fake)) as client:
            assert server_slots(ConnectedServer(info_), client) == 1
        assert fake.requests == []


# -- the real LiteLLM proxy ------------------------------------------------------------------------------


@pytest.mark.server
def test_auto_through_the_real_litellm_proxy_runs_as_many_as_its_two_deployments_take(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llama_server: Any, disposable_llama_server: Any
) -> None:
    import fixtures_servers

    backends = [llama_server, disposable_llama_server]
    config = {
        "model_list": [
            {
                "model_name": "smollm2",
                "litellm_params": {
                    "model": "openai/smollm2",
                    "api_base": backend.base_url + "/v1",
                    "api_key": "none",
                    "max_parallel_requests": parallel,
                },
                "model_info": {"max_input_tokens": 2048},
            }
            for backend, parallel in zip(backends, (1, 2), strict=True)
        ],
        "general_settings": {"master_key": fixtures_servers.GATEWAY_KEY},
        "litellm_settings": {"telemetry": False, "num_retries": 0},
    }
    monkeypatch.setattr(fixtures_servers, "gateway_config", lambda backend: json.dumps(config))
    gateway = fixtures_servers.start_gateway(llama_server, tmp_path)
    try:
        server = ConnectedServer(ServerInfo(gateway.base_url, "litellm", "smollm2", gateway.api_key))
        assert server_slots(server) == 3
        shop = tmp_path / "shop"
        shop.mkdir()
        (shop / "app.py").write_text("PORT = 8000\n")
        asked = [Question(f"Say {word}.", name=word) for word in ("one", "two", "three")]
        results = run(
            asked,
            [Variant("v", steps=1, extra={"n_predict": 16})],
            workspace=shop,
            base_url=gateway.base_url,
            kind="litellm",
            model="smollm2",
            api_key=gateway.api_key,
            concurrency="auto",
            progress="off",
        )
    finally:
        fixtures_servers.stop_group(gateway)
    assert results.settings["concurrency"] == 3
    assert [r.outcome for r in results.runs] == ["ran"] * 3, [r.why for r in results.runs]
    assert {r.server for r in results.runs} == {gateway.base_url}
