"""The team gateway: a real LiteLLM proxy (offline, master key) in front of the real llama.cpp server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fixtures_servers import RunningServer

from twinny_magics.errors import AuthRefused, ModelNotFound, PromptTooLong
from twinny_magics.servers import (
    ChatEvent,
    ChatRequest,
    ConnectedServer,
    Finish,
    OpenAIChatServer,
    ProbeCache,
    ServerInfo,
    TextChunk,
    Usage,
    probe_context_window,
    recognise_kind,
    resolve_server,
)

pytestmark = pytest.mark.server

HELLO = [{"role": "user", "content": "Say hello in three words."}]


async def collect(events: AsyncIterator[ChatEvent]) -> list[ChatEvent]:
    return [event async for event in events]


def test_the_gateway_reports_max_input_tokens_when_asked_with_its_key(gateway: RunningServer) -> None:
    assert (
        probe_context_window(
            gateway.base_url, "smollm2", "litellm", api_key=gateway.api_key, cache=ProbeCache()
        )
        == 2048
    )
    # Without the key the gateway will not say: the planner then uses the local default.
    assert probe_context_window(gateway.base_url, "smollm2", "litellm", cache=ProbeCache()) is None


def test_the_gateway_is_recognised_by_its_routes_and_its_model_picked(gateway: RunningServer) -> None:
    assert recognise_kind(gateway.base_url, cache=ProbeCache()) == "litellm"
    info = resolve_server(gateway.base_url, api_key=gateway.api_key, cache=ProbeCache())
    assert (info.kind, info.model) == ("litellm", "smollm2")


async def test_a_reply_streams_through_the_gateway_with_usage(gateway: RunningServer) -> None:
    async with httpx.AsyncClient(trust_env=False) as client:
        server = OpenAIChatServer(gateway.info, client)
        events = await collect(server.stream(ChatRequest(HELLO, max_tokens=8, temperature=0)))
    assert "".join(e.text for e in events if isinstance(e, TextChunk)).strip()
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.prompt_tokens is not None
    assert usage.prompt_tokens > 10
    assert isinstance(events[-1], Finish)


async def test_the_gateways_context_window_error_becomes_prompt_too_long_with_the_count(
    gateway: RunningServer,
) -> None:
    async with httpx.AsyncClient(trust_env=False) as client:
        server = OpenAIChatServer(gateway.info, client)
        with pytest.raises(PromptTooLong) as caught:
            await collect(
                server.stream(ChatRequest([{"role": "user", "content": "word " * 3000}], max_tokens=4))
            )
    assert caught.value.window == 2048
    assert caught.value.prompt_tokens is not None
    assert caught.value.prompt_tokens > 2048
    assert "ContextWindowExceededError" in (caught.value.body or "")


async def test_a_wrong_key_at_the_gateway_is_auth_refused(gateway: RunningServer) -> None:
    info = ServerInfo(gateway.base_url, "litellm", "smollm2", "sk-wrong")
    async with httpx.AsyncClient(trust_env=False) as client:
        with pytest.raises(AuthRefused):
            await collect(OpenAIChatServer(info, client).stream(ChatRequest(HELLO, max_tokens=4)))
        no_key = ServerInfo(gateway.base_url, "litellm", "smollm2")
        with pytest.raises(AuthRefused):
            await collect(OpenAIChatServer(no_key, client).stream(ChatRequest(HELLO, max_tokens=4)))


async def test_a_model_the_gateway_does_not_route_is_model_not_found(gateway: RunningServer) -> None:
    info = ServerInfo(gateway.base_url, "litellm", "gpt-9", gateway.api_key)
    async with httpx.AsyncClient(trust_env=False) as client:
        with pytest.raises(ModelNotFound, match="gpt-9"):
            await collect(OpenAIChatServer(info, client).stream(ChatRequest(HELLO, max_tokens=4)))


async def test_a_connected_gateway_plans_with_the_admins_max_input_tokens(gateway: RunningServer) -> None:
    server = ConnectedServer(gateway.info, cache=ProbeCache())
    assert await server.context_window() == 2048
    assert await server.tokenize("hello") is None  # LiteLLM has no exact tokenizer route


async def test_the_gateway_says_which_model_its_name_stands_for(gateway: RunningServer) -> None:
    # A team gateway's names are aliases; the model behind one tells its tokenizer family.
    from twinny_magics.servers.probe import amodel_metadata

    said = await amodel_metadata(
        gateway.base_url, "smollm2", "litellm", api_key=gateway.api_key, cache=ProbeCache()
    )
    assert said["model"].startswith("openai/")
    assert gateway.api_key not in str(said)
    # Without the key the gateway will not say.
    assert await amodel_metadata(gateway.base_url, "smollm2", "litellm", cache=ProbeCache()) == {}
