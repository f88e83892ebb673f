"""Asking servers for their window, recognising their kind, finding one: on fakes of each kind."""

from __future__ import annotations

import httpx
import pytest
from fakes import FakeLMStudio, FakeOllama, FakeOpenWebUI, FakeServer, FakeTextGen, FakeVLLM, Hosts

from twinny_magics.servers import (
    ProbeCache,
    ServerInfo,
    acontext_window,
    adiscover,
    aprobe_context_window,
    arecognise_kind,
    context_window,
    discover,
    kind_from_url,
    normalize_url,
    probe_context_window,
    recognise_kind,
    resolve_server,
    small_window_warning,
)
from twinny_magics.servers.kinds import parse_kind
from twinny_magics.servers.probe import amodel_metadata, parse_num_ctx, same_ollama_model
from twinny_magics.text_tokens import tokenizer_family


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def sync_client(server: object) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(server))  # type: ignore[arg-type]


def probe(
    server: object, url: str, model: str | None = None, kind: str | None = None, **options: object
) -> int | None:
    cache = options.pop("cache", None) or ProbeCache()
    with sync_client(server) as client:
        return probe_context_window(url, model, kind, client=client, cache=cache, **options)  # type: ignore[arg-type]


OLLAMA = "http://127.0.0.1:11434"


# --- Ollama -----------------------------------------------------------------------------------------


def test_ollama_reports_the_running_models_context_length() -> None:
    fake = FakeOllama(loaded={"qwen2.5-coder:7b": 8192, "llama3:latest": 4096})
    assert probe(fake, OLLAMA, "llama3:latest") == 4096
    assert probe(fake, OLLAMA, "qwen2.5-coder:7b") == 8192
    assert fake.count("/api/show") == 0


def test_ollama_names_without_a_tag_are_the_latest_tag() -> None:
    fake = FakeOllama(loaded={"llama3:latest": 4096})
    assert probe(fake, OLLAMA, "llama3") == 4096
    assert same_ollama_model("library/llama3", "library/llama3:latest")
    assert not same_ollama_model("llama3:8b", "llama3:latest")


def test_ollama_without_a_model_named_answers_for_the_loaded_one() -> None:
    assert probe(FakeOllama(loaded={"llama3:latest": 2048}), OLLAMA) == 2048


def test_ollama_model_not_loaded_is_read_from_its_modelfile_num_ctx() -> None:
    fake = FakeOllama(loaded={"other:latest": 4096}, modelfiles={"mistral:latest": 16384})
    assert probe(fake, OLLAMA, "mistral") == 16384
    assert fake.count("/api/ps") == 1
    assert fake.bodies("/api/show") == [{"model": "mistral"}]


def test_ollama_model_whose_modelfile_sets_no_num_ctx_is_unknown() -> None:
    assert probe(FakeOllama(modelfiles={"mistral:latest": None}), OLLAMA, "mistral") is None


def test_an_older_ollama_without_context_length_falls_back_to_the_modelfile() -> None:
    fake = FakeOllama(loaded={"llama3:latest": None}, modelfiles={"llama3:latest": 8192})
    assert probe(fake, OLLAMA, "llama3") == 8192


def test_num_ctx_is_read_from_the_parameters_text() -> None:
    assert parse_num_ctx('num_ctx                        4096\nstop "<|eot_id|>"') == 4096
    assert parse_num_ctx('stop "<|eot_id|>"') is None
    assert parse_num_ctx(None) is None


# --- the others ---------------------------------------------------------------------------------------


def test_lm_studio_reports_the_loaded_context_length_of_the_named_model() -> None:
    fake = FakeLMStudio(models={"qwen2.5-7b-instruct": 8192, "llama-3.2-3b": None})
    assert probe(fake, "http://127.0.0.1:1234", "qwen2.5-7b-instruct") == 8192
    assert probe(fake, "http://127.0.0.1:1234", "llama-3.2-3b") is None  # not loaded: it will not say
    assert probe(fake, "http://127.0.0.1:1234") == 8192  # the loaded one


