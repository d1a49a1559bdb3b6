"""Incremental detokenization: the text each new token adds, even when a character's
bytes are split across tokens (the text then arrives with the token that completes it)."""

from __future__ import annotations


class IncrementalDetokenizer:
    def __init__(self, tokenizer, prompt_ids: list[int], context: int = 6):
        self.tokenizer = tokenizer
        self.ids = list(prompt_ids[-context:])
        # Decoding from a few tokens back keeps tokenizers' leading-space rules right.
        self.prefix_offset, self.read_offset = 0, len(self.ids)

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)

    def push(self, token_id: int) -> str:
        """Append one output token; return the text it completes ('' while a character is partial)."""
        if self.tokenizer is None:
            return ""
        self.ids.append(token_id)
        before = self._decode(self.ids[self.prefix_offset : self.read_offset])
        after = self._decode(self.ids[self.prefix_offset :])
        if len(after) <= len(before) or after.endswith("\ufffd"):
            return ""
        self.prefix_offset, self.read_offset = self.read_offset, len(self.ids)
        if len(self.ids) > 64:  # keep decoding cost constant on long outputs
            drop = self.prefix_offset
            self.ids = self.ids[drop:]
            self.prefix_offset, self.read_offset = 0, self.read_offset - drop
        return after[len(before) :]

    def token_text(self, token_id: int) -> str:
        """A token's text on its own (for drafted tokens that never join the output)."""
        return "" if self.tokenizer is None else self._decode([token_id])
