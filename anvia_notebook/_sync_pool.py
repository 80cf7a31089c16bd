"""Worker threads for sync tools: bounded, and never starved by calls a stopped run left behind.

A sync ``execute`` cannot be interrupted: when its run is stopped the thread keeps running until
the function returns. On the event loop's shared default executor such a call keeps a worker
busy, so a handful of stopped calls make every later sync tool (and anything else using
``asyncio.to_thread``) wait. This executor gives sync tools their own threads instead: at most
``max_workers`` *live* calls run at once (more wait their turn), and a call its caller
abandoned stops counting against that bound while its thread finishes on its own; the next call
gets another thread.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["GeneratorExitRaised", "StopIterationRaised", "SyncJob", "SyncToolExecutor"]

_names = itertools.count(1)


class StopIterationRaised(RuntimeError):
    """The function raised ``StopIteration`` (a ``next()`` that found nothing left), which is
    its ``__cause__``: asyncio refuses to put a ``StopIteration`` in a future, so unwrapped the
    call waiting for it never ended."""


class GeneratorExitRaised(RuntimeError):
    """The function raised ``GeneratorExit``, which is its ``__cause__``: unwrapped, the future
    would throw it into the coroutine awaiting it, which Python takes for closing that
    coroutine (its ``RuntimeError: coroutine ignored GeneratorExit`` was the run's error)."""


class SyncJob:
    """One submitted call: its ``future`` and whether it still counts against the bound."""

    __slots__ = ("counted", "fn", "future")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.future: Future[Any] = Future()
        self.counted = False


class SyncToolExecutor:
    """Runs sync tool calls on worker threads, at most ``max_workers`` live calls at once.

    ``max_workers`` defaults to the size of asyncio's default executor (``min(32, cpus + 4)``).
    Idle threads are reused (and end after ``idle_timeout`` seconds); a call whose caller gave up
    keeps its thread busy, so the next call gets another thread: an abandoned call never holds a
    slot that a new call needs. Threads are daemons.
    """

    def __init__(self, max_workers: int | None = None, idle_timeout: float = 60.0) -> None:
        if max_workers is None:
            max_workers = min(32, (os.cpu_count() or 1) + 4)
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers = max_workers
        self.idle_timeout = idle_timeout
        self._lock = threading.Lock()
        self._waiting: deque[SyncJob] = deque()  # submitted, over the bound for now
        self._ready: queue.SimpleQueue[SyncJob] = queue.SimpleQueue()  # for idle threads
        self._live = 0
        #: Threads waiting for a job that no job has been handed to yet.
        self._idle = 0

    @property
    def live(self) -> int:
        """Calls running now that still count against the bound (abandoned ones do not)."""
        with self._lock:
            return self._live

    def submit(self, fn: Callable[[], Any]) -> SyncJob:
        """Queue ``fn``; it starts at once unless ``max_workers`` live calls are running."""
        job = SyncJob(fn)
        with self._lock:
            self._waiting.append(job)
            self._start_waiting()
        return job

    def abandon(self, job: SyncJob) -> bool:
        """The caller no longer waits for ``job``.

        A job that has not started is cancelled and never runs (returns True). A running one
        keeps its thread until ``fn`` returns but no longer counts against the bound, so a
        waiting call can start now (returns False).
        """
        if self.cancel_waiting(job):
            return True
        self._release(job)
        return False

    def cancel_waiting(self, job: SyncJob) -> bool:
        """Cancel ``job`` if it has not started (it never runs then); False once it runs."""
        if not job.future.cancel():
            return False
        with self._lock:
            if job in self._waiting:
                self._waiting.remove(job)
        return True

    def _start_waiting(self) -> None:
        """Start waiting jobs while the bound allows (the lock is held)."""
        while self._waiting and self._live < self.max_workers:
            job = self._waiting.popleft()
            if not job.future.set_running_or_notify_cancel():
                continue  # cancelled while it waited
            self._live += 1
            job.counted = True
            if self._idle > 0:
                self._idle -= 1  # that idle thread's turn: it takes the job from the queue
                self._ready.put(job)
            else:
                thread = threading.Thread(
                    target=self._work,
                    args=(job,),
                    name=f"anvia-sync-tool-{next(_names)}",
                    daemon=True,
                )
                thread.start()

    def _work(self, job: SyncJob | None) -> None:
        while job is not None:
            self._run(job)
            job = self._next_job()

    def _next_job(self) -> SyncJob | None:
        """Wait for the next job, or None when idle for ``idle_timeout`` (the thread ends)."""
        with self._lock:
            self._idle += 1
        try:
            return self._ready.get(timeout=self.idle_timeout)
        except queue.Empty:
            with self._lock:
                if self._idle > 0:  # nobody handed this thread a job: it may end
                    self._idle -= 1
                    return None
            return self._ready.get()  # a job was handed over just now: take it

    def _run(self, job: SyncJob) -> None:
        try:
            try:
                result = job.fn()
            except StopIteration as stop:
                raise StopIterationRaised(str(stop)) from stop
            except GeneratorExit as exit:
                raise GeneratorExitRaised(str(exit)) from exit
        except BaseException as error:  # handed to the caller, as ThreadPoolExecutor does
            job.future.set_exception(error)
        else:
            job.future.set_result(result)
        finally:
            self._release(job)

    def _release(self, job: SyncJob) -> None:
        with self._lock:
            if job.counted:
                job.counted = False
                self._live -= 1
            self._start_waiting()
