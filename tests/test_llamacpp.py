"""llama.cpp beside the project's decoders: its logs read, its commands built, its rows in the bench.

No llama.cpp build is needed: the logs below were captured from llama.cpp b11434
(`llama-completion` and `llama-speculative-simple` on SmolLM2-135M-Instruct Q4_1), and the
bench's plumbing runs against two shell scripts on PATH that print them.
"""

import os
import stat

import pytest

from eagle3 import GenerationConfig, TreeConfig, load_head, load_target
from eagle3 import llamacpp
from eagle3.bench import run
from eagle3.llamacpp import LlamaCpp, find_llama_cpp, parse_plain, parse_speculative, summarise
from eagle3.prompts import PromptRecord

PROMPT = "<|im_start|>user\nExplain how a hash map works.<|im_end|>\n<|im_start|>assistant\n"
REPLY = "A hash map is a data structure that maps keys to values."
PLAIN_LOG = """\
1.17.227.433 I common_perf_print:    sampling time =      46.14 ms
1.17.227.621 I common_perf_print:    samplers time =       5.93 ms /   164 tokens
1.17.227.639 I common_perf_print:        load time =    1563.24 ms
1.17.227.647 I common_perf_print: prompt eval time =    1562.58 ms /    36 tokens (   43.41 ms per token,    23.04 tokens per second)
1.17.227.655 I common_perf_print:        eval time =   75310.78 ms /   127 runs   (  593.00 ms per token,     1.69 tokens per second)
1.17.227.661 I common_perf_print:       total time =   77009.27 ms /   163 tokens
"""
SPECULATIVE_LOG = """\
0.29.976.446 I encoded   36 tokens in    2.968 seconds, speed:   12.131 t/s
0.29.976.468 I decoded  129 tokens in   21.208 seconds, speed:    6.083 t/s
0.29.976.474 I 
0.29.976.480 I n_draft   = 3
0.29.976.488 I n_predict = 129
0.29.976.496 I n_drafted = 28
0.29.976.502 I n_accept  = 10
0.29.976.507 I accept    = 35.714%
"""


def test_a_plain_log_gives_tokens_and_seconds_without_the_load():
    run_ = parse_plain("\n" + REPLY + " [end of text]\n\n", PLAIN_LOG)
    assert (run_.prompt_tokens, run_.new_tokens, run_.text) == (36, 128, REPLY)  # the first token needs no eval run
    assert run_.seconds == pytest.approx((1562.58 + 75310.78 + 46.14) / 1000)


def test_texts_agree_as_far_as_both_go():
    run_ = parse_plain(REPLY, PLAIN_LOG)
    longer, other = parse_plain(REPLY + " More.", PLAIN_LOG), parse_plain("A hash map is a tree.", PLAIN_LOG)
    assert run_.agrees_with(longer) and longer.agrees_with(run_) and not run_.agrees_with(other)


def test_a_speculative_log_gives_drafts_tau_and_the_reply_alone():
    run_ = parse_speculative("\n\n" + PROMPT + REPLY + "\n\n", SPECULATIVE_LOG, PROMPT)
    assert (run_.prompt_tokens, run_.new_tokens, run_.drafted, run_.accepted) == (36, 129, 28, 10)
    assert run_.seconds == pytest.approx(2.968 + 21.208) and run_.text == REPLY
    assert run_.tau == pytest.approx(129 / 119)  # 119 rounds, each with one token of the target's


def test_a_log_without_its_summary_is_refused_by_name():
    with pytest.raises(ValueError, match="the accepted drafts"):
        parse_speculative(PROMPT, SPECULATIVE_LOG.replace("n_accept", "n_other"), PROMPT)


def test_commands_ask_for_the_same_count_and_skip_repacking_on_amx(monkeypatch):
    monkeypatch.setattr(llamacpp.shutil, "which", lambda name: f"/bin/{name}")
    monkeypatch.setattr(llamacpp, "cpu_info", lambda: "flags: avx512f amx_bf16 amx_tile")
    engine = LlamaCpp("t.gguf", head="h.gguf", threads=2, chain=4)
    assert [d.name for d in engine.decoders()] == ["llama_cpp_plain", "llama_cpp_eagle3", "llama_cpp_ngram"]
    plain, eagle3, _ = (engine.command(d, "p.txt", 128) for d in engine.decoders())
    assert plain[plain.index("-n") + 1] == "128" and eagle3[eagle3.index("-n") + 1] == "127"  # it stops past -n
    assert "--no-repack" in plain and eagle3[eagle3.index("--spec-draft-n-max") + 1] == "4"
    monkeypatch.setattr(llamacpp, "cpu_info", lambda: "flags: avx512f avx512_bf16")
    assert "--no-repack" not in engine.command(engine.decoders()[0], "p.txt", 128)
    assert [d.name for d in LlamaCpp("t.gguf").decoders()] == ["llama_cpp_plain", "llama_cpp_ngram"]


