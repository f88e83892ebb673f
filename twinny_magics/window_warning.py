"""The warning for a window too small for tools, worded for the server's kind: how to raise it there.

A leaf (pure, no import of the package): the reply engine says it when it plans a window, and
``servers.kinds`` re-exports it beside the kinds it names.
"""

from __future__ import annotations

# Under this, tool use works poorly: the system prompt, tool list and a couple of results fill it.
SMALL_WINDOW = 8_192


def small_window_warning(window: int, kind: str | None = None) -> str | None:
    """A warning for a window under 8,192 tokens saying how to raise it for ``kind``, else None."""
    if window >= SMALL_WINDOW:
        return None
    how = {
        "ollama": (
            "for Ollama, make a Modelfile variant with `PARAMETER num_ctx 8192` (`ollama create`), "
            "or ask for it per reply with `%%agent --window 8192`"
        ),
        "llamacpp": "for llama.cpp, restart `llama-server` with `-c 8192` (or larger)",
        "lmstudio": "in LM Studio, raise the model's context length setting and load it again",
        "vllm": "for vLLM, start it with `--max-model-len 8192`",
        "litellm": "on the gateway, the server behind it needs a larger context (and `max_input_tokens`)",
    }.get(
        kind or "",
        "raise the server's context size if you can (Ollama: `PARAMETER num_ctx`, llama.cpp: `-c`)",
    )
    return (
        f"The model's context window is {window:,} tokens. Tools need about 8k to work well, so older "
        f"tool results will be trimmed often. To raise it: {how}."
    )
