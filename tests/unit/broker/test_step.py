"""Work deferred to the end of the current step (`gregor.broker.step`)."""

from __future__ import annotations

from gregor.broker.step import Step, at_end


def test_outside_a_step_work_runs_at_once():
    done: list[str] = []
    at_end(lambda: done.append("now"))
    assert done == ["now"]


def test_the_outermost_step_runs_its_deferred_work_in_order_when_it_ends():
    done: list[str] = []

    def first() -> None:
        done.append("first")
        at_end(lambda: done.append("deferred by first"))  # in the step's end: runs in it too

    def failing() -> None:
        raise RuntimeError("one answer failed")

    with Step():
        at_end(first)
        with Step():
            at_end(failing)
            at_end(lambda: done.append("second"))
        assert done == [], "an inner step's end is not the step's end"
    assert done == ["first", "second", "deferred by first"]
    at_end(lambda: done.append("after"))
    assert done[-1] == "after", "the step is over"
