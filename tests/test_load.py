"""Many clients at once against `python app.py`: every request completes or is refused clearly, memory stays put."""

import json

from tests.load import run


def test_twenty_clients_three_requests_each(tmp_path):
    report = run(clients=20, requests=3, max_new_tokens=16, max_queue=32, timeout_s=420,
                 log_path=str(tmp_path / "app.log"))
    (tmp_path / "load.json").write_text(json.dumps(report.__dict__, indent=1))  # for a look after a failure
    assert report.finished_in_time and not report.errors, report
    assert report.completed == 60 and report.refused == 0  # 20 waiting at most: the queue of 32 holds them
    assert report.rss_ratio < 1.10, report


def test_a_full_queue_refuses_with_a_clear_message(tmp_path):
    report = run(clients=12, requests=2, max_new_tokens=16, max_queue=3, timeout_s=300,
                 log_path=str(tmp_path / "app.log"))
    assert report.finished_in_time and not report.errors, report
    assert report.completed + report.refused == 24 and report.completed >= 2 and report.refused >= 1, report
    assert all("queue is full" in m.lower() for m in report.refusal_messages), report.refusal_messages