def test_vllm_reports_max_model_len() -> None:
    fake = FakeVLLM(models={"Qwen/Qwen2.5-Coder-7B-Instruct": 16384})
    assert probe(fake, "http://127.0.0.1:8000", "Qwen/Qwen2.5-Coder-7B-Instruct") == 16384
    assert probe(fake, "http://127.0.0.1:8000") == 16384


def test_hosted_apis_are_never_asked() -> None:
    fake = FakeServer()
    assert probe(fake, "https://api.openai.com/v1", "gpt-4o-mini") is None
    assert probe(fake, "https://api.groq.com/openai/v1", "llama-3.1-8b-instant") is None
    assert probe(fake, "http://10.0.0.5:9999", kind="hosted") is None
    assert fake.requests == []


def test_servers_that_do_not_report_a_window_are_unknown() -> None:
    assert probe(FakeTextGen(), "http://127.0.0.1:5000") is None
    assert probe(FakeOpenWebUI(), "http://127.0.0.1:3000", kind="openwebui") is None


def test_the_api_key_is_sent_as_a_bearer_token() -> None:
    fake = FakeOllama(loaded={"llama3:latest": 4096}, api_key="sk-secret")
    assert probe(fake, OLLAMA, "llama3") is None  # refused without the key
    assert probe(fake, OLLAMA, "llama3", api_key="sk-secret") == 4096
    assert fake.requests[-1].headers["authorization"] == "Bearer sk-secret"


async def test_the_async_probe_asks_the_same_routes() -> None:
    fake = FakeOllama(modelfiles={"mistral:latest": 16384})
    async with httpx.AsyncClient(transport=httpx.MockTransport(fake)) as client:
        assert await aprobe_context_window(OLLAMA, "mistral", client=client, cache=ProbeCache()) == 16384
    assert [r.url.path for r in fake.requests] == ["/api/ps", "/api/show"]


# --- caching ----------------------------------------------------------------------------------------


def test_an_answer_is_cached_for_thirty_seconds() -> None:
    fake = FakeOllama(loaded={"llama3:latest": 4096})
    clock = Clock()
    cache = ProbeCache(clock=clock)
    assert probe(fake, OLLAMA, "llama3", cache=cache) == 4096
    clock.now += 29.9
    fake.loaded["llama3:latest"] = 8192
    assert probe(fake, OLLAMA, "llama3", cache=cache) == 4096
    assert fake.count("/api/ps") == 1
    clock.now += 0.2
    assert probe(fake, OLLAMA, "llama3", cache=cache) == 8192
    assert fake.count("/api/ps") == 2


def test_an_unknown_is_cached_for_three_seconds() -> None:
    fake = FakeOllama(modelfiles={"mistral:latest": None})
    clock = Clock()
    cache = ProbeCache(clock=clock)
    assert probe(fake, OLLAMA, "mistral", cache=cache) is None
    clock.now += 2.9
    assert probe(fake, OLLAMA, "mistral", cache=cache) is None
    assert fake.count("/api/ps") == 1
    clock.now += 0.2
    fake.loaded["mistral:latest"] = 6144
    assert probe(fake, OLLAMA, "mistral", cache=cache) == 6144
    assert fake.count("/api/ps") == 2


def test_answers_are_cached_per_model() -> None:
    fake = FakeOllama(loaded={"llama3:latest": 4096, "qwen:latest": 2048})
    cache = ProbeCache(clock=Clock())
    assert probe(fake, OLLAMA, "llama3", cache=cache) == 4096
    assert probe(fake, OLLAMA, "qwen", cache=cache) == 2048
    assert fake.count("/api/ps") == 2


# --- the defaults -----------------------------------------------------------------------------------


def test_the_planned_window_defaults_to_128k_hosted_and_32k_for_a_silent_local_server() -> None:
    with sync_client(FakeServer()) as client:
        assert context_window("https://api.openai.com/v1", client=client, cache=ProbeCache()) == 128_000
        assert context_window("http://127.0.0.1:5000", client=client, cache=ProbeCache()) == 32_768
    with sync_client(FakeOllama(loaded={"llama3:latest": 4096})) as client:
        assert context_window(OLLAMA, "llama3", client=client, cache=ProbeCache()) == 4096


async def test_the_async_planned_window_applies_the_same_defaults() -> None:
    async with httpx.AsyncClient(transport=httpx.MockTransport(FakeServer())) as client:
        assert await acontext_window("http://127.0.0.1:8080", client=client, cache=ProbeCache()) == 32_768


