#!/usr/bin/env python3
"""Build a third set of head-training prompts from WordNet: ``train_prompts_wordnet.jsonl.gz``.

Writing, roleplay, STEM and humanities prompts of the first two sets come from hand-written
templates over topic lists of a few hundred names, and MT-bench, where the head does worst,
asks about far more things. WordNet 3.0 (Debian's ``wordnet-base``, read from
``/usr/share/wordnet``) names about 7,000 nouns in common use in the domains used here (their
first sense tagged at least once in its sense-tagged corpus) and about 3,800 people and 2,400
places, each with a one-line definition (its gloss) and a lexical domain: ``noun.animal``,
``noun.phenomenon``, ``noun.person``, ... Each category draws its topics from the domains
that suit it:

- ``stem``: animals, plants, the body, substances, natural objects, phenomena and processes,
  as "explain", "how does it work" and "compare with a sibling" (a noun under the same
  hypernym) questions;
- ``humanities``: people and places (WordNet's named instances, with their gloss to say who or
  where), events, ideas (``noun.cognition``), forms of communication and groups;
- ``writing``: poems, stories, letters, posts and descriptions about concrete nouns and places;
- ``roleplay``: occupations and roles (``noun.person`` that are not named people) and named
  people, spoken to in character.

The gloss goes into a prompt where the name alone is ambiguous (a person's surname, a word
with many senses). A tenth of the records get a second user turn (a follow-up of their
category, ``make_train_prompts.py``'s). Records sharing eight words in a row with an
evaluation set are dropped, as in ``make_more_prompts.py``, and none repeats a prompt of the
first two sets. Deterministic for a given WordNet (one ``random.Random(2)``).

    apt-get install wordnet-base
    python assets/data/make_wordnet_prompts.py [--out PATH] [--per-category N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_more_prompts as more  # noqa: E402  (records, the evaluation check, the file)
import make_train_prompts as base  # noqa: E402  (the follow-ups, vary, the first set)

WORDNET = Path("/usr/share/wordnet")
# WordNet 3.0's noun lexicographer files (lexnames), by number.
DOMAINS = {5: "animal", 6: "artifact", 8: "body", 9: "cognition", 10: "communication", 11: "event", 13: "food",
           14: "group", 15: "location", 17: "object", 18: "person", 19: "phenomenon", 20: "plant",
           22: "process", 27: "substance"}
COUNTABLE = ("animal", "artifact", "body", "object", "plant")
# A role to play is a person noun under one of these (WordNet 3.0 offsets): worker, skilled
# worker, professional, practitioner, expert, scientist, artist, performer, leader, athlete,
# explorer, adventurer, craftsman. Not "eccentric" or "lightweight".
ROLE_ANCESTORS = {"09632518", "10605985", "10480253", "10462860", "09617867", "10560637", "09812338", "10415638",
                  "09623038", "09820263", "10072708", "09606009", "09974648"}


@dataclass
class Synset:
    domain: str
    words: list[str]  # its lemmas, as written (named ones capitalised)
    gloss: str  # the definition, without the examples
    hypernyms: list[str]  # synset offsets
    instance: bool  # a named person, place or thing (an instance hypernym)

    @property
    def name(self) -> str:
        """The first lemma (the usual one), for a named person the fullest (the full name,
        not the surname alone)."""
        words = self.words if not (self.instance and self.domain == "person") else [max(self.words, key=len)]
        return words[0].replace("_", " ")

    @property
    def countable(self) -> bool:
        """Whether "the NAME" reads well: a thing, not a substance, a process or an idea."""
        return self.domain in COUNTABLE and not self.instance


def read_wordnet(root: Path = WORDNET) -> tuple[dict[str, Synset], list[str]]:
    """The noun synsets by offset, and the offsets of the nouns in common use: the first sense
    of each lemma tagged at least once in WordNet's sense-tagged corpus (index.noun)."""
    synsets = {}
    with open(root / "data.noun", encoding="latin-1") as f:
        for line in f:
            if line.startswith("  "):  # the licence header
                continue
            head, _, gloss = line.partition("|")
            fields = head.split()
            domain = DOMAINS.get(int(fields[1]))
            if domain is None:
                continue
            count = int(fields[3], 16)
            words = [fields[4 + 2 * i].split("(")[0] for i in range(count)]  # "(a)"-style markers dropped
            pointers = fields[5 + 2 * count:]
            links = [(pointers[4 * i], pointers[4 * i + 1]) for i in range(int(fields[4 + 2 * count]))]
            synsets[fields[0]] = Synset(domain, words, gloss.split(";")[0].strip(),
                                        [target for symbol, target in links if symbol in ("@", "@i")],
                                        any(symbol == "@i" for symbol, _ in links))
    common = []
    with open(root / "index.noun", encoding="latin-1") as f:
        for line in f:
            if line.startswith("  "):
                continue
            fields = line.split()
            pointer_count = int(fields[3])
            tagged, first = int(fields[5 + pointer_count]), fields[6 + pointer_count]
            if tagged and first in synsets:
                common.append(first)
    return synsets, sorted(set(common))


