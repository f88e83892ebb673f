"""The reply engine: one reply as parts that import one way and never hold the loop.

- ``settings``: how a reply runs (:class:`~.settings.LoopSettings`), one value saved whole.
- ``question``: the question, read once (about the workspace? asks for a change? its search words).
- ``rendering``: a conversation rendered for its requests, each message once (again when it changes).
- ``offer``: what a request offers (mode, grammar, tools, system prompt), and what ``auto`` learned.
- ``meter``: the estimate, the window and the plan; weighs each request once (counter and fit injected).
- ``telling``: the events and notices of a reply.
- ``reading``: one streamed request, the lazy grammar's continuation included.
- ``calls``: a step's calls, run once each, with the repeat guard.
- ``citations``, ``fenced_edits``, ``grounding``, ``supported``: the checks of an answer (its cited
  lines, a change written instead of made, quoted strings, what a small model's prose rests on).
- ``run``: the reply as a short state machine, its retries one layer per kind of refusal.

Each imports only those above it in this list (and the pure core, the contracts and the events);
:class:`twinny_magics.loop.Loop` holds a session's parts and runs each reply with them.
"""
