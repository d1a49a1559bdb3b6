"""MainThreadRunner: work runs on the serving thread, streams to the asking thread, stops when cancelled."""

import threading
import time

import pytest

from eagle3.runner import MainThreadRunner


def serve_while(runner: MainThreadRunner, client) -> dict:
    """Serve on this (the main) thread while `client(runner)` runs on another; its result or error."""
    result = {}

    def run():
        try:
            result["value"] = client(runner)
        except BaseException as error:
            result["error"] = error
        finally:
            runner.stop()

    thread = threading.Thread(target=run)
    thread.start()
    runner.serve_forever()
    thread.join(timeout=30)
    return result


def test_items_are_made_on_the_serving_thread():
    def work():
        for i in range(3):
            yield i, threading.current_thread() is threading.main_thread()

    result = serve_while(MainThreadRunner(serving=True), lambda runner: [item for batch in runner.stream(work) for item in batch])
    assert result["value"] == [(0, True), (1, True), (2, True)]


def test_errors_reach_the_caller_and_the_server_goes_on():
    def failing():
        yield 1
        raise ValueError("depth: 0 is out of range")

    def client(runner):
        with pytest.raises(ValueError, match="depth"):
            list(runner.stream(failing))
        return [item for batch in runner.stream(lambda: iter("ok")) for item in batch]

    assert serve_while(MainThreadRunner(serving=True), client)["value"] == ["o", "k"]


def test_closing_the_stream_stops_the_work():
    made, closed = [], threading.Event()

    def endless():
        try:
            while True:
                made.append(len(made))
                yield made[-1]
        finally:
            closed.set()

    def client(runner):
        stream = runner.stream(endless)
        first = next(stream)
        time.sleep(0.2)
        stream.close()  # what a cancelled request does
        assert closed.wait(10)
        return first

    assert serve_while(MainThreadRunner(serving=True), client)["value"] == [0]  # and `endless` was closed
    assert len(made) == 1  # the work runs only while the asking thread waits for it


def test_inline_without_a_server():
    assert list(MainThreadRunner(serving=False).stream(lambda: iter(range(3)))) == [[0], [1], [2]]
    assert list(MainThreadRunner(serving=False).stream(lambda: iter(range(3)), interval=60)) == [[0], [1, 2]]  # the first at once