def siblings(synsets: dict[str, Synset], common: set[str]) -> dict[str, list[str]]:
    """For each common synset, the other common ones under the same hypernym."""
    under: dict[str, list[str]] = {}
    for offset in sorted(common):
        for hypernym in synsets[offset].hypernyms:
            under.setdefault(hypernym, []).append(offset)
    found: dict[str, list[str]] = {}
    for offsets in under.values():
        for offset in offsets:
            found.setdefault(offset, []).extend(o for o in offsets if o != offset)
    return found


def described(synset: Synset) -> str:
    """The name, with its gloss where the name alone may not say which thing is meant."""
    return f"{the(synset)} ({synset.gloss})"


def the(synset: Synset) -> str:
    """The name as a sentence uses it: "the mosquito", but "sodium", "Majorca"."""
    return f"the {synset.name}" if synset.countable else synset.name


def is_role(offset: str, synsets: dict[str, Synset]) -> bool:
    """Whether a person noun descends from one of ROLE_ANCESTORS."""
    seen, frontier = set(), [offset]
    while frontier:
        current = frontier.pop()
        if current in ROLE_ANCESTORS:
            return True
        if current not in seen and current in synsets:
            seen.add(current)
            frontier += synsets[current].hypernyms
    return False


STEM_TEMPLATES = [
    "Explain what {d} is and why it matters.",
    "Give me three interesting facts about {x}.",
    "Write a short explanation of {x} for a science encyclopedia for children.",
    "What do scientists know about {x}? Keep it short.",
]
STEM_BY_DOMAIN = {
    "animal": ["Describe {x}: where it lives, what it eats and how it behaves.",
               "How is {x} adapted to its environment?"],
    "plant": ["Describe {x}: where it grows, what it needs and what it is used for.",
              "How does {x} reproduce and spread?"],
    "body": ["What does {x} do in the human body?", "Explain how {x} works and what can go wrong with it."],
    "substance": ["What are the properties and uses of {x}?", "Where does {x} come from, and how is it used?"],
    "object": ["How does {x} form in nature?", "Describe {d} and how scientists study it."],
    "phenomenon": ["What causes {x}? Explain it in simple terms.", "Explain {d} with an everyday example."],
    "process": ["How does {x} work? Describe the main steps.", "Explain {d} step by step."],
}
STEM_PAIR_TEMPLATES = [
    "What is the difference between {x} and {y}?",
    "Compare {x} and {y}: how are they alike, and how do they differ?",
]
HUMANITIES_PEOPLE = [
    "Who was {d}? Why is this person remembered today?",
    "Summarize the life and achievements of {d}.",
    "What can we learn from the life of {x}, the {g}?",
    "Describe the historical context in which {x} ({g}) lived.",
]
HUMANITIES_PLACES = [
    "Give a short overview of the history and culture of {x} ({g}).",
    "What is {x} known for? It is {g}.",
    "Describe {d} for someone who is about to visit it for the first time.",
]
HUMANITIES_IDEAS = [
    "Explain the idea of {d}.",
    "Why is {x} important in history or society?",
    "Discuss the meaning of {x}, with one historical example.",
    "How has the understanding of {x} changed over time?",
]
WRITING_TEMPLATES = [
    "Write a short poem about {x}.",
    "Write a story for children in which {x} plays an important part.",
    "Write a blog post about {x}, in a friendly tone.",
    "Write a haiku about {x}.",
    "Write a letter to a friend describing {x}.",
    "Write a persuasive paragraph on why everyone should learn about {x}.",
]
WRITING_PRODUCTS = ["Write a short product description for {x}.", "Write an advertisement for {x}, in two sentences."]
WRITING_PLACES = [
    "Write a travel blog post about a trip to {x}.",
    "Write a short story set in {x}.",
    "Write a poem about {x} at night.",
]
ROLEPLAY_ROLES = [
    "Pretend you are {a}. A curious visitor asks what your work is like. Answer in character.",
    "You are {a}. Describe a typical day, staying in character.",
    "Act as {a} and give a newcomer your best advice.",
    "Imagine you are {a} being interviewed for a podcast. Answer the first question: how did you start?",
]
ROLEPLAY_PEOPLE = [
    "Pretend to be {x}, the {g}. Introduce yourself to a class of students.",
    "You are {x} ({g}). What would you say about the world today? Stay in character.",
]
DOMAINS_BY_CATEGORY = {
    "stem": ("animal", "plant", "body", "substance", "object", "phenomenon", "process"),
    "humanities": ("event", "cognition", "communication", "group"),
    "writing": ("animal", "plant", "artifact", "food", "object", "phenomenon"),
}


