"""The two ways the connector refuses to go on: a bad option, or data that is gone."""

from __future__ import annotations


class OptionError(ValueError):
    """An option is missing, malformed or conflicts with another; the message names the option."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"gregor source/sink option {option!r}: {problem}")
        self.option = option


class DataLossError(RuntimeError):
    """Offsets the query must read are no longer in the topic (retention, DeleteRecords, a topic
    deleted) and `failOnDataLoss` is true."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"{problem}. Some data may have been lost because it is not available in the "
                         f"topic any more. If you want your query to go on, set the source option "
                         f"failOnDataLoss to false (the skipped offsets are then logged as warnings)")