def test_llama_cpp_is_found_only_with_a_build_and_a_gguf_target(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    engine, note = find_llama_cpp("checkpoints/smollm2", None, 2, 4, (3, 10))
    assert engine is None and "no llama-completion" in note
    with pytest.raises(FileNotFoundError, match="--llama-cpp-head"):
        find_llama_cpp("checkpoints/smollm2", str(tmp_path / "missing.gguf"), 2, 4, (3, 10))
    fake_binaries(tmp_path, monkeypatch)
    engine, note = find_llama_cpp("checkpoints/target", None, 2, 4, (3, 10))
    assert engine is None and "not a GGUF file" in note
    engine, note = find_llama_cpp("checkpoints/smollm2", None, 2, 4, (3, 10))
    assert engine.model.endswith(".gguf") and "EAGLE-3 row is left out" in note


def test_the_summary_compares_each_decoder_with_both_plains():
    rows = [{"llama_cpp": {"llama_cpp_plain": {"new_tokens": 100, "seconds": 2.0, "drafted": 0, "accepted": 0},
                           "llama_cpp_eagle3": {"new_tokens": 100, "seconds": 1.0, "drafted": 90, "accepted": 50,
                                                "matches_plain": False}}}] * 2
    table = summarise(rows, plain_tokens_per_s=25.0)
    assert table["llama_cpp_plain"] == {"prompts": 2, "tokens_per_s": 50.0, "seconds": 4.0, "speedup_over_project_plain": 2.0}
    eagle3 = table["llama_cpp_eagle3"]
    assert (eagle3["speedup_over_its_plain"], eagle3["speedup_over_project_plain"], eagle3["tau"]) == (2.0, 4.0, 2.0)
    assert eagle3["text_differs_from_its_plain"] == 2 and eagle3["accepted"] == 100


def fake_binaries(tmp_path, monkeypatch, speculative_exit: int = 0):
    """Stand-ins for the two llama.cpp programs on PATH, printing the captured logs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    scripts = {"llama-completion": f"printf '%s\\n' '{REPLY}'; cat >&2 <<'EOF'\n{PLAIN_LOG}EOF\n",
               "llama-speculative-simple": "printf '\\n\\n'\n"  # then the prompt (the file after -f), then the reply
                                           'while [ $# -gt 0 ]; do [ "$1" = -f ] && cat "$2"; shift; done\n'
                                           f"printf '%s\\n' '{REPLY}'; cat >&2 <<'EOF'\n{SPECULATIVE_LOG}EOF\n"
                                           f"exit {speculative_exit}\n"}
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize("speculative_exit", [0, 3])
def test_the_bench_adds_llama_cpp_rows_and_survives_a_failing_one(tmp_path, monkeypatch, model_dirs, speculative_exit):
    fake_binaries(tmp_path, monkeypatch, speculative_exit)
    target = load_target(model_dirs[0], "cpu")
    head = load_head(model_dirs[1], target)
    (tmp_path / "h.gguf").write_bytes(b"GGUF")
    records = [PromptRecord(text="def add(a, b):"), PromptRecord(text="class Point:")]
    report = run(target, head, records, TreeConfig(depth=3, top_k=2, total_tokens=6), GenerationConfig(8),
                 with_prompt_lookup=False, progress=False, llama_cpp=LlamaCpp("t.gguf", head=str(tmp_path / "h.gguf")))
    section = report["llama_cpp"]
    assert section["summary"]["llama_cpp_plain"]["prompts"] == 2
    assert report["prompts"][0]["llama_cpp"]["llama_cpp_plain"]["text"] == REPLY
    if speculative_exit:  # the failing program is named once, the plain rows go on
        assert set(section["errors"]) == {"llama_cpp_eagle3", "llama_cpp_ngram"}
        assert "exited with 3" in section["errors"]["llama_cpp_eagle3"]
        assert set(section["summary"]) == {"llama_cpp_plain"}
    else:
        eagle3 = section["summary"]["llama_cpp_eagle3"]
        assert eagle3["prompts"] == 2 and eagle3["text_differs_from_its_plain"] == 0
        assert "draft-eagle3" in section["commands"]["llama_cpp_eagle3"]


def test_a_head_is_handed_to_llama_cpps_converter_with_the_dequantised_target(tmp_path, monkeypatch):
    from tests.gguf_files import write_tiny_llama

    monkeypatch.setenv("EAGLE3_CACHE", str(tmp_path / "cache"))
    write_tiny_llama(str(tmp_path / "tiny.gguf"))
    (tmp_path / "head").mkdir()
    (tmp_path / "head" / "config.json").write_text("{}")
    converter = tmp_path / "convert_hf_to_gguf.py"  # a stand-in: checks what the real one reads, writes the file
    converter.write_text("import os, sys\n"
                         "head, _, target, _, outtype, _, out = sys.argv[1:]\n"
                         "assert os.path.isfile(os.path.join(target, 'config.json')), target\n"
                         "assert os.path.isfile(os.path.join(target, 'tokenizer.json')), target\n"
                         "open(out, 'w').write(outtype)\n")
    out = tmp_path / "head.gguf"
    assert llamacpp.main(["--converter", str(converter), "--head", str(tmp_path / "head"),
                          "--target", str(tmp_path / "tiny.gguf"), "--out", str(out)]) == 0
    assert out.read_text() == "bf16"
    assert llamacpp.main(["--converter", str(tmp_path / "missing.py"), "--out", str(out)]) == 2
    converter.write_text("import sys\nsys.exit('No module named sentencepiece')\n")
    with pytest.raises(ValueError, match="converter failed: No module named sentencepiece"):
        llamacpp.export_head(str(converter), str(tmp_path / "head"), str(tmp_path / "tiny.gguf"), str(out))
    # An EAGLE 3.1 head's norms have no place in llama.cpp's GGUF: refused by name, before the converter runs.
    (tmp_path / "head" / "config.json").write_text('{"fc_norm": true, "norm_output": true}')
    with pytest.raises(ValueError, match="EAGLE 3.1 head \\(fc_norm, norm_output\\).*convert an EAGLE-3 head"):
        llamacpp.export_head(str(converter), str(tmp_path / "head"), str(tmp_path / "tiny.gguf"), str(out))
