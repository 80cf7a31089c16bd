"""Steering through the run store: a message sent into a run from any process.

``RunStore.steer(run_id, text)`` (and ``python -m anvia_notebook steer``) writes a ``queued`` row
of the ``steering`` table (in :mod:`._steer_write`); the process that runs the run hears of it
from its store watcher (within :data:`~anvia_notebook.store._store.POLL_INTERVAL`), takes it
into the run's state and marks it ``taken``. A run that has ended, or has decided to end
(``runs.steering_closed``), refuses it with :class:`RunEndedError`. The check and the write are
one transaction, and so is the run's closing (both take the store's write lock), so a message is
either refused or delivered, never silently left behind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._steering import SteeringItem
from ..messages import Message
from ._steer_write import write_steering

__all__ = ["SteeringRows"]

SteeringCallback = Callable[[list[SteeringItem]], None]


class SteeringRows:
    """The steering part of :class:`~anvia_notebook.store.RunStore` (a mixin: it uses the
    store's ``_q``, ``_backend``, ``_watch_lock`` and watcher)."""

    _q: Callable[..., list[tuple[Any, ...]]]
    _backend: Any
    location: str
    _watch_lock: Any
    _steering_watched: dict[str, SteeringCallback]
    _watch_generation: int

    def _ensure_watcher(self) -> None:  # pragma: no cover - RunStore's
        raise NotImplementedError

    def steer(self, run_id: str, text: str) -> str:
        """Send ``text`` to the run ``run_id`` as a user message, from any process: the run
        takes it within a second and delivers it as ``request.steer(text)`` does (after the
        current turn's tool results, or before it would end). Returns the message's id.

        Raises :class:`RunNotFoundError` for an unknown run, :class:`RunEndedError` for a run
        that has completed, failed or been cancelled, ``ValueError`` for a blank text. A run
        whose process is gone (``interrupted``) keeps the message until it is resumed.
        """
        return write_steering(self._backend, self._sql, self.location, run_id, text)[0]

    def queued_steering(self, run_id: str) -> list[SteeringItem]:
        """The messages sent to ``run_id`` through the store that it has not taken, in order."""
        rows = self._q(
            "SELECT id, message FROM steering WHERE run_id = ? AND status = 'queued' ORDER BY seq",
            (run_id,),
        )
        return [_item(row) for row in rows]

    def steering_taken(self, run_id: str, ids: Sequence[str]) -> None:
        """The run has these messages in its stored state: they are not handed over again."""
        if ids:
            self._backend.executemany(
                self._sql("UPDATE steering SET status = 'taken' WHERE id = ? AND run_id = ?"),
                [(item_id, run_id) for item_id in ids],
            )

    def close_steering(self, run_id: str) -> list[SteeringItem]:
        """The run is about to end: refuse later messages, unless some are queued (returned,
        and the run stays open: it takes them and goes on)."""
        with self._backend.transaction():
            queued = self.queued_steering(run_id)
            if not queued:
                self._q("UPDATE runs SET steering_closed = 1 WHERE run_id = ?", (run_id,))
        return queued

    def end_steering(self, run_id: str) -> None:
        """The run is ending (stopped, failed, or done): refuse later messages, as for a run
        that has ended (what is queued stays unread: the run will not take another turn)."""
        self._q("UPDATE runs SET steering_closed = 1 WHERE run_id = ?", (run_id,))

    def watch_steering(self, run_id: str, callback: SteeringCallback) -> None:
        """Call ``callback(items)`` (on a background thread) when messages are queued for
        ``run_id`` by any process (maybe again for the same ones until they are taken)."""
        with self._watch_lock:
            self._steering_watched[run_id] = callback
            self._watch_generation += 1
        self._ensure_watcher()

    def unwatch_steering(self, run_id: str) -> None:
        with self._watch_lock:
            self._steering_watched.pop(run_id, None)

    def _deliver_steering(self, watched: dict[str, SteeringCallback]) -> None:
        ids = list(watched)
        marks = ", ".join("?" for _ in ids)
        rows = self._q(
            f"SELECT run_id, id, message FROM steering WHERE run_id IN ({marks}) "
            "AND status = 'queued' ORDER BY run_id, seq",
            ids,
        )
        by_run: dict[str, list[SteeringItem]] = {}
        for run_id, *row in rows:
            by_run.setdefault(run_id, []).append(_item(row))
        for run_id, items in by_run.items():
            callback = watched.get(run_id)
            if callback is not None:
                callback(items)

    def _sql(self, sql: str) -> str:  # pragma: no cover - RunStore's
        raise NotImplementedError


def _item(row: Sequence[Any]) -> SteeringItem:
    return SteeringItem(id=row[0], message=Message.model_validate_json(row[1]))