@pytest.mark.parametrize(
    ("kind", "advice"),
    [
        ("ollama", "PARAMETER num_ctx 8192"),
        ("ollama", "%%agent --window"),
        ("llamacpp", "-c 8192"),
        ("lmstudio", "context length"),
        (None, "num_ctx"),
    ],
)
def test_a_window_under_8k_warns_and_says_how_to_raise_it(kind: str | None, advice: str) -> None:
    warning = small_window_warning(4096, parse_kind(kind))
    assert warning is not None
    assert "4,096" in warning
    assert "about 8k" in warning
    assert "trimmed often" in warning
    assert advice in warning


def test_a_window_of_8k_or_more_gives_no_warning() -> None:
    assert small_window_warning(8192, "ollama") is None


# --- recognising the kind ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://localhost:11434", "ollama"),
        ("http://127.0.0.1:8080/v1", "llamacpp"),
        ("http://192.168.1.20:1234/v1", "lmstudio"),
        ("http://gateway.internal:4000", "litellm"),
        ("http://127.0.0.1:8000/v1", "vllm"),
        ("http://127.0.0.1:5000", "textgen"),
        ("https://api.openai.com/v1", "openai"),
        ("https://api.groq.com/openai/v1", "hosted"),
        ("https://openrouter.ai/api/v1", "hosted"),
        ("http://127.0.0.1:9999", None),
        ("https://192.168.1.5", None),
    ],
)
def test_the_kind_is_read_from_the_host_and_port(url: str, kind: str | None) -> None:
    assert kind_from_url(url) == kind


@pytest.mark.parametrize(
    ("fake", "kind"),
    [
        (FakeOllama(), "ollama"),
        (FakeLMStudio(models={"m": 4096}), "lmstudio"),
        (FakeVLLM(), "vllm"),
        (FakeOpenWebUI(), "openwebui"),
        (FakeTextGen(), "textgen"),
        (FakeServer(), None),
    ],
)
def test_the_kind_is_recognised_by_the_routes_a_server_answers(fake: FakeServer, kind: str | None) -> None:
    with sync_client(fake) as client:
        found = recognise_kind("http://127.0.0.1:9999", client=client, cache=ProbeCache())
    # A server answering none of the tells is taken as a generic OpenAI-compatible one.
    assert found == (kind or "compatible")


async def test_the_async_recogniser_asks_all_the_tells_at_once() -> None:
    fake = FakeOllama()
    async with httpx.AsyncClient(transport=httpx.MockTransport(fake)) as client:
        assert await arecognise_kind("http://127.0.0.1:9999", client=client, cache=ProbeCache()) == "ollama"
    assert len(fake.requests) == 7  # every tell once, /v1/models shared by two


def test_an_explicit_kind_is_taken_without_asking() -> None:
    fake = FakeOllama()
    with sync_client(fake) as client:
        assert recognise_kind("http://127.0.0.1:9999", "LM-Studio", client=client) == "lmstudio"
    assert fake.requests == []
    with pytest.raises(ValueError, match="unknown server kind"):
        recognise_kind("http://127.0.0.1:9999", "kobold")


def test_a_recognised_kind_is_cached() -> None:
    fake = FakeVLLM()
    cache = ProbeCache(clock=Clock())
    with sync_client(fake) as client:
        assert recognise_kind("http://127.0.0.1:9999", client=client, cache=cache) == "vllm"
        asked = len(fake.requests)
        assert recognise_kind("http://127.0.0.1:9999", client=client, cache=cache) == "vllm"
    assert len(fake.requests) == asked


def test_resolving_a_server_picks_its_loaded_model() -> None:
    with sync_client(
        FakeOllama(loaded={"qwen2.5-coder:7b": 8192}, modelfiles={"llama3:latest": None})
    ) as client:
        assert resolve_server(OLLAMA + "/v1", client=client, cache=ProbeCache()) == ServerInfo(
            OLLAMA, "ollama", "qwen2.5-coder:7b"
        )
    with sync_client(FakeLMStudio(models={"a": None, "b": 4096})) as client:
        assert resolve_server("http://127.0.0.1:1234", client=client, cache=ProbeCache()).model == "b"
    with sync_client(FakeOpenWebUI()) as client:
        info = resolve_server("http://127.0.0.1:3000", client=client, cache=ProbeCache())
    assert (info.kind, info.model, info.api_base) == ("openwebui", "llama3.1:8b", "http://127.0.0.1:3000/api")


