#!/usr/bin/env python3
"""Build the second, larger set of head-training prompts: ``train_prompts_more.jsonl.gz``.

About 37,000 conversations on top of the 4,370 of ``train_prompts.jsonl``, none repeating
one of them, in the same ten categories and the same ShareGPT shape (empty assistant turns
for the target to fill in). Two sources, each tagged in the record's ``source`` field:

- ``templates``: more prompts from the hand-written templates and topic lists of
  ``make_train_prompts.py`` (all ten categories), as many unique ones as they give.
- ``pydoc``: prose paragraphs of the docstrings of this Python's standard library and of
  installed packages of the requirements' kind (numpy, scipy, torch, transformers, ...;
  read with ``ast``, nothing imported), used as the passages of summarization, extraction and
  editing prompts, and the docstrings of documented functions as coding tasks ("write a
  function that ..."). Real technical prose, unlike the script's 64 short passages.

A tenth of the records get a second user turn (a follow-up of their category). Records
sharing eight words in a row with an evaluation set (``assets/prompts/chat.jsonl``,
MT-bench and HumanEval, the latter two read from their pip packages when installed) are
dropped. Deterministic for a given Python and package versions (one ``random.Random(1)``); the
committed file is what the head was trained on, so rerunning is only needed to change it.

    python assets/data/make_more_prompts.py [--out PATH] [--templates N] [--pydoc N]
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import random
import re
import sys
import sysconfig
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_train_prompts as base  # noqa: E402  (the templates, the passage tasks, the follow-ups)

MULTI_TURN_SHARE = 0.1
DOC_PACKAGES = ["numpy", "scipy", "torch", "transformers", "gradio", "plotly", "tqdm", "safetensors", "accelerate",
                "huggingface_hub", "tokenizers", "pandas", "PIL", "requests", "urllib3", "jinja2", "yaml", "fsspec"]
DOC_NAMES = ["passage from the Python documentation", "documentation excerpt", "docstring", "technical note"]
DOC_SUMMARY_TASKS = [
    "Explain this documentation in plain words for a beginner.", "What is the main point of this text?",
    "Summarize what this part of the documentation says in two sentences.",
    "Write a one-line summary of this docstring.", "Turn this documentation into three short bullet points.",
    "Explain this to someone who has never programmed.", "What would a user most need to remember from this?",
]
DOC_EXTRACTION_TASKS = [
    "List every function, class or module name mentioned in the text.",
    "Which arguments, options or parameters does the text mention? List them with what they do.",
    "Extract any default values the text mentions.", "Which errors or exceptions does the text mention?",
    "List the technical terms in this text and define each in a few words.",
    "Return the key terms of the text as a JSON list.", "What conditions or special cases does the text describe?",
    "List the steps or rules the text describes, in order.",
]
DOC_EDIT_TASKS = [
    "Rewrite this documentation in simpler English.", "Make this text shorter without losing information.",
    "Rewrite this paragraph as friendly help text for a user.", "Rewrite this text in the second person (\"you\").",
    "Split this text into shorter sentences.", "Rewrite this as a short FAQ entry with a question and an answer.",
]
CODE_TASKS = [
    "Write a Python function `{signature}` that does the following: {doc}",
    "Implement `{signature}` in Python. Its documentation says: {doc}",
    "In Python, write `{signature}`. {doc} Add a short example of how to call it.",
    "Here is a docstring: \"{doc}\" Write the Python function `{signature}` it describes.",
    "Explain in simple words what a function `{signature}` documented as \"{doc}\" would be used for.",
]


def doc_sources() -> list[Path]:
    """The standard library, then the installed packages of requirements.txt's kind that carry
    long prose docstrings (those absent are skipped)."""
    site = Path(sysconfig.get_paths()["purelib"])
    return [Path(sysconfig.get_paths()["stdlib"])] + [site / p for p in DOC_PACKAGES if (site / p).is_dir()]


def stdlib_docstrings() -> tuple[list[str], list[tuple[str, str]]]:
    """(prose paragraphs, (signature, first paragraph) of documented public functions) from the
    docstrings of the modules, classes and functions of `doc_sources()`, in file order."""
    paragraphs, functions = [], []
    for root in doc_sources():
        paragraphs_, functions_ = docstrings_under(root)
        paragraphs += paragraphs_
        functions += functions_
    return paragraphs, functions


def docstrings_under(root: Path) -> tuple[list[str], list[tuple[str, str]]]:
    paragraphs, functions = [], []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if any(part in relative for part in ("test", "site-packages", "idlelib", "lib2to3", "__main__")):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in [tree, *ast.walk(tree)]:
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            doc = ast.get_docstring(node)
            if not doc:
                continue
            blocks = [" ".join(b.split()) for b in re.split(r"\n\s*\n", doc)]
            paragraphs += [b for b in blocks if is_prose(b)]
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_") and 8 <= len(blocks[0].split()) <= 60:
                args = [a.arg for a in node.args.args if a.arg not in ("self", "cls")]
                functions.append((f"{node.name}({', '.join(args)})", blocks[0]))
    return paragraphs, functions


def is_prose(text: str) -> bool:
    """A paragraph of 30 to 180 words of sentences, not code, a table or an example session."""
    words = text.split()
    if not 30 <= len(words) <= 180 or ">>>" in text or "::" in text or "|" in text:
        return False
    alphabetic = sum(w.strip(".,;:()'\"").isalpha() for w in words)
    return alphabetic / len(words) > 0.8 and text.count(". ") >= 1


def pydoc_prompts(rng: random.Random, count: int) -> list[tuple[str, str, tuple[str, ...]]]:
    """(category, prompt, follow-up tags): summarization, extraction, editing and coding."""
    paragraphs, functions = stdlib_docstrings()
    # Generated docstrings repeat a sentence with one name changed: one paragraph per opening.
    paragraphs = list({" ".join(p.split()[:8]).lower(): p for p in sorted(set(paragraphs))}.values())
    rng.shuffle(paragraphs)
    functions = list({doc.split()[:8].__str__(): (name, doc) for name, doc in sorted(set(functions))}.values())
    rng.shuffle(functions)
    base.KIND_NAMES["doc"] = DOC_NAMES
    generic = {
        "summarization": [t for t, kinds in base.SUMMARY_TASKS if kinds == base.ALL_KINDS] + DOC_SUMMARY_TASKS,
        "extraction": DOC_EXTRACTION_TASKS,
        "editing": [t for t, kinds in base.EDIT_STYLE_TASKS if kinds == base.ALL_KINDS] + DOC_EDIT_TASKS,
    }
    out = []
    code_count = min(len(functions), count // 4)
    for signature, doc in functions[:code_count]:
        out.append(("coding", base.vary(rng.choice(CODE_TASKS).format(signature=signature, doc=doc), rng, 0.2),
                    ("general",)))
    for i, passage in enumerate(paragraphs[: count - code_count]):
        category = ("summarization", "extraction", "editing")[i % 3]
        if category == "editing" and rng.random() < 0.4:  # a typo-fixing task on the damaged passage
            instr, passage, tags = rng.choice(base.EDIT_FIX_TASKS), base.add_typos(passage, rng), ("fix",)
        else:
            instr, tags = rng.choice(generic[category]), ()
        out.append((category, base.with_passage(base.vary(instr, rng, 0.25), "doc", passage, rng), tags))
    return out


def template_prompts(rng: random.Random, per_category: int, seen: set[str]) -> list[tuple[str, str, tuple[str, ...]]]:
    """Up to per_category new unique prompts per category from the first script's makers."""
    out = []
    for category in base.CATEGORIES:
        pool = base.Pool()
        pool.seen |= seen
        base.build(pool, base.MAKERS[category], rng, per_category, max_tries=40 * per_category)
        out += [(category, text, tags) for text, tags in pool.items]
    return out


