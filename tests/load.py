"""Load test for the app: many gradio_client clients against `python app.py` on 127.0.0.1.

    python -m tests.load --clients 20 --requests 3 --json runs/load.json
    python -m tests.load --max-queue 4 --json runs/load_small_queue.json

Starts the app on a free port, warms it up with one request, then lets every client send its
requests one after the other, all clients at once. Each request either completes (both
decoders ran to the end) or is refused with the queue's "queue is full" message; anything
else is an error. The server's resident memory after the run is compared with the memory
after the warm-up: a KV cache kept by a finished or refused request would show there.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field

from eagle3.presets import STDLIB

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMPTS = ["def is_even(n):\n", "class Stack:\n", "import os\n\ndef walk(path):\n", "def parse(line):\n"]


@dataclass
class LoadReport:
    clients: int
    requests_per_client: int
    max_new_tokens: int
    max_queue: int
    completed: int = 0
    refused: int = 0
    errors: list[str] = field(default_factory=list)
    refusal_messages: list[str] = field(default_factory=list)
    latency_s: dict = field(default_factory=dict)  # p50 / p95 / max of completed requests
    wall_s: float = 0.0
    finished_in_time: bool = False
    rss_before_mib: float = 0.0
    rss_after_mib: float = 0.0
    rss_ratio: float = 0.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def headless_page(playwright, chromium: str):
    """A 1500x1500 page in a headless `chromium` (the system's, not one that playwright downloads)."""
    browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                         args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                               "--disable-background-networking"])
    return browser.new_page(viewport={"width": 1500, "height": 1500})


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        line = next(line for line in f if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def start_app(port: int, log, max_queue: int = 32) -> subprocess.Popen:
    """`python app.py` as a user runs it, on 127.0.0.1:port, once it answers; its output goes to `log`."""
    server = subprocess.Popen([sys.executable, "app.py", "--port", str(port), "--max-queue", str(max_queue)], cwd=ROOT,
                              stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    deadline = time.time() + 120
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
            return server
        except OSError:
            if server.poll() is not None or time.time() > deadline:
                server.kill()
                with open(log.name, encoding="utf-8") as f:
                    raise RuntimeError(f"app.py did not start:\n{f.read()}") from None
            time.sleep(0.5)


def request(client, prompt: str, max_new_tokens: int) -> str:
    """One generation through the app's API; the summary line it ends with."""
    result = client.predict(message=prompt, preset=STDLIB.name, depth=5, top_k=3, total_tokens=16,
                            max_new_tokens=max_new_tokens, api_name="/generate")
    return result[-2]  # the summary (the replay data follows it)


def run(clients: int = 20, requests: int = 3, max_new_tokens: int = 16, max_queue: int = 32,
        timeout_s: float = 600, log_path: str = os.devnull) -> LoadReport:
    from gradio_client import Client
    from gradio_client.utils import QueueError

    report = LoadReport(clients, requests, max_new_tokens, max_queue)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with open(log_path, "w") as log:
        server = start_app(port, log, max_queue)
        try:
            request(Client(url, verbose=False), PROMPTS[0], max_new_tokens)  # warm-up: the first run allocates
            time.sleep(1)
            report.rss_before_mib = rss_mib(server.pid)
            latencies, lock = [], threading.Lock()

            def client_loop(index: int) -> None:
                try:
                    client = Client(url, verbose=False)
                except Exception as error:  # noqa: BLE001 - every failure is counted, none may pass silently
                    with lock:
                        report.errors.append(f"client {index}: connect: {error}")
                    return
                for r in range(requests):
                    start = time.perf_counter()
                    try:
                        summary = request(client, PROMPTS[(index + r) % len(PROMPTS)], max_new_tokens)
                        ok = "done." in summary
                    except QueueError as error:
                        with lock:
                            report.refused += 1
                            report.refusal_messages.append(str(error))
                        continue
                    except Exception as error:  # noqa: BLE001 - an AppError or a broken connection
                        summary, ok = f"{type(error).__name__}: {error}", False
                    with lock:
                        if ok:
                            report.completed += 1
                            latencies.append(time.perf_counter() - start)
                        else:
                            report.errors.append(f"client {index} request {r}: {summary[:200]}")

            threads = [threading.Thread(target=client_loop, args=(i,), daemon=True) for i in range(clients)]
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=max(0.0, timeout_s - (time.perf_counter() - start)))
            report.wall_s = round(time.perf_counter() - start, 2)
            report.finished_in_time = not any(thread.is_alive() for thread in threads)
            time.sleep(1)
            report.rss_after_mib = rss_mib(server.pid)
        finally:
            server.terminate()
            server.wait(timeout=30)
    if latencies:
        ordered = sorted(latencies)
        report.latency_s = {"p50": round(statistics.median(ordered), 3),
                            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3),
                            "max": round(ordered[-1], 3)}
    report.refusal_messages = sorted(set(report.refusal_messages))
    report.rss_before_mib, report.rss_after_mib = round(report.rss_before_mib, 1), round(report.rss_after_mib, 1)
    report.rss_ratio = round(report.rss_after_mib / report.rss_before_mib, 4)
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.load", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=3, help="requests per client, one after the other")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--max-queue", type=int, default=32, help="the app's --max-queue")
    parser.add_argument("--timeout", type=float, default=600, help="seconds the whole run may take")
    parser.add_argument("--json", default=None, help="write the report here")
    args = parser.parse_args(argv)
    report = run(args.clients, args.requests, args.max_new_tokens, args.max_queue, args.timeout)
    text = json.dumps(asdict(report), indent=1)
    print(text)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0 if report.finished_in_time and not report.errors else 1


if __name__ == "__main__":
    sys.exit(main())
