"""Head-training data: JSONL records to token ids with a loss mask.

Record shapes, one per line:
    {"text": "..."}                                        loss on every token
    {"conversations": [{"from": "human", "value": ...},    ShareGPT: loss on the assistant
                       {"from": "gpt", "value": ...}]}     turns only, rendered with the
    {"messages": [{"role": "user", "content": ...},        tokenizer's chat template;
                  {"role": "assistant", "content": ...}]}  UltraChat: the same
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass

import torch

ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system"}


@dataclass
class Example:
    input_ids: list[int]
    loss_mask: list[int]  # 1 where the token is one the head should learn to predict


def pad_batch(examples: list[Example]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """input_ids, loss_mask and attention_mask [B, T] of the examples, right-padded with 0."""
    length = max(len(e.input_ids) for e in examples)
    ids = torch.zeros(len(examples), length, dtype=torch.long)
    loss_mask = torch.zeros(len(examples), length, dtype=torch.long)
    for row, example in enumerate(examples):
        n = len(example.input_ids)
        ids[row, :n], loss_mask[row, :n] = torch.tensor(example.input_ids), torch.tensor(example.loss_mask)
    lengths = torch.tensor([len(e.input_ids) for e in examples])
    return ids, loss_mask, (torch.arange(length)[None] < lengths[:, None]).long()


def read_jsonl(path: str) -> list[dict]:
    """Records of a JSONL file (gzip-compressed when it ends in .gz); a bad line is named with
    its number."""
    records = []
    try:
        with (gzip.open if path.endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{number}: not valid JSON ({error.msg})") from error
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from error
    if not records:
        raise ValueError(f"{path}: no records")
    return records


def conversation_messages(record: dict) -> list[dict]:
    """The turns of a ShareGPT or UltraChat record as [{"role", "content"}]."""
    turns = record.get("conversations", record.get("messages"))
    if not isinstance(turns, list) or not turns:
        raise ValueError("record: 'conversations' / 'messages' must be a non-empty list of turns")
    messages = []
    for turn in turns:
        role = ROLES.get(turn.get("from", turn.get("role")))
        if role is None:
            raise ValueError(f"conversation turn: unknown role {turn.get('from', turn.get('role'))!r} "
                             f"(expected one of {', '.join(ROLES)})")
        messages.append({"role": role, "content": turn.get("value", turn.get("content", ""))})
    return messages


def render_conversation(record: dict, tokenizer) -> tuple[str, list[tuple[int, int]]]:
    """The conversation as one text plus the character spans of the assistant turns."""
    messages = conversation_messages(record)
    spans, text = [], ""
    for i, message in enumerate(messages):
        if getattr(tokenizer, "chat_template", None):
            before = tokenizer.apply_chat_template(messages[:i], tokenize=False, add_generation_prompt=message["role"] == "assistant") if i else ""
            after = tokenizer.apply_chat_template(messages[: i + 1], tokenize=False)
            if not after.startswith(before):  # templates that rewrite earlier turns: mask by content
                before = after[: after.rfind(message["content"])]
        else:
            before = text + ("Assistant: " if message["role"] == "assistant" else f"{message['role'].title()}: ")
            after = before + message["content"] + "\n\n"
        if message["role"] == "assistant":
            spans.append((len(before), len(after)))
        text = after
    return text, spans


def encode_record(record: dict, tokenizer, max_length: int) -> Example:
    if "text" in record:
        ids = tokenizer(record["text"]).input_ids[:max_length]
        return Example(ids, [1] * len(ids))
    if "conversations" not in record and "messages" not in record:
        raise ValueError("record: has neither 'text' nor 'conversations' nor 'messages'")
    text, spans = render_conversation(record, tokenizer)
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = encoded.input_ids[:max_length], encoded.offset_mapping[:max_length]
    mask = [int(any(start < end_char and end > start_char for start_char, end_char in spans)) for start, end in offsets]
    return Example(ids, mask)


def load_examples(path: str, tokenizer, max_length: int) -> list[Example]:
    """Every record of a JSONL file, encoded; records with nothing to learn are skipped."""
    examples = []
    for number, record in enumerate(read_jsonl(path), 1):
        try:
            example = encode_record(record, tokenizer, max_length)
        except ValueError as error:
            raise ValueError(f"{path}:{number}: {error}") from error
        if len(example.input_ids) >= 3 and sum(example.loss_mask) > 0:
            examples.append(example)
    if not examples:
        raise ValueError(f"{path}: no record has at least 3 tokens to learn from")
    return examples