def evaluation_runs() -> set[str]:
    """Eight-word runs of every evaluation prompt at hand: the project's chat set always,
    MT-bench and HumanEval when their packages are installed (CI installs both)."""
    sys.path.insert(0, str(HERE.parents[1]))
    from eagle3.prompts import read_prompts

    runs = set()
    for source in (str(HERE.parent / "prompts" / "chat.jsonl"), "mtbench", "humaneval"):
        try:
            records = read_prompts(source)
        except (FileNotFoundError, ValueError) as error:
            print(f"held-out check without {source}: {error}", file=sys.stderr)
            continue
        for record in records:
            for turn in record.turns or [record.text]:
                runs |= base.word_runs(turn)
    return runs


def conversations(prompts: list[tuple[str, str, str, tuple[str, ...]]], rng: random.Random) -> tuple[list[dict], Counter]:
    """(source, category, text, tags) prompts as shuffled records in the ShareGPT shape with
    empty assistant turns, a tenth with a follow-up turn; those sharing eight words in a row
    with an evaluation set are dropped (the count per source is returned)."""
    held_out = evaluation_runs()
    records, dropped = [], Counter()
    for source, category, text, tags in prompts:
        turns = [text]
        if rng.random() < MULTI_TURN_SHARE:
            turns.append(base.followup(category, tags, rng))
        if any(base.word_runs(t) & held_out for t in turns):
            dropped[source] += 1
            continue
        conversation = [m for t in turns for m in ({"from": "human", "value": t}, {"from": "gpt", "value": ""})]
        records.append({"category": category, "source": source, "conversations": conversation})
    rng.shuffle(records)
    return records, dropped


def write_records(path: Path, records: list[dict], prefix: str) -> None:
    """Records as gzipped JSON lines, with ids PREFIX-00001, ... in file order."""
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as f:
        for i, record in enumerate(records, start=1):
            f.write(json.dumps({"id": f"{prefix}-{i:05d}", **record}, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "train_prompts_more.jsonl.gz")
    parser.add_argument("--templates", type=int, default=2400, help="most new template prompts per category")
    parser.add_argument("--pydoc", type=int, default=14000, help="prompts built on standard-library docstrings")
    args = parser.parse_args()
    rng = random.Random(1)
    with open(HERE / "train_prompts.jsonl", encoding="utf-8") as f:
        first = [json.loads(line) for line in f if line.strip()]
    seen = {t["value"] for r in first for t in r["conversations"] if t["from"] == "human"}
    prompts = [("templates", *p) for p in template_prompts(rng, args.templates, seen)]
    prompts += [("pydoc", *p) for p in pydoc_prompts(rng, args.pydoc)]
    records, dropped = conversations(prompts, rng)
    write_records(args.out, records, "more")
    print(f"wrote {len(records)} records to {args.out} (dropped for eight words shared with an evaluation set: "
          f"{dict(dropped)})")
    by = Counter((r["source"], r["category"]) for r in records)
    for category in base.CATEGORIES:
        print(f"  {category:14s} templates {by['templates', category]:5d}  pydoc {by['pydoc', category]:5d}")
    print(f"  two-turn: {sum(len(r['conversations']) > 2 for r in records)}")


if __name__ == "__main__":
    main()