def test_connecting_to_a_hosted_api_without_a_model_asks_for_one() -> None:
    from twinny_magics.errors import ModelNotFound
    from twinny_magics.servers import connect

    with pytest.raises(ModelNotFound, match="Name the model"):
        connect("https://api.openai.com/v1", api_key="sk-x")
    assert connect("https://api.openai.com/v1", "gpt-4o-mini", api_key="sk-x").model == "gpt-4o-mini"


def test_a_hosted_api_keeps_a_base_that_is_not_v1() -> None:
    info = resolve_server("https://generativelanguage.googleapis.com/v1beta/openai/", "gemini-2.0-flash")
    assert info.kind == "hosted"
    assert info.api_base == "https://generativelanguage.googleapis.com/v1beta/openai"
    assert resolve_server("https://api.openai.com/v1", "gpt-4o").api_base == "https://api.openai.com/v1"


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("127.0.0.1:11434", "http://127.0.0.1:11434"),
        ("http://0.0.0.0:11434/", "http://127.0.0.1:11434"),
        ("http://localhost:8080/v1/", "http://localhost:8080"),
        ("https://openrouter.ai/api/v1", "https://openrouter.ai/api"),
        ("http://[::1]:8080", "http://[::1]:8080"),
    ],
)
def test_urls_are_normalised_to_the_server_root(url: str, root: str) -> None:
    assert normalize_url(url) == root


# --- discovery --------------------------------------------------------------------------------------


def test_discovery_with_nothing_running_and_nothing_set_finds_nothing() -> None:
    hosts = Hosts({})
    with sync_client(hosts) as client:
        assert discover({}, client=client) is None
    assert set(hosts.refused) == {
        "127.0.0.1:11434",
        "127.0.0.1:8080",
        "127.0.0.1:1234",
        "127.0.0.1:4000",
        "127.0.0.1:8000",
        "127.0.0.1:5000",
    }


def test_discovery_finds_a_server_on_its_usual_port() -> None:
    hosts = Hosts({"127.0.0.1:1234": FakeLMStudio(models={"qwen2.5-7b-instruct": 8192})})
    with sync_client(hosts) as client:
        found = discover({}, client=client)
    assert found == ServerInfo("http://127.0.0.1:1234", "lmstudio", "qwen2.5-7b-instruct")


def test_discovery_prefers_ollama_host_from_the_environment() -> None:
    hosts = Hosts(
        {
            "127.0.0.1:11500": FakeOllama(loaded={"llama3:latest": 4096}),
            "127.0.0.1:1234": FakeLMStudio(models={"m": 4096}),
        }
    )
    with sync_client(hosts) as client:
        found = discover({"OLLAMA_HOST": "0.0.0.0:11500"}, client=client)
    assert found == ServerInfo("http://127.0.0.1:11500", "ollama", "llama3:latest")


def test_discovery_skips_an_ollama_host_that_does_not_answer() -> None:
    hosts = Hosts({"127.0.0.1:8000": FakeVLLM()})
    with sync_client(hosts) as client:
        found = discover({"OLLAMA_HOST": "127.0.0.1"}, client=client)
    assert found is not None
    assert found.kind == "vllm"
    assert hosts.refused["127.0.0.1:11434"] >= 1


def test_discovery_uses_openai_base_url_and_key() -> None:
    fake = FakeVLLM(models={"coder": 16384})
    hosts = Hosts({"127.0.0.1:9000": fake})
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9000/v1", "OPENAI_API_KEY": "sk-team"}
    with sync_client(hosts) as client:
        found = discover(env, client=client)
    assert found == ServerInfo("http://127.0.0.1:9000", "vllm", "coder", "sk-team")
    assert fake.requests[0].headers["authorization"] == "Bearer sk-team"


