"""The benchmark's Plotly figures: built from a report's JSON alone, as HTML and PNG."""

import json
import shutil

import pytest

from eagle3.report import figures, main as report_main


def fake_report(categories=("coding", "writing")) -> dict:
    prompts = [{"id": i, "category": categories[i % len(categories)], "speedup": 1.0 + i / 10, "tau": 2.0 + i / 10,
                "eagle3_ids": [0] * 8, "plain_ids": [0] * 8, "plain_s": 2.0, "eagle3_s": 2.0 / (1.0 + i / 10)}
               for i in range(4)]
    return {
        "summary": {"speedup": 1.2, "tau": 2.2, "acceptance_by_position": [0.7, 0.4, 0.1], "drafters": {"hybrid": {}},
                    "time_split": {"draft_s": 0.5, "verify_s": 4.0, "bookkeeping_s": 0.2}},
        "categories": {c: {"speedup": 1.1, "tau": 2.1, "hf_prompt_lookup_speedup": 0.9, "hybrid_speedup": 1.4}
                       for c in categories},
        "prompts": prompts,
        "sweep": {"variants": [{"variant": f"depth={d}", "speedup": 1 + d / 10, "tau": 1 + d / 2} for d in (1, 2, 3)]},
        "batch": {"sizes": [{"batch_size": b, "plain_tokens_per_s": 10.0 * b, "eagle3_tokens_per_s": 12.0 * b,
                             "gain": 1.2} for b in (1, 2, 4)]},
    }


def test_figures_follow_the_data():
    report = fake_report()
    made = figures(report)
    assert list(made) == ["speedup_per_prompt", "speedup_per_category", "acceptance_by_position", "time_split",
                          "sweep", "batch"]
    per_prompt = made["speedup_per_prompt"]
    assert [t.name for t in per_prompt.data] == ["coding", "writing"]  # one colour per category
    assert sorted(y for t in per_prompt.data for y in t.y) == [p["speedup"] for p in report["prompts"]]
    per_category = made["speedup_per_category"]
    assert [t.name for t in per_category.data] == ["EAGLE-3", "hybrid", "HF prompt lookup", "EAGLE-3 tau (right axis)"]
    assert list(per_category.data[1].y) == [1.4, 1.4]  # the other drafters' speedups beside EAGLE-3's
    assert list(made["acceptance_by_position"].data[0].y) == [0.7, 0.4, 0.1]
    assert [t.name for t in made["time_split"].data] == ["draft", "verify", "bookkeeping", "plain decoding"]
    assert list(made["sweep"].data[0].x) == [1, 2, 3] and list(made["batch"].data[1].y) == [12.0, 24.0, 48.0]
    one_category = fake_report(("coding",))
    del one_category["sweep"], one_category["batch"]
    assert list(figures(one_category)) == ["speedup_per_prompt", "acceptance_by_position", "time_split"]


def test_report_cli_writes_html_and_refuses_bad_input(tmp_path, capsys):
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(fake_report()))
    assert report_main([str(path), "--html", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert page.count('class="plotly-graph-div"') == 6 and '<script src=' not in page  # plotly.js inlined: opens offline
    assert report_main([str(path)]) == 2 and "nothing to write" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{")
    assert report_main([str(tmp_path / "bad.json"), "--html", str(tmp_path / "x.html")]) == 2
    assert "report " in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_png_images_come_from_the_same_figures(tmp_path):
    report = {"batch": fake_report()["batch"]}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(report))
    assert report_main([str(path), "--png", str(tmp_path / "png")]) == 0
    image = (tmp_path / "png" / "batch.png").read_bytes()
    assert image[:8] == b"\x89PNG\r\n\x1a\n" and len(image) > 10_000
