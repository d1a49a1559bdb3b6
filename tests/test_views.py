"""The HTML views of a run (eagle3/views.py): tokens, the draft tree, the charts' data."""

import json
import re

from eagle3 import views
from eagle3.acceptance import TokenState
from eagle3.events import Token
from eagle3.tree import DraftTree


def test_token_html_escapes_and_marks_state():
    span = views.token_html(Token(1, "a < b && c\n", TokenState.ACCEPTED), 3)
    assert span == '<span class="tok accepted r1" title="round 3: accepted">a &lt; b &amp;&amp; c\n</span>'
    assert 'class="tok rejected r0"' in views.token_html(Token(2, "x", TokenState.REJECTED), 4)
    assert views.token_html(Token(3, "", TokenState.BONUS), 1) == ""  # a partial character waits for the next token
    assert views.plain_html(Token(4, "<é>", TokenState.BONUS)) == '<span class="tok plain">&lt;é&gt;</span>'


def test_multibyte_characters_split_across_tokens(tokenizer):
    from eagle3.text import IncrementalDetokenizer

    ids = tokenizer("x = '€😀'\n").input_ids
    detokenizer = IncrementalDetokenizer(tokenizer, [])
    tokens = [Token(i, detokenizer.push(i), TokenState.ACCEPTED) for i in ids]
    rendered = "".join(views.token_html(t, 1) for t in tokens)
    assert "€😀" in re.sub(r"<[^>]+>", "", rendered) and "\ufffd" not in rendered


def test_tree_rendering_highlights_the_accepted_path():
    tree = DraftTree.from_parents([10, 11, 12, 13, 14], [-1, 0, 0, 1, 3], [0.0, -0.1, -2.0, -0.3, -0.9])
    svg = views.render_tree(tree, [1, 3], ["root", "a", "<b>", "c\n", "d"], "Round 1")
    assert svg.count('class="node accepted"') == 2 and svg.count('class="node root"') == 1
    assert svg.count('class="edge accepted"') == 2 and svg.count('class="edge"') == 2
    assert "&lt;b&gt;" in svg and "c↵" in svg
    assert views.render_tree(None, [], []).startswith('<div class="tree-svg">')


def test_chart_data():
    spec, plain = views.RunView("EAGLE-3"), views.RunView("plain")
    spec.stats.times, plain.stats.times = [(1, 0.1), (5, 0.2), (9, 0.3)], [(1, 0.1), (2, 0.2), (5, 0.5), (9, 0.9)]
    assert views.running_speedup(spec, plain) == ([1, 2, 5, 9], [1.0, 1.0, 2.5, 3.0])
    spec.stats.accepted_per_round, spec.stats.depths = [0, 2, 3, 1], [3, 3, 4, 4]
    data = json.loads(views.chart_data(spec, plain, 4, render_ms=1.5))
    assert data["rounds"] == {"round": [1, 2, 3, 4], "tokens": [1, 3, 4, 2], "tau": [1.0, 2.0, 2.667, 2.5],
                              "depth": [3, 3, 4, 4]}
    assert data["speed"]["plain"] == {"seconds": [0.1, 0.2, 0.5, 0.9], "tokens_per_s": [10.0, 10.0, 10.0, 10.0]}
    assert data["speed"]["EAGLE-3"]["tokens_per_s"] == [10.0, 25.0, 30.0]
    assert data["speedup"] == {"tokens": [1, 2, 5, 9], "speedup": [1.0, 1.0, 2.5, 3.0]}
    assert data["accept"] == {"position": [1, 2, 3, 4], "fraction": [0.75, 0.5, 0.25, 0.0]} and data["render_ms"] == 1.5


def test_a_round_that_drafted_nothing_is_named_in_the_tree_view():
    tree = DraftTree.from_parents([10, 11], [-1, 0], [0.0, -0.5])
    trees = [(1, tree, [1]), (2, None, [])]
    assert "Round 2 of 2: nothing drafted" in views.tree_html(trees, 0, None)  # the last round by default
    assert "Round 1 of 2: 1 drafted nodes, 1 accepted" in views.tree_html(trees, 1, None)
    assert views.last_drafted(trees) == 1  # what a finished run shows first
    assert views.last_drafted([(1, None, [])]) == 1 and views.last_drafted([(1, tree, [1]), (2, tree, [1])]) == 2
