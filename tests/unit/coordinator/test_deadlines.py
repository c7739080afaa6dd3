"""The deadline queue that stands in for Kafka's purgatories."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gregor.coordinator.deadlines import DeadlineQueue


def test_pops_due_keys_in_deadline_order() -> None:
    queue: DeadlineQueue[str] = DeadlineQueue()
    queue.schedule("b", 20)
    queue.schedule("a", 10)
    queue.schedule("c", 20)
    assert queue.next_deadline() == 10
    assert queue.pop_due(9) is None
    assert [queue.pop_due(20), queue.pop_due(20), queue.pop_due(20), queue.pop_due(20)] == ["a", "b", "c", None]
    assert queue.next_deadline() is None


def test_reschedule_replaces_and_cancel_removes() -> None:
    queue: DeadlineQueue[str] = DeadlineQueue()
    queue.schedule("a", 10)
    queue.schedule("a", 30)
    queue.schedule("b", 20)
    queue.cancel("b")
    queue.cancel("missing")
    assert queue.deadline("a") == 30 and queue.deadline("b") is None
    assert queue.next_deadline() == 30
    assert queue.pop_due(25) is None
    assert queue.pop_due(30) == "a"
    assert len(queue) == 0


@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.integers(0, 100), st.booleans()), max_size=300))
def test_matches_a_dict_model(operations: list[tuple[str, int, bool]]) -> None:
    """Many reschedules (which compact the heap) never lose or resurrect a deadline."""
    queue: DeadlineQueue[str] = DeadlineQueue()
    model: dict[str, int] = {}
    for key, deadline, cancel in operations:
        if cancel:
            queue.cancel(key)
            model.pop(key, None)
        else:
            queue.schedule(key, deadline)
            model[key] = deadline
        assert queue.next_deadline() == min(model.values(), default=None)
    popped = []
    while (key := queue.pop_due(100)) is not None:
        popped.append((model.pop(key), key))
    assert not model
    assert [deadline for deadline, _ in popped] == sorted(deadline for deadline, _ in popped)
