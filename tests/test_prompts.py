"""Prompt sets: the shipped chat set, named public sets, chat rendering and the context limit."""

import gzip
import json

import pytest

from eagle3.prompts import PromptRecord, fit_chat, prompt_ids, read_prompts

CATEGORIES = {"writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities", "editing",
              "summarization"}
TEMPLATE = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}<eos>{% endfor %}"
            "{% if add_generation_prompt %}<assistant>{% endif %}")


@pytest.fixture()
def chat_tokenizer(tokenizer):
    chat = tokenizer.__class__(tokenizer_object=tokenizer.backend_tokenizer, eos_token="<eos>")
    chat.chat_template = TEMPLATE
    return chat


def test_the_chat_set_covers_ten_categories_in_mt_bench_format():
    records = read_prompts("assets/prompts/chat.jsonl")
    assert len(records) >= 80 and len({r.id for r in records}) == len(records)
    assert {r.category for r in records} == CATEGORIES
    assert all(r.turns and all(isinstance(t, str) and t.strip() for t in r.turns) for r in records)


def test_record_formats(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "a"}\n{"question_id": 7, "category": "math", "turns": ["b", "c"]}\n')
    text, chat = read_prompts(str(path))
    assert (text.first, text.turns, text.id) == ("a", [], "1")
    assert (chat.first, chat.turns, chat.category, chat.id) == ("b", ["b", "c"], "math", "7")
    path.write_text('{"question": "a"}\n')
    with pytest.raises(ValueError, match="p.jsonl:1: needs a non-empty 'prompt'"):
        read_prompts(str(path))


@pytest.mark.parametrize("name, count, category", [("humaneval", 164, "humaneval"), ("mtbench", 80, "writing")])
def test_named_sets_from_their_packages(name, count, category):
    try:
        records = read_prompts(name)
    except FileNotFoundError as error:  # .ci/run installs both; elsewhere the message says how
        assert "pip install --no-deps" in str(error)
        pytest.skip(str(error))
    assert len(records) == count and records[0].category == category and records[0].turns


def test_a_chat_record_is_its_first_turn_in_the_chat_template(chat_tokenizer):
    record = PromptRecord(turns=["add two numbers", "now three"], category="coding")
    rendered = "<user>add two numbers<eos><assistant>"
    assert prompt_ids(record, chat_tokenizer, chat=True) == chat_tokenizer(rendered, add_special_tokens=False).input_ids
    assert prompt_ids(record, chat_tokenizer, chat=False) == chat_tokenizer("add two numbers").input_ids


def test_the_oldest_turns_are_dropped_to_fit_the_context(chat_tokenizer):
    history = [("first question " * 5, "first answer " * 5), ("second", "reply")]
    whole, dropped = fit_chat(chat_tokenizer, history, "third", budget=10_000)
    assert dropped == 0 and chat_tokenizer.decode(whole).startswith("<user>first question")
    kept, dropped = fit_chat(chat_tokenizer, history, "third", budget=len(whole) - 1)
    assert dropped == 1 and chat_tokenizer.decode(kept) == "<user>second<eos><assistant>reply<eos><user>third<eos><assistant>"
    with pytest.raises(ValueError, match="the message is .* tokens with the chat template; the context leaves room for 3"):
        fit_chat(chat_tokenizer, history, "third", budget=3)


TRAINING_PROMPTS = ["assets/data/train_prompts.jsonl", "assets/data/train_prompts_more.jsonl.gz",
                    "assets/data/train_prompts_wordnet.jsonl.gz"]


def eight_word_runs(text: str) -> set[str]:
    words = text.lower().split()
    return {" ".join(words[i : i + 8]) for i in range(len(words) - 7)}


def test_no_training_prompt_shares_eight_words_in_a_row_with_an_evaluation_set():
    """The heads' held-out figures hold only if no training turn near-copies an evaluation
    prompt (the check assets/data's scripts apply when they write the files)."""
    held_out = set()
    for source in ("assets/prompts/chat.jsonl", "mtbench", "humaneval"):
        try:
            records = read_prompts(source)
        except FileNotFoundError as error:  # .ci/run installs both; elsewhere the message says how
            pytest.skip(str(error))
        for record in records:
            for turn in record.turns or [record.text]:
                held_out |= eight_word_runs(turn)
    for path in TRAINING_PROMPTS:
        with (gzip.open if path.endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
        assert len(records) >= 4000, path
        shared = [r["id"] for r in records for turn in r["conversations"]
                  if turn["from"] == "human" and eight_word_runs(turn["value"]) & held_out]
        assert not shared, f"{path}: {shared[:5]}"
