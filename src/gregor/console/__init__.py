"""`gregor console`: a web console for operators of any Kafka-compatible cluster.

It reads the cluster only through Gregor's client (AdminClient, Consumer, Producer), never the
broker's internals, so it works the same against Gregor, tansu or Apache Kafka. The web layer
(Starlette, Jinja2, uvicorn) is the optional extra `gregor-streaming[console]`: only `app` and the
modules it imports (`rendering`, the page modules, `security`) need it, and `gregor.cli.web_console`
checks for it first, so that a missing extra is one readable line, not a traceback.

Modules, one concept each:

- `content` — a record's key, value and headers shown as text, pretty JSON or hex, truncated.
- `health` — a partition's state (online, under-replicated, under min ISR, offline) and counts.
- `brokers` — which brokers are up or down: the live list remembered, so a broker that went shows.
- `inspector` — the pages' data from AdminClient calls, as plain dataclasses.
- `sampler` — a background thread sampling log-end and committed offsets for the live charts.
- `records` — reading a partition from an offset or a timestamp, and producing a test record.
- `reset` — offset reset plans, with the scenarios of `consumer-groups --reset-offsets`.
- `forms` — form fields checked and converted, one readable line per mistake.
- `security` — Content-Security-Policy and same-origin checks for every response and form.
- `services` — the settings and the clients the pages share.
- `rendering` — templates, the status line, and the pages shown when the cluster cannot answer.
- `topic_pages`, `group_pages` — the handlers of the topic and consumer-group pages.
- `app` — the Starlette application: routes, the cluster page, static assets.
"""
