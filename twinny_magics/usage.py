"""The usage gauge: what a reply, or a whole session, asked of the server — and what it cost.

The server's counts are what matter on a small machine and on a bill alike: a prompt token read from
the server's prompt cache costs almost nothing (llama.cpp reuses the state of the prompt it read last;
hosted APIs charge cached input at a discount), a token evaluated afresh costs a CPU second per hundred
or a fraction of a cent per thousand. So the gauge keeps the two apart, as the server reported them on
each request (`RequestRecord.cached_tokens`), next to the tokens generated, the requests and the time.

A price is never built in (prices change, and a local server is free): ``price`` is what the person says,
in money per million tokens — ``(input, output)``, or ``(input, output, cached input)`` for an API that
bills cached input apart; without the third, cached tokens cost the input price.

Pure: no I/O; formatting only, the display escapes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .events import Reply

#: ``(input, output)`` or ``(input, output, cached input)``, in money per million tokens.
Price = tuple[float, ...]


@dataclass(frozen=True)
class Usage:
    """What requests asked of the server, as it counted them (requests it did not count are apart)."""

    #: Prompt tokens the server evaluated afresh (its count less what it read from its cache).
    fresh: int = 0
    #: Prompt tokens the server read from its prompt cache.
    cached: int = 0
    #: Tokens the model generated.
    generated: int = 0
    requests: int = 0
    #: Requests the server sent no prompt count for (their tokens are in none of the sums).
    uncounted: int = 0
    #: Time taken, over the replies that were timed.
    seconds: float = 0.0
    #: Requests whose server said how much of the prompt it read from its cache (0 is an answer;
    #: a server that never says leaves fresh and cached apart unknown, not cached 0).
    cache_reported: int = 0

    @property
    def prompt(self) -> int:
        """Every prompt token the server counted, fresh and cached."""
        return self.fresh + self.cached

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.fresh + other.fresh,
            self.cached + other.cached,
            self.generated + other.generated,
            self.requests + other.requests,
            self.uncounted + other.uncounted,
            self.seconds + other.seconds,
            self.cache_reported + other.cache_reported,
        )


def check_price(price: Sequence[float] | None) -> Price | None:
    """``price`` as a tuple, checked: two or three numbers, none negative (None: no price)."""
    if price is None:
        return None
    values = tuple(price)
    if len(values) not in (2, 3) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in values
    ):
        raise ValueError(
            f"price {price!r}: give (input, output) or (input, output, cached input), in money per "
            "million tokens, e.g. (0.15, 0.60)."
        )
    return tuple(float(v) for v in values)


def reply_usage(reply: Reply) -> Usage:
    """One reply's usage, summed over its requests (a retried or continued request counts as its own)."""
    fresh = cached = generated = uncounted = reported = 0
    for request in reply.requests:
        generated += request.completion_tokens or 0
        if request.prompt_tokens is None:
            uncounted += 1
            continue
        # A server's cached count never exceeds its prompt count; one that says so is believed up to it.
        hit = min(request.cached_tokens or 0, request.prompt_tokens)
        reported += request.cached_tokens is not None
        cached += hit
        fresh += request.prompt_tokens - hit
    return Usage(fresh, cached, generated, len(reply.requests), uncounted, reply.seconds or 0.0, reported)


def session_usage(replies: Iterable[Reply]) -> Usage:
    """The usage of every reply, summed."""
    return sum((reply_usage(reply) for reply in replies), Usage())


def cost(usage: Usage, price: Price | None) -> float | None:
    """What ``usage`` costs at ``price`` (money per million tokens); None without a price."""
    if price is None:
        return None
    cached_price = price[2] if len(price) > 2 else price[0]
    return (usage.fresh * price[0] + usage.cached * cached_price + usage.generated * price[1]) / 1e6


def money(amount: float) -> str:
    """An amount with the precision a small one needs: ``0.0042``, ``1.23``."""
    return f"{amount:,.2f}" if amount >= 1 else f"{amount:.4f}" if amount >= 0.0001 else f"{amount:.2g}"


def usage_parts(usage: Usage, price: Price | None = None) -> list[str]:
    """The gauge as short phrases: ``1,200 prompt tokens afresh``, ``3,400 from the cache``, ``…``."""
    if usage.cache_reported:
        parts = [f"{usage.fresh:,} prompt tokens afresh", f"{usage.cached:,} from the cache"]
    else:
        parts = [f"{usage.prompt:,} prompt tokens (the server reports no cache)"]
    parts.append(f"{usage.generated:,} generated")
    if usage.uncounted:
        parts.append(f"{usage.uncounted} request{'s' if usage.uncounted != 1 else ''} not counted")
    amount = cost(usage, price)
    if amount is not None:
        parts.append(f"cost {money(amount)}" + (" (at least)" if usage.uncounted else ""))
    return parts


def usage_line(usage: Usage, price: Price | None = None) -> str:
    """The whole gauge in one line, requests and time included (for the session)."""
    requests = f"{usage.requests:,} request{'s' if usage.requests != 1 else ''}"
    return " · ".join([*usage_parts(usage, price), requests, f"{usage.seconds:.1f} s"])
