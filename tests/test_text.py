"""Token texts: multi-byte characters split across tokens arrive whole."""

from eagle3.text import IncrementalDetokenizer


def test_incremental_text_matches_full_decode(tokenizer):
    text = "def café(x):\n    return '€ ✓ 😀' + x  # naïve\n"
    ids = tokenizer(text).input_ids
    assert len(ids) > len(text) // 3
    split = sum(1 for i in ids if "\ufffd" in tokenizer.decode([i]))
    assert split > 0  # some tokens are partial characters
    prompt, output = ids[:3], ids[3:]
    detokenizer = IncrementalDetokenizer(tokenizer, prompt)
    pieces = [detokenizer.push(i) for i in output]
    assert "".join(pieces) == tokenizer.decode(output)
    assert all("\ufffd" not in p for p in pieces)
    assert "" in pieces  # the partial tokens wait for the one that completes them


def test_long_outputs_keep_a_bounded_window(tokenizer):
    ids = tokenizer("for i in range(10):\n    print(i)\n" * 30).input_ids
    detokenizer = IncrementalDetokenizer(tokenizer, ids[:2])
    pieces = [detokenizer.push(i) for i in ids[2:]]
    assert "".join(pieces) == tokenizer.decode(ids[2:])
    assert len(detokenizer.ids) <= 70