def test_discovery_with_only_an_openai_key_uses_openai_without_asking() -> None:
    hosts = Hosts({})
    with sync_client(hosts) as client:
        found = discover({"OPENAI_API_KEY": "sk-x"}, client=client)
    assert found == ServerInfo("https://api.openai.com", "openai", None, "sk-x")
    assert not hosts.refused


async def test_async_discovery_asks_the_usual_ports_in_parallel() -> None:
    hosts = Hosts({"127.0.0.1:8080": FakeVLLM(models={"local": 4096})})
    async with httpx.AsyncClient(transport=httpx.MockTransport(hosts)) as client:
        found = await adiscover({}, client=client)
    # Port 8080 is llama.cpp's usual one; a vLLM there is recognised by its routes.
    assert found == ServerInfo("http://127.0.0.1:8080", "vllm", "local")


# --- what the server says of its model (the tokenizer family when the name does not tell) ---------------


async def test_ollama_says_which_tokenizer_its_model_has() -> None:
    fake = FakeOllama(loaded={"team-coder:latest": 4096}, architectures={"team-coder:latest": "qwen2"})
    async with httpx.AsyncClient(transport=httpx.MockTransport(fake)) as client:  # type: ignore[arg-type]
        said = await amodel_metadata(OLLAMA, "team-coder", "ollama", client=client, cache=ProbeCache())
    assert said == {
        "general.architecture": "qwen2",
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": "qwen2",
        "family": "qwen2",
    }
    assert tokenizer_family("team-coder", said) == "qwen2"


async def test_lm_studio_says_its_models_architecture_and_others_say_nothing() -> None:
    studio = FakeLMStudio(models={"my-model": 4096})
    async with httpx.AsyncClient(transport=httpx.MockTransport(studio)) as client:  # type: ignore[arg-type]
        said = await amodel_metadata(
            "http://127.0.0.1:1234", "my-model", "lmstudio", client=client, cache=ProbeCache()
        )
    assert said == {"general.architecture": "qwen2"}
    vllm = FakeVLLM()
    async with httpx.AsyncClient(transport=httpx.MockTransport(vllm)) as client:  # type: ignore[arg-type]
        assert (
            await amodel_metadata("http://127.0.0.1:8000", "m", "vllm", client=client, cache=ProbeCache())
            == {}
        )


async def test_hostile_metadata_is_only_taken_as_strings_of_the_keys_asked_for() -> None:
    def show(request: httpx.Request) -> httpx.Response:
        if request.url.path != "/api/show":
            return httpx.Response(404)
        info = {"general.architecture": ["qwen2"], "tokenizer.ggml.pre": "<script>", "evil": "x" * 10_000}
        return httpx.Response(200, json={"model_info": info, "details": {"family": 7}})

    async with httpx.AsyncClient(transport=httpx.MockTransport(show)) as client:
        said = await amodel_metadata(OLLAMA, "m", "ollama", client=client, cache=ProbeCache())
    assert said == {"tokenizer.ggml.pre": "<script>"}
    assert tokenizer_family("m", said) is None  # not a family: SmolLM2's weights and the learned factor


def test_a_route_that_timed_out_on_a_server_that_answered_others_is_asked_again_longer() -> None:
    # A busy LiteLLM proxy answers /v1/models in time but /health/liveliness too late: that tell is asked
    # once more with a longer timeout instead of taking the proxy for a generic server.
    timeouts: list[float] = []

    def proxy(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/health/liveliness":
            timeouts.append(request.extensions["timeout"]["read"])
            if len(timeouts) == 1:
                raise httpx.ReadTimeout("busy", request=request)
            return httpx.Response(200, text='"I\'m alive!"')
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": [{"id": "m"}]})
        return httpx.Response(404)

    with httpx.Client(transport=httpx.MockTransport(proxy)) as client:
        assert recognise_kind("http://127.0.0.1:9999", client=client, cache=ProbeCache()) == "litellm"
    assert len(timeouts) == 2
    assert timeouts[1] >= 5.0 > timeouts[0]


def test_a_generic_server_that_answered_every_route_is_asked_once() -> None:
    fake = FakeServer()
    with sync_client(fake) as client:
        assert recognise_kind("http://127.0.0.1:9999", client=client, cache=ProbeCache()) == "compatible"
    assert len(fake.requests) == 7
