"""`gregor console`: a web console for operators of any Kafka-compatible cluster.

It reads the cluster only through Gregor's client (AdminClient, Consumer, Producer), never the
broker's internals, so it works the same against Gregor, tansu or Apache Kafka. The web layer
(Starlette, Jinja2, uvicorn) is the optional extra `gregor-streaming[console]`; this package's
modules that need it are imported only by `gregor.console.app`, and `gregor.cli.console` checks
for them first so that a missing extra is one readable line, not a traceback.

Modules, one concept each:

- `content` — a record's key, value and headers shown as text, pretty JSON or hex, truncated.
- `health` — a partition's state (online, under-replicated, under min ISR, offline) and counts.
- `brokers` — which brokers are up or down: the live list remembered, so a broker that went shows.
- `inspector` — the pages' data from AdminClient calls, as plain dataclasses.
- `sampler` — a background thread sampling log-end and committed offsets for the live charts.
- `records` — reading a partition from an offset or a timestamp, and producing a test record.
- `security` — Content-Security-Policy and same-origin checks for every response and form.
- `app` — the Starlette application: routes, templates, static assets.
"""
