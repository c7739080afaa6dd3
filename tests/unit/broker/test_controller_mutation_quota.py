"""KIP-599's token bucket on virtual time: a burst of quota × window, refilled at the quota,
strict requests refused only once the bucket is below zero, permissive ones always counted."""

from __future__ import annotations

from gregor.broker.controller_mutation_quota import ControllerMutationQuota


class _Lookup:
    def quota(self, user: str, client_id: str):
        return (2.0, ("", client_id)) if client_id == "limited" else None


def test_the_bucket_refuses_strict_requests_only_below_zero():
    quota = ControllerMutationQuota(_Lookup(), burst_s=5)  # burst 10
    assert quota.admit("u", "limited", 12, strict=True, now_ms=0)  # 10 → -2
    assert quota.throttle_ms("u", "limited", 0) == 1000  # 2 tokens at 2 per second
    assert not quota.admit("u", "limited", 1, strict=True, now_ms=500)  # -1: refused, nothing taken
    assert quota.admit("u", "limited", 4, strict=False, now_ms=500)  # permissive: -5
    assert quota.throttle_ms("u", "limited", 500) == 2500
    assert quota.admit("u", "limited", 1, strict=True, now_ms=3000)  # refilled to 0 at 3000
    assert quota.throttle_ms("u", "limited", 100_000) == 0  # refills up to the burst only
    assert quota.admit("u", "limited", 10, strict=True, now_ms=100_000)  # the full burst: 0 left
    assert quota.admit("u", "limited", 1, strict=True, now_ms=100_000)  # 0 is not below zero: -1
    assert not quota.admit("u", "limited", 1, strict=True, now_ms=100_000)
    assert quota.admit("u", "free", 1000, strict=True, now_ms=0) and quota.throttle_ms("u", "free", 0) == 0
