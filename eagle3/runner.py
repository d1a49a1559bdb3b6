"""Run decoding on the process's main thread while a server streams its events from another.

Why: with PyTorch's OpenMP backend, parallel CPU kernels run markedly slower when they
are started from a thread other than the first one to use OpenMP (libgomp counts every
thread pool it manages and, once they outnumber the cores, makes idle workers sleep
instead of spin; docs/design.md has the measurements). Web servers such as Gradio call
handlers from worker threads, which would make every speed they show wrong. So the server thread hands the decode to the main thread.

The two threads take turns, like a generator: the work runs only while the asking thread
waits for its next batch, so the server's own Python (rendering, sending) never competes
with decoding for the GIL and stays out of the decoder's timings.

    runner = MainThreadRunner(serving=True)
    # server thread:  for events in runner.stream(lambda: decode(...), 0.1): ...
    # main thread:    runner.serve_forever()

With serving=False (tests, notebooks, GPUs), `stream` runs the work inline instead.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

_DONE = object()


def batches(items: Iterator, interval: float) -> Iterator[list]:
    """The items in lists, one list per `interval` seconds at most (the first item at once)."""
    batch, last = [], float("-inf")
    for item in items:
        batch.append(item)
        if time.perf_counter() - last >= interval:
            yield batch
            batch, last = [], time.perf_counter()
    if batch:
        yield batch


def _get(q: queue.SimpleQueue):
    while True:
        try:
            return q.get(timeout=0.5)  # an untimed get would not let Ctrl+C through on the main thread
        except queue.Empty:
            pass


@dataclass
class _Job:
    make: Callable[[], Iterator]
    interval: float
    asks: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)  # True: the next batch; False: stop
    replies: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)  # a batch, an exception or _DONE


class MainThreadRunner:
    """One job at a time on the thread that calls `serve_forever`."""

    def __init__(self, serving: bool):
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.serving = serving  # fixed up front: a request that comes before the loop starts waits for it

    def stream(self, make: Callable[[], Iterator], interval: float = 0.0) -> Iterator[list]:
        """`batches(make(), interval)`, made on the serving thread. Closing this iterator (a
        cancelled request) stops the work; an exception in the work is raised here."""
        if not self.serving:
            yield from batches(make(), interval)
            return
        job = _Job(make, interval)
        self._jobs.put(job)
        try:
            while True:
                job.asks.put(True)
                reply = job.replies.get()
                if reply is _DONE:
                    return
                if isinstance(reply, BaseException):
                    raise reply
                yield reply
        finally:
            job.asks.put(False)

    def serve_forever(self) -> None:
        """Run jobs until `stop` is called; call it from the main thread."""
        while (job := _get(self._jobs)) is not None:
            work = None
            try:
                work = batches(job.make(), job.interval)
                while _get(job.asks):
                    job.replies.put(next(work))
            except StopIteration:
                job.replies.put(_DONE)
            except Exception as error:  # reported to the request that asked, not to the server
                job.replies.put(error)
            finally:
                if work is not None:
                    work.close()

    def stop(self) -> None:
        self._jobs.put(None)