def fill(template: str, synset: Synset, other: Synset | None = None) -> str:
    text = template.format(x=the(synset), d=described(synset), g=synset.gloss, y=the(other) if other else "",
                           a=f"{base.a_or_an(synset.name)} {synset.name}")
    return text[0].upper() + text[1:]


def category_prompts(category: str, synsets: dict[str, Synset], common: list[str], rng: random.Random,
                     count: int, seen: set[str]) -> list[str]:
    """Up to `count` new unique prompts of one category."""
    pool = [synsets[o] for o in common]
    named = [s for s in synsets.values() if s.instance]
    people = [s for s in named if s.domain == "person"]
    places = [s for s in named if s.domain == "location"]
    roles = [synsets[o] for o in common if synsets[o].domain == "person" and is_role(o, synsets)]
    stem = [o for o in common if synsets[o].domain in DOMAINS_BY_CATEGORY["stem"]]
    ideas = [s for s in pool if s.domain in DOMAINS_BY_CATEGORY["humanities"]]
    things = [s for s in pool if s.domain in DOMAINS_BY_CATEGORY["writing"]]
    kin = siblings(synsets, set(common))

    def one() -> str:
        if category == "stem":
            offset = rng.choice(stem)
            if kin.get(offset) and rng.random() < 0.3:
                return fill(rng.choice(STEM_PAIR_TEMPLATES), synsets[offset], synsets[rng.choice(kin[offset])])
            return fill(rng.choice(STEM_TEMPLATES + STEM_BY_DOMAIN[synsets[offset].domain]), synsets[offset])
        if category == "humanities":
            kind = rng.random()
            if kind < 0.35:
                return fill(rng.choice(HUMANITIES_PEOPLE), rng.choice(people))
            if kind < 0.55:
                return fill(rng.choice(HUMANITIES_PLACES), rng.choice(places))
            return fill(rng.choice(HUMANITIES_IDEAS), rng.choice(ideas))
        if category == "writing":
            if rng.random() < 0.25:
                return fill(rng.choice(WRITING_PLACES), rng.choice(places))
            thing = rng.choice(things)
            products = WRITING_PRODUCTS if thing.domain in ("artifact", "food") else []
            return fill(rng.choice(WRITING_TEMPLATES + products), thing)
        if rng.random() < 0.3:
            return fill(rng.choice(ROLEPLAY_PEOPLE), rng.choice(people))
        return fill(rng.choice(ROLEPLAY_ROLES), rng.choice(roles))

    found: list[str] = []
    for _ in range(40 * count):
        text = base.vary(one(), rng, 0.25)
        if text not in seen:
            seen.add(text)
            found.append(text)
            if len(found) == count:
                break
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "train_prompts_wordnet.jsonl.gz")
    parser.add_argument("--per-category", type=int, default=2500)
    args = parser.parse_args()
    if not (WORDNET / "data.noun").exists():
        sys.exit(f"no WordNet at {WORDNET}: apt-get install wordnet-base")
    rng = random.Random(2)
    synsets, common = read_wordnet()
    seen = set()
    with open(HERE / "train_prompts.jsonl", encoding="utf-8") as f:
        seen |= {t["value"] for line in f if line.strip() for t in json.loads(line)["conversations"]}
    with gzip.open(HERE / "train_prompts_more.jsonl.gz", "rt", encoding="utf-8") as f:
        seen |= {t["value"] for line in f for t in json.loads(line)["conversations"]}
    prompts = [("wordnet", category, text, ()) for category in ("writing", "roleplay", "stem", "humanities")
               for text in category_prompts(category, synsets, common, rng, args.per_category, seen)]
    records, dropped = more.conversations(prompts, rng)
    more.write_records(args.out, records, "wordnet")
    print(f"wrote {len(records)} records to {args.out} (dropped for eight words shared with an evaluation set: "
          f"{sum(dropped.values())}; {len(common)} common nouns)")
    print("  " + ", ".join(f"{c} {n}" for c, n in Counter(r["category"] for r in records).items()))
    print(f"  two-turn: {sum(len(r['conversations']) > 2 for r in records)}")


if __name__ == "__main__":
    main()
