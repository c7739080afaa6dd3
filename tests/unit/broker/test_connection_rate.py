"""KIP-612's connection creation rates on virtual time: an address over its `connection_creation_rate`
is closed after its throttle (and not counted); connections over `max.connection.creation.rate`
are served late; the inter-broker listener is exempt from the broker-wide rate."""

from __future__ import annotations

from gregor.broker.connection_rate import ConnectionRates
from gregor.broker.network import Held
from gregor.metadata.client_quotas import CONNECTION_CREATION_RATE, IP


class _Image:
    def __init__(self, quotas) -> None:
        self.client_quotas = quotas


class _Images:
    def __init__(self, quotas) -> None:
        self.image = _Image(quotas)


def test_an_address_over_its_rate_is_closed_after_its_throttle():
    rates = ConnectionRates(_Images({((IP, "10.0.0.1"),): {CONNECTION_CREATION_RATE: 2.0},
                                     ((IP, None),): {CONNECTION_CREATION_RATE: 10.0}}),
                            max_rate=2**31 - 1, exempt_listener="BROKER", samples=2, window_ms=1000)
    assert [rates.admit("CLIENT", "10.0.0.1", 0) for _ in range(2)] == [None, None]
    assert rates.admit("CLIENT", "10.0.0.1", 0) == Held(0.5, close=True)  # 3/s over 2/s: (3-2)/2 × 1 s
    assert rates.admit("CLIENT", "10.0.0.1", 0) == Held(0.5, close=True)  # the refused one did not count
    assert rates.admit("CLIENT", "10.0.0.1", 2000) is None  # the window has passed
    assert all(rates.admit("CLIENT", "10.0.0.2", 0) is None for _ in range(10))  # the <default> address quota
    assert rates.admit("CLIENT", "10.0.0.2", 0) == Held(0.1, close=True)
    assert rates.throttled_ms == {"broker": 0, "ip": 1100}


def test_the_broker_wide_rate_serves_late_and_exempts_the_inter_broker_listener():
    rates = ConnectionRates(_Images({}), max_rate=5, exempt_listener="BROKER", samples=2, window_ms=1000)
    assert all(rates.admit("CLIENT", f"10.0.0.{i}", 0) is None for i in range(5))
    assert rates.admit("CLIENT", "10.0.0.9", 0) == Held(0.2)  # served after (6-5)/5 × 1 s
    assert rates.admit("broker", "10.0.0.9", 0) is None
