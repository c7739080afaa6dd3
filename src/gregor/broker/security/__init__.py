"""Listener security: TLS contexts, client-certificate principals, SASL authentication.

Each listener's protocol (`listener.security.protocol.map`) and its keys, global or under
`listener.name.<listener>.`, are resolved once at start (`listener_security`); the network edge
applies the result (`ListenerTransport`). SASL mechanisms are sans-IO exchanges driven by the
per-connection authenticator (`sasl_authenticator`).
"""
