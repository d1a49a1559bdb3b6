#!/usr/bin/env python3
"""Build the chat prompts used to train the EAGLE-3 draft head for SmolLM2-135M-Instruct.

Writes ``assets/data/train_prompts.jsonl`` next to this file: about 4000 single-turn prompts
and about 400 two-turn conversations in ten categories (writing, roleplay, reasoning, math,
coding, extraction, stem, humanities, editing, summarization), in ShareGPT shape with empty
assistant turns for the target model to fill in (``python -m eagle3.features --regenerate``).

Everything here was written for this project: templates, topic lists and the short passages
used by the extraction, editing and summarization prompts. No benchmark text is used. The
evaluation set ``assets/prompts/chat.jsonl`` was written separately; it is read only to drop
any training record that shares a run of eight words with it, so that it stays held out.

Standard library only, no network, deterministic: every random choice comes from one
``random.Random(0)`` used in a fixed order, so running it twice gives the same file.

    python assets/data/make_train_prompts.py [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from pathlib import Path

SINGLE_PER_CATEGORY = 400
MULTI_PER_CATEGORY = 40
CATEGORIES = [
    "writing", "roleplay", "reasoning", "math", "coding",
    "extraction", "stem", "humanities", "editing", "summarization",
]

# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------

IMPERATIVES = {
    "Write", "Explain", "Describe", "Give", "List", "Create", "Compose", "Tell", "Suggest",
    "Summarize", "Summarise", "Rewrite", "Extract", "Compare", "Name", "Find", "Solve",
    "Calculate", "Convert", "Show", "Make", "Plan", "Draft", "Outline", "Pretend", "Imagine",
    "Act", "Introduce", "Continue", "Translate", "Correct", "Fix", "Proofread", "Shorten",
    "Identify", "Work", "Figure", "Decide", "Help", "Recommend", "Brainstorm", "Come",
    "Discuss", "Define", "Count", "Estimate", "Round", "Simplify", "Evaluate", "Add",
    "Implement", "Generate", "Return", "Read", "Turn", "Pull", "Answer", "Play", "Respond",
    "Greet", "Welcome", "Stay", "Speak", "Interview", "Reply", "Check", "Predict",
}

GREETINGS = ["Hi! ", "Hello! ", "Hey there! ", "Good morning! ", "Hi there. "]
THANKS = [" Thanks!", " Thank you!", " Thanks in advance.", " Thank you so much.", " Cheers!"]
OPENERS = ["I have a request. ", "I need a little help. ", "Quick one: ", "Here is a task for you. "]


def lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def vary(text: str, rng: random.Random, strength: float = 0.45) -> str:
    """Vary politeness and framing of a prompt without changing what it asks."""
    if rng.random() > strength:
        return text
    first = text.split(" ", 1)[0].strip(",:")
    imperative = first in IMPERATIVES
    one_sentence = "\n" not in text and text.endswith(".") and text.count(". ") == 0
    r = rng.random()
    if imperative and r < 0.3:
        return "Please " + lower_first(text)
    if imperative and one_sentence and r < 0.5:
        return rng.choice(["Could you ", "Can you ", "Would you "]) + lower_first(text[:-1]) + "?"
    if imperative and one_sentence and r < 0.58:
        return rng.choice(["I'd like you to ", "I want you to "]) + lower_first(text)
    if r < 0.72:
        return rng.choice(GREETINGS) + text
    if r < 0.9:
        return text + rng.choice(THANKS)
    return rng.choice(OPENERS) + text


def fill(template: str, slots: dict[str, list[str]], rng: random.Random) -> str:
    """Fill every {name} in the template with a random entry of slots[name]."""
    names = re.findall(r"\{(\w+)\}", template)
    chosen: dict[str, str] = {}
    for name in names:
        if name in chosen:
            continue
        value = rng.choice(slots[name])
        # A second slot of the same list (e.g. {topic2}) must differ from the first.
        if name.endswith("2") and name[:-1] in chosen:
            while value == chosen[name[:-1]]:
                value = rng.choice(slots[name])
        chosen[name] = value
    out = template
    for name, value in chosen.items():
        out = out.replace("{" + name + "}", value)
    return out


def a_or_an(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


class Pool:
    """Unique prompts for one category, each with tags that pick suitable follow-ups."""

    def __init__(self) -> None:
        self.items: list[tuple[str, tuple[str, ...]]] = []
        self.seen: set[str] = set()

    def add(self, text: str, *tags: str) -> None:
        text = text.strip()
        if text and text not in self.seen:
            self.seen.add(text)
            self.items.append((text, tags))

    def __len__(self) -> int:
        return len(self.items)


def build(pool: Pool, maker, rng: random.Random, want: int, max_tries: int = 200000) -> None:
    tries = 0
    while len(pool) < want and tries < max_tries:
        tries += 1
        out = maker(rng)
        if isinstance(out, tuple):
            pool.add(out[0], *out[1:])
        else:
            pool.add(out)


# ---------------------------------------------------------------------------------------------
# Shared vocabulary
# ---------------------------------------------------------------------------------------------

NAMES = [
    "Alice", "Ben", "Carla", "David", "Emma", "Farid", "Grace", "Hugo", "Ines", "Jamal",
    "Kiko", "Leo", "Maya", "Nina", "Omar", "Priya", "Quinn", "Rosa", "Sam", "Tara",
    "Umar", "Vera", "Will", "Xena", "Yusuf", "Zoe", "Lena", "Marco", "Aisha", "Tom",
    "Hana", "Diego", "Sofia", "Ravi", "Elena", "Kofi", "Mei", "Noah", "Lucia", "Ivan",
]
FEMALE_NAMES = ["Alice", "Carla", "Emma", "Grace", "Ines", "Maya", "Nina", "Priya", "Rosa", "Tara",
                "Vera", "Zoe", "Lena", "Aisha", "Hana", "Sofia", "Elena", "Mei", "Lucia"]
MALE_NAMES = ["Ben", "David", "Farid", "Hugo", "Jamal", "Leo", "Omar", "Umar", "Will", "Yusuf",
              "Marco", "Tom", "Diego", "Ravi", "Kofi", "Noah", "Ivan"]

TOPICS = [
    # everyday life
    "a rainy Monday morning", "learning to ride a bike", "moving to a new city", "a lost umbrella",
    "the first day at a new job", "a quiet Sunday afternoon", "cleaning out the garage",
    "a long bus ride", "making new friends", "a birthday party", "the smell of fresh bread",
    "waiting for a package", "a power cut at night", "the last day of summer", "a broken alarm clock",
    "growing tomatoes on a balcony", "a family dinner", "an old photograph", "a snow day",
    "a crowded train station", "saving money for something special", "a walk in the park",
    # science and nature
    "the ocean at night", "a thunderstorm", "the moon", "autumn leaves", "a volcano",
    "the life of a honeybee", "a tiny seed growing into a tree", "the northern lights",
    "a desert at sunrise", "the stars on a clear night", "a mountain lake", "migrating birds",
    "a coral reef", "the first snow of winter", "a rainbow after the rain",
    # history and places
    "an ancient castle", "a lighthouse keeper", "a busy medieval market", "the first train journey",
    "an old library", "a sailing ship in a storm", "a small fishing village", "a forgotten island",
    # cooking and food
    "baking bread for the first time", "a cup of hot chocolate", "a street food market",
    "grandma's soup recipe", "a picnic by the river", "a burnt pizza", "fresh strawberries",
    # travel
    "a road trip with friends", "getting lost in a foreign city", "a night train", "a camping trip",
    "a hike to a waterfall", "a missed flight", "a beach in winter",
    # sports and hobbies
    "a football match in the rain", "running a first marathon", "learning to swim",
    "a chess tournament", "a school sports day", "practising the guitar", "a bowling night",
    # work and business
    "starting a small bakery", "a lemonade stand", "working from home", "a job interview",
    "a team that finishes a big project", "a busy coffee shop", "a small bookshop",
    # health
    "getting enough sleep", "drinking more water", "a morning stretch", "taking a break from screens",
    # technology
    "a robot that learns to paint", "a phone with a dead battery", "a smart home that gets confused",
    "the first video call with grandparents", "a video game world", "a self-driving bus",
    # animals
    "a curious cat", "a loyal old dog", "a penguin", "an owl in the forest", "a family of ducks",
    "a hedgehog in the garden", "a playful dolphin", "a lazy sloth", "a clever crow", "an elephant",
    # arts
    "a street musician", "a painter's empty canvas", "a school play", "an old piano",
    "a dance class", "a museum at night", "a choir concert",
]

PLACES = [
    "Paris", "Tokyo", "Rome", "New York", "Cairo", "Sydney", "Rio de Janeiro", "Lisbon",
    "Istanbul", "Kyoto", "Barcelona", "Cape Town", "Vancouver", "Reykjavik", "Prague",
    "Mexico City", "Seoul", "Amsterdam", "Marrakech", "Edinburgh", "Buenos Aires", "Bangkok",
    "a small mountain village", "a tropical island", "the Scottish Highlands", "the Swiss Alps",
    "a desert oasis", "a seaside town", "a national park", "the countryside",
]

ANIMALS = [
    "a little fox", "a sleepy bear", "a brave mouse", "a kind giraffe", "a shy turtle",
    "a friendly dragon", "a tiny owl", "a lost puppy", "a curious kitten", "a dancing penguin",
    "a clumsy elephant", "a singing frog", "a rabbit who cannot hop", "a whale who loves music",
    "a snail in a hurry", "a lion who is afraid of the dark",
]

FOODS = [
    "pancakes", "tacos", "sushi", "vegetable soup", "pizza", "dumplings", "curry", "pasta",
    "fresh salads", "burgers", "ice cream", "noodles", "sandwiches", "grilled fish", "pies",
]

JOBS = [
    "barista", "software developer", "nurse", "teacher", "librarian", "graphic designer",
    "delivery driver", "chef", "gardener", "sales assistant", "data analyst", "museum guide",
    "bike mechanic", "receptionist", "dog walker", "project manager", "photographer", "carpenter",
]

PRODUCTS = [
    "a reusable water bottle", "a pair of noise-cancelling headphones", "a solar-powered lamp",
    "a smart alarm clock", "a bamboo toothbrush", "a foldable bicycle", "a travel backpack",
    "a handmade ceramic mug", "a wireless keyboard", "a board game for families",
    "a cookbook for beginners", "a plant that is hard to kill", "a warm winter jacket",
    "a fitness tracker", "a kids' science kit", "a coffee grinder", "a rain jacket for dogs",
    "a language-learning app", "a standing desk", "a set of colouring pencils",
]


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------

WRITING_SLOTS = {
    "topic": TOPICS,
    "topic2": TOPICS,
    "place": PLACES,
    "animal": ANIMALS,
    "food": FOODS,
    "job": JOBS,
    "product": PRODUCTS,
    "person": ["my grandmother", "a teacher", "a neighbour", "my best friend", "a coworker",
               "my brother", "my sister", "a coach", "my mum", "my dad", "a former boss"],
    "thing": ["helping me move house", "a lovely birthday gift", "looking after my cat",
              "the advice about my career", "lending me a book", "a delicious dinner",
              "driving me to the airport", "helping with my homework", "being so patient"],
    "mistake": ["missing a meeting", "forgetting a birthday", "sending the wrong file",
                "arriving late", "breaking a borrowed mug", "not replying for a week"],
    "event": ["the opening of a new café", "a charity fun run", "a school bake sale",
              "a new podcast episode", "a summer sale", "a community garden day",
              "a book launch", "a free coding workshop", "a neighbourhood clean-up"],
    "object": ["a mirror", "a music box", "an old key", "a doll", "a phone call at 3 am",
               "a door that will not stay shut", "a painting", "a lift", "a shadow"],
    "word": ["SPRING", "OCEAN", "FRIEND", "MUSIC", "HOPE", "COFFEE", "SCHOOL", "GARDEN",
             "SMILE", "RIVER", "BOOKS", "PEACE", "TRAVEL", "WINTER"],
    "team": ["school football team", "basketball team", "relay team", "debate team",
             "rowing crew", "netball team", "quiz team"],
    "club": ["book", "chess", "gardening", "hiking", "photography", "cooking", "astronomy"],
    "occasion": ["a wedding", "a retirement party", "a graduation", "a best friend's birthday",
                 "a new year's eve dinner", "a colleague's farewell", "an anniversary"],
    "situation": ["a week-long holiday", "a conference trip", "a sick day", "a long weekend",
                  "parental leave", "a training course"],
    "opinion": ["every school should have a garden", "people should read more books",
                "cities should have more bike lanes", "libraries are still important",
                "everyone should learn to cook", "children should learn a second language",
                "walking is the best form of exercise", "shops should use less plastic",
                "short breaks make people more productive", "board games are better than video games"],
    "audience": ["children", "teenagers", "busy parents", "retired people", "new employees",
                 "students", "beginners"],
}

WRITING_TEMPLATES = [
    "Write a short poem about {topic}.",
    "Write a haiku about {topic}.",
    "Write a four-line rhyming poem about {topic}.",
    "Write a limerick about {topic}.",
    "Write a short story of about 150 words about {topic}.",
    "Write the opening paragraph of a story about {topic}.",
    "Write a one-sentence story about {topic}.",
    "Write a fairy tale in five sentences about {topic}.",
    "Write a diary entry about {topic}.",
    "Write a short blog post introduction about {topic}.",
    "Write a tweet about {topic}.",
    "Write three possible titles for an article about {topic}.",
    "Write a short dialogue between two friends about {topic}.",
    "Write a song chorus about {topic}.",
    "Describe {topic} using all five senses.",
    "Write a short paragraph about {topic} that ends with a surprise.",
    "Write a short speech about {topic} for a school assembly.",
    "Write a letter to your future self about {topic}.",
    "Write a short mystery story that involves {topic}.",
    "Write a list of five creative writing prompts about {topic}.",
    "Write a short paragraph about {topic} for {audience}.",
    "Write a children's bedtime story about {animal}.",
    "Write a short poem from the point of view of {animal}.",
    "Write a postcard message from {place}.",
    "Write a short travel diary entry about a day in {place}.",
    "Describe {place} early in the morning in one paragraph.",
    "Write a short review of an imaginary restaurant that serves {food}.",
    "Write a menu description for a dish of {food}.",
    "Write a job advertisement for a {job}.",
    "Write the opening of a cover letter for a {job} position.",
    "Write a short product description for {product}.",
    "Write a catchy slogan for {product}.",
    "Write a short radio advert for {product}.",
    "Write a thank-you note to {person} for {thing}.",
    "Write a short apology message to {person} for {mistake}.",
    "Write a short social media post announcing {event}.",
    "Write a short email inviting people to {event}.",
    "Write a two-sentence horror story about {object}.",
    "Write a riddle whose answer is {object}.",
    "Write an acrostic poem using the word {word}.",
    "Write a short pep talk for a {team} before a big game.",
    "Write a welcome message for new members of a {club} club.",
    "Write a short toast for {occasion}.",
    "Write an out-of-office email reply for {situation}.",
    "Write a short persuasive paragraph arguing that {opinion}.",
    "Write a short opinion piece on why {opinion}.",
    "Write a motivational quote about {topic}.",
    "Write a short scene in which a character remembers {topic}.",
    "Compose a short birthday message for {person}.",
    "Write a short, funny story about {animal} who wants to become a {job}.",
]

WRITING_FOLLOWUPS = [
    "Make it shorter.", "Now make it funnier.", "Give it a title.", "Rewrite it for a young child.",
    "Can you make it rhyme?", "Rewrite it in a more formal tone.", "Make it more cheerful.",
    "Add one more sentence at the end.", "Rewrite it from a different point of view.",
    "Now make it sound more dramatic.", "Can you cut it down to two sentences?",
    "Make it sound more exciting.", "Now write a second, different version.",
    "Explain why you made those choices.",
]


def make_writing(rng: random.Random) -> str:
    return vary(fill(rng.choice(WRITING_TEMPLATES), WRITING_SLOTS, rng), rng)


# ---------------------------------------------------------------------------------------------
# roleplay
# ---------------------------------------------------------------------------------------------

ROLES = [
    "a pirate captain", "a medieval knight", "a friendly robot", "a wise old wizard",
    "an astronaut on the space station", "a detective in a foggy city", "a school librarian",
    "a grumpy but kind chef", "a park ranger", "a dragon who guards a library",
    "a cat who thinks it rules the house", "a time traveller from the year 3000",
    "a lighthouse keeper", "a football coach", "a museum guide", "a sea captain",
    "a farmer", "a firefighter", "a baker in a small village", "a zookeeper",
    "a ghost who lives in an old theatre", "a tour guide", "a yoga teacher",
    "a superhero on their day off", "a news reporter", "a mountain guide",
    "a kind nurse", "a game show host", "a fortune teller at a fair", "a toy that has come to life",
    "a Roman soldier", "a Victorian inventor", "a tree that is 500 years old",
    "a mail carrier", "a radio DJ", "an alien visiting Earth for the first time",
]

ROLE_TASKS = [
    "Introduce yourself and describe a typical day.",
    "Give me one piece of advice for life.",
    "Tell me about the hardest part of your job.",
    "Describe the best day you have ever had.",
    "Tell me a short story about something funny that happened to you.",
    "What do you eat for breakfast?",
    "Explain what you love most about what you do.",
    "Describe where you live.",
    "Tell me about a mistake you once made and what you learned.",
    "What would you like people to know about you?",
    "Give me three tips for someone who wants your job.",
    "Describe your favourite tool or possession.",
    "What is something that always makes you laugh?",
    "Tell me what you are planning to do tomorrow.",
    "Answer this: what scares you the most?",
    "Describe the view from your window.",
]

ROLEPLAY_SLOTS = {
    "role": ROLES,
    "task": ROLE_TASKS,
    "place": PLACES,
    "job": JOBS,
    "company": ["an online shoe shop", "a phone company", "an airline", "a pizza delivery service",
                "a bank", "an internet provider", "a furniture store", "a gym", "a hotel"],
    "complaint": [
        "My order arrived two weeks late.", "I was charged twice this month.",
        "The item I received is broken.", "I can't log in to my account.",
        "My pizza was cold when it arrived.", "My flight was cancelled and nobody told me.",
        "The room was not cleaned.", "I want to cancel my membership but I can't find how.",
        "The wrong size was delivered.", "My internet has been slow for three days.",
    ],
    "shop": ["bakery", "bookshop", "toy shop", "flower shop", "hardware store", "tea shop",
             "music shop", "second-hand clothes shop", "cheese shop", "pet shop"],
    "item": ["a birthday present for my dad", "something to cheer up a friend",
             "a gift for a five-year-old", "something for a rainy day", "a present for my teacher",
             "something cheap but special", "something for my new flat"],
    "cuisine": ["Italian", "Japanese", "Mexican", "Indian", "Greek", "Thai", "French", "Lebanese",
                "Korean", "Spanish"],
    "mentor": ["blacksmith", "sailor", "gardener", "teacher", "wizard", "chess master", "baker"],
    "news": ["a giant pumpkin contest", "a town's first snowfall in ten years",
             "a parade for the local football team", "a cat that was rescued from a tree",
             "the opening of a new bridge", "a school robotics competition"],
    "n": ["two", "three", "four", "five", "seven"],
    "subject": ["history", "science", "maths", "music", "art", "geography", "cooking"],
}

ROLEPLAY_TEMPLATES = [
    "Pretend you are {role}. {task}",
    "You are {role}. {task}",
    "Act as {role}. {task}",
    "Imagine you are {role}. {task}",
    "Roleplay as {role} and stay in character. {task}",
    "From now on you are {role}. {task}",
    "You are a customer service agent for {company}. A customer writes: \"{complaint}\" Write a polite reply.",
    "Act as a support agent at {company}. I say: \"{complaint}\" How do you respond?",
    "You are a shopkeeper in a {shop}. I walk in looking for {item}. Greet me and help me.",
    "Let's play a game. You run a {shop} and I am a customer who wants {item}. Start the conversation.",
    "You are a tour guide in {place}. Welcome a group of tourists and tell them the plan for the day.",
    "You are a travel agent. I want to visit {place} for {n} days. Suggest a simple plan.",
    "Pretend you are a local in {place}. Tell me the three things I must not miss.",
    "You are a job interviewer hiring a {job}. Ask me three interview questions.",
    "You are an experienced {job}. Give a new colleague advice for their first week.",
    "You are a waiter at a {cuisine} restaurant. Recommend a dish and describe it.",
    "You are a wise old {mentor}. Give advice to a young apprentice who wants to give up.",
    "Pretend to be a news reporter covering {news}. Give a short live report.",
    "You are a radio host. Introduce the next song and mention the weather in {place}.",
    "I'm a nervous student before an exam. Respond as a supportive older sibling.",
    "Act as a personal trainer and give me a short warm-up routine.",
    "You are a friendly {subject} teacher on the first day of school. Introduce your class.",
    "Pretend you are {role} writing a short letter to a friend.",
    "You are {role}. Someone asks you for directions to the nearest library. Answer in character.",
    "Play the role of {role} and describe your home to a visitor.",
    "You are a librarian. A child asks you for a good book about animals. Respond kindly.",
    "Act as a museum guide and describe an imaginary painting to visitors.",
    "You are a game show host. Welcome the contestants and explain the rules of a simple quiz.",
    "Pretend you are a coach talking to a team that just lost a match. What do you say?",
    "You are a doctor's receptionist. A patient calls to move their appointment. Handle the call.",
    "Pretend you are a smart speaker. I ask you to plan my morning. Reply in character.",
    "You are a pet dog. Describe what you think of your owner's new job.",
    "Speak as {role} and explain why Mondays are the best day of the week.",
    "You are a hotel receptionist in {place}. A guest arrives late at night. Greet them.",
    "Imagine you are a character in a fantasy story who has just found a map. Describe what you do next.",
    "You are a kind neighbour. I just moved in next door. Welcome me.",
    "You are a camp counsellor. Tell the children the rules for the first evening.",
    "Be a chef on a cooking show and explain how to make {cuisine} style scrambled eggs.",
    "Act as a career coach. I want to become a {job}. Give me a short plan.",
    "You are a stern but fair judge at a baking contest. Give feedback on a lopsided cake.",
    "Pretend you are {role} giving a short speech at a birthday party.",
    "You are a spaceship's computer. Report the ship's status to the captain.",
]

ROLEPLAY_FOLLOWUPS = [
    "Stay in character and tell me more.", "What would you say if I disagreed with you?",
    "Now say goodbye, still in character.", "Tell me a short story from your life.",
    "Give me one more piece of advice.", "What is your favourite part of the day?",
    "Stay in character: what do you think of me?", "Can you say that again, but shorter?",
    "Now answer as if you were very tired.", "What happens next?",
    "Now describe the same thing to a small child.",
]


def make_roleplay(rng: random.Random) -> str:
    return vary(fill(rng.choice(ROLEPLAY_TEMPLATES), ROLEPLAY_SLOTS, rng), rng, strength=0.3)


# ---------------------------------------------------------------------------------------------
# reasoning
# ---------------------------------------------------------------------------------------------

COMPARATIVES = [
    ("taller", "the tallest", "the shortest"), ("older", "the oldest", "the youngest"),
    ("faster", "the fastest", "the slowest"), ("heavier", "the heaviest", "the lightest"),
    ("richer", "the richest", "the poorest"), ("stronger", "the strongest", "the weakest"),
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
NONSENSE = ["bloops", "razzies", "lazzles", "glimps", "wugs", "florbs", "snarks", "trobs",
            "zints", "quibs"]
WORD_GROUPS = {
    "fruits": ["apple", "banana", "cherry", "mango", "pear", "grape", "plum", "kiwi"],
    "animals": ["dog", "horse", "rabbit", "tiger", "sheep", "goat", "zebra", "camel"],
    "colours": ["red", "blue", "green", "yellow", "purple", "orange", "pink", "brown"],
    "planets": ["Mars", "Venus", "Jupiter", "Saturn", "Mercury", "Neptune"],
    "instruments": ["piano", "violin", "drum", "flute", "guitar", "trumpet", "cello"],
    "vehicles": ["car", "bus", "bicycle", "train", "truck", "scooter", "tram"],
    "furniture": ["chair", "table", "sofa", "bed", "wardrobe", "bookshelf", "desk"],
    "tools": ["hammer", "screwdriver", "wrench", "saw", "drill", "pliers"],
    "sports": ["tennis", "football", "rugby", "golf", "hockey", "cricket", "basketball"],
    "shapes": ["circle", "square", "triangle", "hexagon", "rectangle", "oval"],
}
CONDITIONALS = [
    ("it rains", "the street gets wet"), ("you press the switch", "the lamp turns on"),
    ("the shop is closed", "you cannot buy bread there"), ("a number is divisible by 4", "it is even"),
    ("an animal is a dog", "it is a mammal"), ("the alarm rings", "Sam wakes up"),
    ("the bus is late", "Maya misses the start of class"), ("water freezes", "it becomes ice"),
    ("you water the plant", "it grows"), ("the battery is empty", "the phone will not turn on"),
    ("a shape is a square", "it has four sides"), ("Leo is in Paris", "Leo is in France"),
]
ACTIONS = [
    "charge a phone overnight every night", "go swimming right after a big meal",
    "study for an exam the night before only", "water a cactus every day",
    "leave a dog in a hot car for a few minutes", "take a long walk in a thunderstorm",
    "buy a winter coat in summer", "read in dim light", "skip breakfast before a long run",
    "keep all your savings in cash at home", "plant a tree close to the house",
    "reuse the same password for every website", "leave bread out of the bag overnight",
    "start a long road trip without checking the tyres", "wear new shoes for a marathon",
    "put metal in a microwave", "turn off the fridge while on holiday",
    "take a nap in the middle of the afternoon", "book a holiday without reading the reviews",
    "learn a language by watching films", "use a ladder alone", "share a toothbrush",
]
SITUATIONS = [
    "the milk in the fridge smells sour", "a plant's leaves are turning yellow",
    "the car will not start in the morning", "a cake sank in the middle",
    "the lights in the whole street went out", "a shop is empty on a Saturday",
    "my phone battery drains very quickly", "the bus was full of people in wet coats",
    "the cat keeps sitting by the door", "a friend has not replied for three days",
    "the bread did not rise", "the grass is wet but it did not rain",
    "the classroom is very quiet", "the ice cream shop has a long queue",
    "a website loads slowly", "the train is much emptier than usual",
    "a student gets much better marks suddenly", "the kitchen smells of smoke",
]
HYPOTHETICALS = [
    "everyone in a town decided to cycle instead of drive", "a school started an hour later",
    "a city planted a tree on every street", "people only worked four days a week",
    "a shop gave away free umbrellas on rainy days", "nobody set an alarm clock for a week",
    "a library stopped charging late fees", "a restaurant doubled its prices overnight",
    "all the bees in a valley disappeared", "a town banned cars from its centre",
    "a bakery forgot to add salt to its bread", "a family turned off the internet for a month",
]
TODO = [
    "buy groceries", "pick up a parcel before the post office closes at 5 pm", "go to the gym",
    "cook dinner", "finish a report due tomorrow morning", "call my grandmother",
    "wash the car", "walk the dog", "pay a bill that is due today", "water the garden",
    "return a library book", "book a dentist appointment",
]
ANALOGIES = [
    ("hot", "cold", "up"), ("bird", "nest", "bee"), ("glove", "hand", "sock"),
    ("teacher", "school", "doctor"), ("puppy", "dog", "kitten"), ("pen", "write", "knife"),
    ("fish", "water", "bird"), ("page", "book", "brick"), ("day", "night", "summer"),
    ("painter", "brush", "writer"), ("eye", "see", "ear"), ("cow", "milk", "hen"),
    ("Paris", "France", "Tokyo"), ("wheel", "car", "wing"), ("seed", "tree", "egg"),
    ("library", "books", "garage"), ("thermometer", "temperature", "clock"),
    ("baker", "bread", "farmer"), ("rain", "umbrella", "sun"), ("key", "lock", "password"),
]
RIDDLES = [
    "Which is heavier: a kilogram of feathers or a kilogram of stones? Explain.",
    "A farmer has 15 sheep, and all but 6 run away. How many sheep are left?",
    "If there are 4 apples and you take away 3, how many apples do you have?",
    "Tom's mother has three children: April, May and a third child. What is the third child's name?",
    "A clock shows 3:15. What is the angle between the hour hand and the minute hand, roughly?",
    "If you overtake the person in second place in a race, what position are you in?",
    "How many months have 28 days?",
    "A box has 3 red socks and 3 blue socks. In the dark, how many socks must you take to be sure of a matching pair?",
    "You have a 3-litre jug and a 5-litre jug. How can you measure exactly 4 litres of water?",
    "Is it possible for a father to be younger than his son? Explain.",
    "If all roses are flowers and some flowers fade quickly, can we conclude that some roses fade quickly?",
    "A bat and a ball cost 1.10 dollars together. The bat costs 1 dollar more than the ball. How much is the ball?",
    "If five machines make five toys in five minutes, how long do 100 machines take to make 100 toys?",
    "A lily pad patch doubles in size every day and covers a pond in 30 days. When did it cover half the pond?",
    "Three friends split a bill of 30 dollars equally. How much does each pay, and why?",
    "What gets wetter the more it dries?",
    "Which weighs more: a tonne of bricks or a tonne of cotton?",
    "If a red house is made of red bricks and a blue house of blue bricks, what is a greenhouse made of?",
    "A man looks at a photo and says, 'I have no brothers, and that man's father is my father's son.' Who is in the photo?",
    "There are 10 birds on a fence. A hunter scares away 3. How many are left on the fence, and why?",
]
COMMONSENSE = [
    "Why do people usually carry umbrellas when the sky is grey?",
    "Why is it a bad idea to leave ice cream in a hot car?",
    "Why do shops often put sweets near the checkout?",
    "If you see many people wearing coats and scarves, what season is it probably?",
    "Why do we put food in the fridge?",
    "Why might a restaurant be busy at 1 pm but empty at 4 pm?",
    "Why do people whisper in a library?",
    "Why should you look both ways before crossing a road?",
    "Why do some people write to-do lists?",
    "Why does a wet towel dry faster in the sun than in a cupboard?",
    "Why do teachers give homework? Give two reasons.",
    "Why is it useful to keep a spare key with a neighbour?",
    "Why do bakeries open very early in the morning?",
    "Why do people wear sunglasses at the beach?",
    "Why do we need to charge phones but not books?",
    "Why might someone choose the stairs instead of the lift?",
    "If the road is icy, should you drive faster or slower? Why?",
    "Why is it easier to find a seat on a bus late at night?",
    "Why do people save money for emergencies?",
    "If a plant is kept in a dark cupboard for weeks, what will probably happen and why?",
]


def make_reasoning(rng: random.Random) -> str:
    kind = rng.randrange(14)
    if kind == 0:
        comp, top, bottom = rng.choice(COMPARATIVES)
        people = rng.sample(NAMES, rng.choice([3, 4]))
        facts = [f"{people[i]} is {comp} than {people[i + 1]}." for i in range(len(people) - 1)]
        rng.shuffle(facts)
        q = rng.choice([f"Who is {top}?", f"Who is {bottom}?",
                        f"Is {people[0]} {comp} than {people[-1]}?",
                        f"Put everyone in order from {top[4:]} to {bottom[4:]}."])
        return vary(" ".join(facts) + " " + q + rng.choice(["", " Explain your reasoning.", " Explain briefly."]), rng, 0.2)
    if kind == 1:
        a, b, c = rng.sample(NONSENSE, 3)
        form = rng.randrange(3)
        if form == 0:
            text = f"All {a} are {b}. All {b} are {c}. Are all {a} {c}? Explain."
        elif form == 1:
            text = f"All {a} are {b}. Some {b} are {c}. Does it follow that some {a} are {c}? Explain."
        else:
            text = f"No {a} are {b}. All {c} are {b}. Can any {c} be {a}? Explain your answer."
        return vary(text, rng, 0.2)
    if kind == 2:
        kind2 = rng.randrange(5)
        if kind2 == 0:
            s, d = rng.randint(1, 30), rng.randint(2, 12)
            seq = [s + d * i for i in range(5)]
        elif kind2 == 1:
            s, r = rng.randint(1, 5), rng.choice([2, 3])
            seq = [s * r ** i for i in range(5)]
        elif kind2 == 2:
            o = rng.randint(0, 5)
            seq = [(i + 1) ** 2 + o for i in range(5)]
        elif kind2 == 3:
            a, b = rng.randint(1, 5), rng.randint(1, 6)
            seq = [a, b]
            for _ in range(4):
                seq.append(seq[-1] + seq[-2])
        else:
            s, d = rng.randint(60, 120), rng.randint(3, 9)
            seq = [s - d * i for i in range(5)]
        shown = ", ".join(str(x) for x in seq)
        return vary(rng.choice([
            f"What is the next number in the sequence {shown}, ...?",
            f"Find the pattern and give the next two numbers: {shown}, ...",
            f"Continue this sequence and explain the rule: {shown}",
            f"What comes next: {shown}? Explain the pattern.",
        ]), rng, 0.2)
    if kind == 3:
        day, n = rng.choice(DAYS), rng.randint(2, 30)
        return vary(rng.choice([
            f"If today is {day}, what day of the week will it be in {n} days?",
            f"If today is {day}, what day of the week was it {n} days ago?",
            f"Yesterday was {day}. What day will it be the day after tomorrow?",
            f"If the day before yesterday was {day}, what day is today?",
        ]), rng, 0.2)
    if kind == 4:
        f1, f2 = rng.sample(FEMALE_NAMES, 2)
        m1, m2 = rng.sample(MALE_NAMES, 2)
        x = rng.choice(NAMES)
        while x in (f1, f2, m1, m2):
            x = rng.choice(NAMES)
        return vary(rng.choice([
            f"{f1} is {x}'s mother. {m1} is {f1}'s father. How is {m1} related to {x}?",
            f"{f1} and {f2} are sisters. {m1} is {f2}'s son. How is {m1} related to {f1}?",
            f"{m1} is the brother of {f1}. {f1} is the daughter of {x}. How is {m1} related to {x}?",
            f"{m1} is {x}'s grandfather, and {m2} is {m1}'s only child. Could {m2} be {x}'s parent? Explain.",
            f"{f1} is {m1}'s aunt. {m1}'s father is {m2}. How might {f1} and {m2} be related?",
        ]), rng, 0.2)
    if kind == 5:
        g1, g2 = rng.sample(list(WORD_GROUPS), 2)
        words = rng.sample(WORD_GROUPS[g1], 3) + [rng.choice(WORD_GROUPS[g2])]
        rng.shuffle(words)
        return vary(rng.choice([
            f"Which word does not belong: {', '.join(words)}? Explain why.",
            f"Find the odd one out: {', '.join(words)}.",
            f"One of these is different from the others: {', '.join(words)}. Which one, and why?",
        ]), rng, 0.2)
    if kind == 6:
        p, q = rng.choice(CONDITIONALS)
        return vary(rng.choice([
            f"Rule: if {p}, then {q}. Suppose {p}. What can we conclude?",
            f"Rule: if {p}, then {q}. We know that {q}. Can we be sure that {p}? Explain.",
            f"Rule: if {p}, then {q}. Suppose it is not true that {q}. What can we say about whether {p}?",
            f"Is this reasoning correct? \"If {p}, then {q}. {q[0].upper() + q[1:]}. So {p}.\" Explain.",
        ]), rng, 0.2)
    if kind == 7:
        return vary(rng.choice([
            f"Is it a good idea to {rng.choice(ACTIONS)}? Explain your reasoning.",
            f"Give two reasons why someone should not {rng.choice(ACTIONS)}.",
            f"Would you advise a friend to {rng.choice(ACTIONS)}? Answer yes or no and explain.",
        ]), rng)
    if kind == 8:
        return vary(rng.choice([
            f"Give two possible reasons why {rng.choice(SITUATIONS)}.",
            f"What is the most likely explanation if {rng.choice(SITUATIONS)}?",
            f"Think of three explanations for this: {rng.choice(SITUATIONS)}.",
        ]), rng)
    if kind == 9:
        return vary(rng.choice([
            f"What would probably happen if {rng.choice(HYPOTHETICALS)}?",
            f"Predict two effects if {rng.choice(HYPOTHETICALS)}.",
            f"Imagine {rng.choice(HYPOTHETICALS)}. What good and bad things might follow?",
        ]), rng)
    if kind == 10:
        tasks = rng.sample(TODO, rng.choice([3, 4]))
        listed = ", ".join(tasks[:-1]) + " and " + tasks[-1]
        return vary(rng.choice([
            f"Today I need to {listed}. In what order should I do them, and why?",
            f"I have one afternoon to {listed}. Suggest a sensible plan and explain it.",
        ]), rng)
    if kind == 11:
        a, b, c = rng.choice(ANALOGIES)
        return vary(rng.choice([
            f"Complete the analogy: {a} is to {b} as {c} is to what?",
            f"{a.capitalize() if a.islower() else a} is to {b} as {c} is to ___. Fill in the blank and explain.",
        ]), rng, 0.2)
    if kind == 12:
        return vary(rng.choice(RIDDLES) + rng.choice(["", " Think it through step by step.", ""]), rng, 0.3)
    return vary(rng.choice(COMMONSENSE) + rng.choice(["", " Explain your reasoning.", " Answer in two sentences."]), rng, 0.3)


REASONING_FOLLOWUPS = [
    "Explain your reasoning step by step.", "Are you sure? Please check your answer.",
    "Can you explain that to a child?", "Make up a similar puzzle for me.",
    "Summarise your answer in one sentence.", "What is a common mistake people make with this?",
    "What would change if the question were the other way round?",
    "Give me a harder version of this question.",
]


# ---------------------------------------------------------------------------------------------
# math
# ---------------------------------------------------------------------------------------------

ITEMS = ["apples", "notebooks", "pencils", "tickets", "cupcakes", "bottles of water", "stickers",
         "books", "oranges", "candles", "socks", "flower pots", "toy cars", "muffins"]
MATH_SUFFIX = ["", "", " Show your work.", " Explain step by step.", " Give just the final answer.",
               " Explain your reasoning briefly.", ""]
UNITS = [
    ("kilometres", "metres", 1000), ("metres", "centimetres", 100), ("kilograms", "grams", 1000),
    ("litres", "millilitres", 1000), ("hours", "minutes", 60), ("minutes", "seconds", 60),
    ("days", "hours", 24), ("weeks", "days", 7), ("feet", "inches", 12), ("yards", "feet", 3),
    ("inches", "centimetres", 2.54), ("miles", "kilometres", 1.609), ("kilograms", "pounds", 2.205),
    ("gallons (US)", "litres", 3.785), ("centimetres", "millimetres", 10), ("tonnes", "kilograms", 1000),
]
MATH_CONCEPTS = [
    "a prime number", "a fraction", "a percentage", "a ratio", "the mean of a list of numbers",
    "the median", "the mode", "an even number", "a square number", "the perimeter of a shape",
    "the area of a rectangle", "a negative number", "a decimal", "place value", "a factor",
    "a multiple", "the order of operations", "an equation", "a variable", "probability",
    "a right angle", "the volume of a cube", "rounding", "long division", "simple interest",
]


def make_math(rng: random.Random) -> str:
    name, name2 = rng.sample(NAMES, 2)
    kind = rng.randrange(26)
    if kind == 0:
        n, p = rng.randint(2, 12), rng.randint(1, 9)
        total = n * p
        bill = next(b for b in (5, 10, 20, 50, 100, 200) if b > total)
        text = f"{name} buys {n} {rng.choice(ITEMS)} at {p} dollars each and pays with a {bill} dollar note. How much change does {name} get?"
    elif kind == 1:
        k = rng.randint(2, 9)
        n = k * rng.randint(2, 12) + rng.randint(0, k - 1)
        text = f"{n} {rng.choice(['cookies', 'sweets', 'marbles', 'stickers', 'grapes'])} are shared equally among {k} children. How many does each child get, and how many are left over?"
    elif kind == 2:
        h = rng.randint(2, 6)
        d = h * rng.randint(30, 110)
        text = rng.choice([f"A car travels {d} km in {h} hours. What is its average speed?",
                           f"A train goes {d} km in {h} hours at a steady speed. How far does it go in one hour?"])
    elif kind == 3:
        p, n = rng.choice([5, 10, 15, 20, 25, 30, 40, 50, 75]), rng.randint(2, 40) * 10
        text = rng.choice([f"What is {p}% of {n}?", f"Calculate {p} percent of {n}."])
    elif kind == 4:
        price, p = rng.randint(8, 120), rng.choice([10, 20, 25, 30, 50])
        text = f"A {rng.choice(['jacket', 'lamp', 'pair of shoes', 'bike helmet', 'backpack'])} costs {price} dollars and is on sale for {p}% off. What is the sale price?"
    elif kind == 5:
        a, b = rng.randint(2, 30), rng.randint(2, 30)
        text = rng.choice([f"A rectangle is {a} cm long and {b} cm wide. What are its area and perimeter?",
                           f"A garden is {a} metres by {b} metres. How much fencing is needed to go around it?",
                           f"How many square metres of carpet are needed for a room {a} m by {b} m?"])
    elif kind == 6:
        r = rng.randint(1, 15)
        text = rng.choice([f"Find the area of a circle with radius {r} cm. Use 3.14 for pi.",
                           f"What is the circumference of a circle with a radius of {r} m? Use 3.14 for pi."])
    elif kind == 7:
        nums = [rng.randint(1, 100) for _ in range(rng.randint(4, 7))]
        text = rng.choice([f"Find the average of {', '.join(map(str, nums))}.",
                           f"What are the mean and median of these numbers: {', '.join(map(str, nums))}?"])
        return vary(text + rng.choice(MATH_SUFFIX), rng, 0.25)
    elif kind == 8:
        x, a, b = rng.randint(-9, 15), rng.randint(2, 9), rng.randint(1, 30)
        c = a * x + b
        text = rng.choice([f"Solve for x: {a}x + {b} = {c}.", f"Find x if {a}x + {b} = {c}.",
                           f"What value of x makes {a}x + {b} equal to {c}?"])
    elif kind == 9:
        a, b, c, d = rng.randint(1, 9), rng.randint(2, 10), rng.randint(1, 9), rng.randint(2, 10)
        op = rng.choice(["+", "-", "×"])
        text = f"What is {a}/{b} {op} {c}/{d}? Give the answer as a simplified fraction."
    elif kind == 10:
        src, dst, f = rng.choice(UNITS)
        if rng.random() < 0.5:
            src, dst = dst, src
        x = rng.choice([str(rng.randint(2, 50)), str(rng.randint(2, 20) * 5), f"{rng.randint(11, 199) / 10:.1f}"])
        text = rng.choice([f"Convert {x} {src} to {dst}.", f"How many {dst} are in {x} {src}?",
                           f"What is {x} {src} in {dst}?"])
    elif kind == 11:
        t = rng.choice([rng.randint(-10, 40), rng.randint(0, 100)])
        text = rng.choice([f"Convert {t} degrees Celsius to Fahrenheit.",
                           f"What is {t} degrees Fahrenheit in Celsius?"])
    elif kind == 12:
        h, m, dur = rng.randint(1, 11), rng.choice([0, 10, 15, 20, 30, 45, 50]), rng.randint(35, 190)
        text = rng.choice([f"A film starts at {h}:{m:02d} pm and lasts {dur} minutes. When does it end?",
                           f"A train leaves at {h}:{m:02d} am and the trip takes {dur} minutes. What time does it arrive?"])
    elif kind == 13:
        diff, y = rng.randint(2, 30), rng.randint(2, 10)
        future = y + rng.randint(1, 30)
        text = f"{name} is {diff} years older than {name2}. In {y} years, {name2} will be {future}. How old is {name} now?"
    elif kind == 14:
        p, r, t = rng.randint(1, 50) * 100, rng.randint(1, 8), rng.randint(1, 6)
        text = f"What is the simple interest on {p} dollars at {r}% per year for {t} years?"
    elif kind == 15:
        a, b = rng.randint(11, 99), rng.randint(3, 25)
        op = rng.choice(["×", "+", "-"])
        text = rng.choice([f"What is {a} {op} {b}?", f"Calculate {a} {op} {b}.",
                           f"What is {a} {op} {b} {rng.choice(['+', '-'])} {rng.randint(1, 50)}?"])
    elif kind == 16:
        b = rng.randint(2, 15)
        a = b * rng.randint(2, 30)
        text = rng.choice([f"What is {a} divided by {b}?", f"Calculate {a} ÷ {b}."])
    elif kind == 17:
        n = rng.randint(2, 120)
        text = rng.choice([f"Is {n} a prime number? Explain.", f"List all the factors of {n}."])
    elif kind == 18:
        a, b = rng.randint(4, 60), rng.randint(4, 60)
        text = rng.choice([f"Find the greatest common divisor of {a} and {b}.",
                           f"What is the least common multiple of {a} and {b}?"])
    elif kind == 19:
        r, b = rng.randint(1, 12), rng.randint(1, 12)
        g = rng.randint(0, 6)
        extra = f", {g} green" if g else ""
        text = f"A bag has {r} red{extra} and {b} blue marbles. What is the probability of picking a red marble at random?"
    elif kind == 20:
        n = rng.randint(5, 100)
        text = rng.choice([f"What is the sum of the whole numbers from 1 to {n}?",
                           f"What is the square root of {n * n}?", f"What is {rng.randint(2, 12)} squared?",
                           f"What is {rng.randint(2, 5)} to the power of {rng.randint(2, 5)}?"])
    elif kind == 21:
        x = f"{rng.randint(101, 99999) / 100:.2f}"
        text = rng.choice([f"Round {x} to the nearest whole number.", f"Round {x} to the nearest ten.",
                           f"Round {x} to one decimal place."])
    elif kind == 22:
        a, b, total = rng.randint(1, 5), rng.randint(1, 5), rng.randint(2, 10) * 10
        text = f"{name} and {name2} share {total} dollars in the ratio {a}:{b}. How much does each get?"
    elif kind == 23:
        per_day, days = rng.randint(2, 25), rng.randint(3, 30)
        text = rng.choice([
            f"{name} reads {per_day} pages a day. How many pages does {name} read in {days} days?",
            f"{name} saves {per_day} dollars every week. How many weeks until {name} has {per_day * days} dollars?",
            f"A tap drips {per_day} millilitres a minute. How much water is wasted in {days} minutes?",
        ])
    elif kind == 24:
        a, b, c = rng.randint(2, 9), rng.randint(2, 9), rng.randint(1, 20)
        text = rng.choice([f"Evaluate {a} + {b} × {c}.", f"What is ({a} + {b}) × {c}?",
                           f"Calculate {c} - {a} × {b} + {a}.", f"Simplify {a}x + {b}x - {c}."])
    else:
        c = rng.choice(MATH_CONCEPTS)
        return vary(rng.choice([f"Explain what {c} is, with an example.",
                                f"How would you explain {c} to a ten-year-old?",
                                f"Give a simple real-life example of {c}."]), rng), "concept"
    return vary(text + rng.choice(MATH_SUFFIX), rng, 0.25)


MATH_FOLLOWUPS = [
    "Explain each step.", "Can you check your answer another way?",
    "Make up a similar problem for me to try.", "Now explain it to a child.",
    "What if all the numbers were doubled?", "Write the solution as a short list of steps.",
    "Is there a quicker way to do this?", "Give me the answer in one sentence.",
]


# ---------------------------------------------------------------------------------------------
# coding
# ---------------------------------------------------------------------------------------------

FUNCTION_TASKS = [
    "reverses a string", "checks whether a number is prime", "returns the largest number in a list",
    "counts the vowels in a string", "computes the factorial of a number",
    "checks whether a word is a palindrome", "removes duplicates from a list while keeping the order",
    "converts Celsius to Fahrenheit", "returns the n-th Fibonacci number", "merges two sorted lists",
    "counts how often each word appears in a sentence", "flattens a list of lists",
    "capitalizes the first letter of every word in a sentence", "returns the second largest number in a list",
    "checks whether two strings are anagrams", "sums the digits of an integer",
    "returns the average of a list of numbers", "keeps only the even numbers from a list",
    "performs a binary search on a sorted list", "returns the longest word in a sentence",
    "returns a list of the squares of the numbers from 1 to n", "checks whether a year is a leap year",
    "finds the greatest common divisor of two numbers", "rotates a list to the right by k positions",
    "splits a list into chunks of size n", "returns the running total of a list of numbers",
    "swaps the keys and values of a dictionary", "prints FizzBuzz from 1 to n",
    "converts a number of seconds into hours, minutes and seconds",
    "shortens a string to n characters and adds '...' if it was cut",
    "checks whether the brackets in a string are balanced", "counts the uppercase letters in a string",
    "returns the items that appear in both of two lists", "returns both the smallest and largest value in a list",
    "generates a random password of a given length", "converts a binary string to an integer",
    "finds the most common item in a list", "checks whether a list is sorted",
    "reverses the order of the words in a sentence", "computes the median of a list of numbers",
    "clamps a number between a minimum and a maximum", "converts a sentence to snake_case",
    "sorts a list of numbers with bubble sort", "counts the characters in a string, ignoring spaces",
    "computes the dot product of two lists of numbers", "transposes a matrix given as a list of lists",
    "compresses a string like 'aaabbc' into 'a3b2c1'", "encrypts a word with a Caesar cipher",
    "returns the number of days between two dates", "removes all punctuation from a string",
    "checks whether a string contains only digits", "converts a list of words into one comma-separated string",
    "returns the first non-repeating character in a string", "calculates the total price of a shopping cart",
    "converts kilometres to miles", "finds the index of the smallest number in a list",
    "groups a list of words by their first letter", "checks whether a number is a perfect square",
    "returns the sum of all odd numbers up to n", "validates that a password has at least 8 characters and one digit",
]
LANGS = ["Python", "Python", "Python", "JavaScript", "JavaScript"]
CODE_TEMPLATES = [
    "Write a {lang} function that {task}.",
    "In {lang}, how do I write a function that {task}?",
    "Can you show me {lang} code that {task}?",
    "Write a short {lang} function that {task}. Add a comment for each step.",
    "I need a {lang} function that {task}. Keep it simple.",
    "Write a {lang} function that {task} and show an example of calling it.",
    "Write a {lang} function that {task}, then explain how it works in two sentences.",
    "What is a simple way to write a {lang} function that {task}?",
    "Write a {lang} function that {task}. Include a docstring or comment explaining the inputs.",
    "Show a beginner-friendly {lang} solution: a function that {task}.",
    "Write a small {lang} program that {task} and prints the result.",
    "Write a {lang} function that {task}. Do not use any libraries.",
]
CONCEPT_PAIRS = {
    "Python": ["a list and a tuple", "== and is", "append and extend", "return and print",
               "a for loop and a while loop", "a dictionary and a set", "break and continue",
               "a local and a global variable", "sort() and sorted()", "a function and a method",
               "an integer and a float", "None and False"],
    "JavaScript": ["let and const", "== and ===", "null and undefined", "map and forEach",
                   "an arrow function and a regular function", "an array and an object",
                   "var and let", "slice and splice", "a string and a template literal"],
}
CONCEPTS = {
    "Python": ["a list comprehension", "a dictionary", "a lambda function", "an f-string",
               "try and except", "a class", "a generator", "the range function", "slicing",
               "the enumerate function", "the zip function", "a virtual environment",
               "a module", "default arguments", "the with statement", "string methods"],
    "JavaScript": ["a promise", "a callback", "the filter method", "a template literal",
                   "object destructuring", "JSON.parse", "the spread operator", "an event listener",
                   "async and await", "the reduce method", "a closure", "the DOM"],
}
HOWTO = [
    "How do I read a text file line by line in Python?", "How do I install a package with pip?",
    "How do I sort a list of numbers from largest to smallest in Python?",
    "How do I sort an array of numbers correctly in JavaScript?",
    "How can I get the current date and time in Python?", "How do I write to a file in Python?",
    "How do I check if a key exists in a Python dictionary?",
    "How do I loop over an object's keys in JavaScript?", "How do I convert a string to a number in JavaScript?",
    "How do I convert a string to an integer in Python, and what happens if it fails?",
    "How do I create a virtual environment in Python?", "How do I make an HTTP request in JavaScript with fetch?",
    "How do I read a JSON file in Python?", "How do I remove an item from a list in Python?",
    "How do I add an item to the end of an array in JavaScript?", "How do I get the length of a string in Python?",
    "How do I join a list of strings with commas in Python?", "How do I check the type of a variable in Python?",
    "How do I copy an array in JavaScript without changing the original?",
    "How do I format a number with two decimal places in Python?",
    "How do I make a new Git branch and switch to it?", "How do I undo my last Git commit but keep the changes?",
    "How do I see which files have changed in a Git repository?", "How do I find the index of an item in a Python list?",
    "How do I handle a division by zero error in Python?", "How do I pause a Python program for two seconds?",
    "How do I generate a random number between 1 and 10 in Python?", "How do I comment out several lines in Python?",
    "How do I get user input in a Python program?", "How do I print text in colour in a terminal?",
    "What is the difference between a compiler and an interpreter?", "What is recursion? Show a small example.",
    "What does an API do? Explain with a simple example.", "What is Big O notation, in simple terms?",
    "What is the difference between a bug and an error message?", "Why should I use version control?",
    "What is a unit test? Show a tiny Python example.", "What is the difference between HTML and CSS?",
]
SQL_TABLES = [
    ("employees", "id, name, department, salary, hire_date"),
    ("orders", "id, customer_id, amount, order_date"),
    ("customers", "id, name, city, signup_date"),
    ("products", "id, name, price, category, stock"),
    ("students", "id, name, grade, age, class"),
    ("books", "id, title, author, year, pages"),
]
SQL_TASKS = {
    "employees": ["lists all employees in the Sales department", "finds the average salary per department",
                  "returns the five highest-paid employees", "counts the employees hired after 2020",
                  "finds employees whose name starts with 'A'", "raises every salary in IT by 5 percent"],
    "orders": ["finds the total amount of all orders", "lists orders over 100 dollars, newest first",
               "counts the orders for each customer", "finds the largest single order",
               "returns all orders placed in March 2024", "finds customers with more than three orders"],
    "customers": ["lists customers from London sorted by name", "counts customers in each city",
                  "finds customers who signed up this year", "deletes customers with no name"],
    "products": ["lists products cheaper than 20 dollars", "finds products that are out of stock",
                 "shows the number of products in each category", "finds the most expensive product",
                 "adds a new product called 'Desk Lamp' priced at 25"],
    "students": ["lists students older than 15", "finds the average grade for each class",
                 "returns the student with the highest grade", "counts how many students are in each class"],
    "books": ["lists books published before 1950", "finds the longest book", "counts books by each author",
              "lists the titles of books with more than 300 pages, alphabetically"],
}
BASH_TASKS = [
    "counts the number of lines in a file called data.txt", "lists all .txt files in the current folder",
    "finds every file larger than 100 MB under the home directory", "renames all .jpeg files to .jpg in a folder",
    "shows the ten largest files in a directory", "prints the last 20 lines of a log file",
    "searches for the word 'error' in all .log files", "makes a backup copy of a folder with today's date in the name",
    "counts how many times each word appears in a text file", "deletes all empty files in a folder",
    "prints the disk usage of each folder in the current directory", "creates ten folders named day1 to day10",
    "checks whether a file exists and prints a message", "loops over all .csv files and prints their names",
    "shows which process is using the most memory", "downloads nothing but prints the current date and time every 5 seconds",
    "replaces 'cat' with 'dog' in every line of a file", "sorts the lines of a file and removes duplicates",
    "compresses a folder into a .tar.gz archive", "prints the number of files in each subfolder",
]
CODE_SNIPPETS = [
    ("Python", "def f(xs):\n    return [x for x in xs if x % 2 == 0]"),
    ("Python", "total = 0\nfor i in range(1, 11):\n    total += i\nprint(total)"),
    ("Python", "def greet(name=\"friend\"):\n    return f\"Hello, {name}!\"\n\nprint(greet())"),
    ("Python", "words = \"the cat sat on the mat\".split()\nprint(len(set(words)))"),
    ("Python", "def mystery(n):\n    if n <= 1:\n        return 1\n    return n * mystery(n - 1)"),
    ("Python", "d = {\"a\": 1, \"b\": 2}\nfor k, v in d.items():\n    print(k, v * 10)"),
    ("Python", "s = \"hello\"\nprint(s[::-1].upper())"),
    ("Python", "nums = [3, 1, 4, 1, 5]\nprint(sorted(nums, reverse=True)[:2])"),
    ("Python", "with open(\"notes.txt\") as f:\n    print(sum(1 for line in f if line.strip()))"),
    ("Python", "x = [1, 2, 3]\ny = x\ny.append(4)\nprint(x)"),
    ("JavaScript", "const nums = [1, 2, 3, 4];\nconst out = nums.map(n => n * n).filter(n => n > 4);\nconsole.log(out);"),
    ("JavaScript", "function count(str, ch) {\n  let c = 0;\n  for (const x of str) if (x === ch) c++;\n  return c;\n}"),
    ("JavaScript", "const user = { name: \"Ana\", age: 30 };\nconst { name } = user;\nconsole.log(`Hi ${name}`);"),
    ("JavaScript", "const total = [5, 10, 15].reduce((a, b) => a + b, 0);\nconsole.log(total);"),
    ("JavaScript", "setTimeout(() => console.log(\"later\"), 1000);\nconsole.log(\"now\");"),
    ("SQL", "SELECT city, COUNT(*) AS n\nFROM customers\nGROUP BY city\nORDER BY n DESC;"),
    ("SQL", "SELECT name FROM products WHERE price > (SELECT AVG(price) FROM products);"),
    ("Bash", "for f in *.txt; do\n  echo \"$f: $(wc -l < \"$f\")\"\ndone"),
    ("Bash", "grep -c \"ERROR\" app.log"),
    ("Bash", "find . -name \"*.tmp\" -delete"),
]
BUGGY = [
    ("Python", "return the average of a list", "def average(xs):\n    return sum(xs) / len(xs) + 1"),
    ("Python", "count down from n to 1", "def countdown(n):\n    while n > 0:\n        print(n)"),
    ("Python", "check whether a number is even", "def is_even(n):\n    return n % 2 == 1"),
    ("Python", "return the largest item", "def largest(xs):\n    best = 0\n    for x in xs:\n        if x > best:\n            best = x\n    return best"),
    ("Python", "add an item to a list and return it", "def add(item, items=[]):\n    items.append(item)\n    return items"),
    ("Python", "print the numbers 1 to 10", "for i in range(10):\n    print(i)"),
    ("Python", "reverse a string", "def rev(s):\n    out = \"\"\n    for ch in s:\n        out = out + ch\n    return out"),
    ("Python", "greet a user by name", "name = input(\"Name: \")\nprint(\"Hello, \" + Name)"),
    ("JavaScript", "sum an array", "function sum(arr) {\n  let total;\n  for (const x of arr) total += x;\n  return total;\n}"),
    ("JavaScript", "check whether two values are equal", "function same(a, b) {\n  return a = b;\n}"),
    ("JavaScript", "sort numbers in ascending order", "const nums = [10, 2, 33, 4];\nnums.sort();\nconsole.log(nums);"),
    ("JavaScript", "get the last element of an array", "function last(arr) {\n  return arr[arr.length];\n}"),
    ("SQL", "find products cheaper than 10", "SELECT name FROM products WHERE price > 10;"),
    ("SQL", "count orders per customer", "SELECT customer_id, COUNT(*) FROM orders;"),
]
SMALL_TASKS = [
    "Write a simple HTML page with a heading and a list of three fruits.",
    "Write CSS that centres a div horizontally.", "Write a CSS rule that makes all links green and bold.",
    "Write a regular expression that matches a five-digit postcode.",
    "Write a regular expression that finds all words starting with a capital letter.",
    "Write a Python class called Rectangle with a method that returns its area.",
    "Write a Python class for a bank account with deposit and withdraw methods.",
    "Write a JavaScript function that changes the text of a button when it is clicked.",
    "Write a Python script that asks for the user's age and says whether they can vote.",
    "Write a Python program that prints a multiplication table for the number 7.",
    "Write a Python dictionary that stores three countries and their capitals, then print each pair.",
    "Write a JSON object describing a book with a title, an author and a year.",
    "Write a tiny guessing game in Python where the user guesses a number from 1 to 10.",
    "Write a Python function with type hints that adds two numbers.",
    "Write a unit test with pytest for a function add(a, b).",
    "Write a JavaScript object for a to-do item and a function that marks it as done.",
    "Write a Python script that prints the even numbers from 1 to 20.",
    "Write a Python loop that prints each letter of the word 'banana' with its position.",
]


def make_coding(rng: random.Random):
    kind = rng.randrange(10)
    if kind <= 3:
        lang = rng.choice(LANGS)
        text = fill(rng.choice(CODE_TEMPLATES), {"lang": [lang], "task": FUNCTION_TASKS}, rng)
        return vary(text, rng, 0.3), lang.lower()
    if kind == 4:
        lang = rng.choice(["Python", "JavaScript"])
        return vary(rng.choice([
            f"In {lang}, what is the difference between {rng.choice(CONCEPT_PAIRS[lang])}?",
            f"Explain the difference between {rng.choice(CONCEPT_PAIRS[lang])} in {lang}, with a short example.",
            f"Explain {rng.choice(CONCEPTS[lang])} in {lang} with a short example.",
            f"What is {rng.choice(CONCEPTS[lang])} in {lang}, and when would I use it?",
        ]), rng, 0.3), lang.lower()
    if kind == 5:
        return vary(rng.choice(HOWTO), rng, 0.3), "general"
    if kind == 6:
        table, cols = rng.choice(SQL_TABLES)
        task = rng.choice(SQL_TASKS[table])
        return vary(rng.choice([
            f"Write an SQL query that {task}. The table is {table}({cols}).",
            f"I have a table {table} with columns {cols}. Write a SQL query that {task}.",
            f"Given the table {table}({cols}), write a query that {task}, and explain it briefly.",
        ]), rng, 0.3), "sql"
    if kind == 7:
        return vary(rng.choice([
            f"Write a Bash command that {rng.choice(BASH_TASKS)}.",
            f"How can I write a shell one-liner that {rng.choice(BASH_TASKS)}?",
            f"Write a short Bash script that {rng.choice(BASH_TASKS)}, with comments.",
        ]), rng, 0.3), "bash"
    if kind == 8:
        if rng.random() < 0.55:
            lang, code = rng.choice(CODE_SNIPPETS)
            fence = lang.lower()
            return vary(rng.choice([
                f"What does this {lang} code do?\n\n```{fence}\n{code}\n```",
                f"Explain this {lang} code line by line:\n\n```{fence}\n{code}\n```",
                f"What will this code print or return?\n\n```{fence}\n{code}\n```",
                f"```{fence}\n{code}\n```\n\nExplain what this does in simple words.",
            ]), rng, 0.2), lang.lower()
        lang, goal, code = rng.choice(BUGGY)
        fence = lang.lower()
        return vary(rng.choice([
            f"This {lang} code should {goal}, but it has a bug. Find and fix it.\n\n```{fence}\n{code}\n```",
            f"Why doesn't this work? It is supposed to {goal}.\n\n```{fence}\n{code}\n```",
            f"Fix the bug in this code (it should {goal}) and explain what was wrong:\n\n```{fence}\n{code}\n```",
        ]), rng, 0.2), lang.lower()
    text = rng.choice(SMALL_TASKS)
    lang = "javascript" if "JavaScript" in text else "python" if "Python" in text else "general"
    return vary(text, rng, 0.3), lang


CODING_FOLLOWUPS = {
    "python": ["Now write it in JavaScript.", "Add type hints.", "Write a few tests for it.",
               "What is the time complexity?", "Can you add comments explaining each line?",
               "Make it handle an empty input.", "Can you make it shorter?", "Explain it to a beginner."],
    "javascript": ["Now write it in Python.", "Write a few tests for it.", "Can you add comments?",
                   "Make it handle an empty input.", "Explain it to a beginner.", "What is the time complexity?"],
    "sql": ["Now sort the results by name.", "Explain how the query works.", "Now limit it to 10 rows.",
            "How would I do the same thing in Python?"],
    "bash": ["Explain each part of the command.", "Can you do the same thing in Python?",
             "How would this work on Windows?", "Make it safer against file names with spaces."],
    "general": ["Give an example.", "Explain it to a beginner.", "Can you make it shorter?",
                "What is a common mistake here?", "Show me a code example."],
}


# ---------------------------------------------------------------------------------------------
# stem
# ---------------------------------------------------------------------------------------------

STEM_CONCEPTS = [
    "photosynthesis", "gravity", "an atom", "DNA", "the water cycle", "a black hole", "electricity",
    "an ecosystem", "a chemical reaction", "evaporation", "friction", "magnetism", "the food chain",
    "the greenhouse effect", "erosion", "a cell", "evolution", "the immune system", "a vaccine",
    "an earthquake", "a volcano", "a lunar eclipse", "the seasons", "tides", "sound waves",
    "light", "a rainbow", "static electricity", "a battery", "a circuit", "renewable energy",
    "solar power", "wind power", "a molecule", "the periodic table", "acids and bases", "density",
    "buoyancy", "inertia", "energy", "a simple machine", "a lever", "a pulley", "an algorithm",
    "the internet", "machine learning", "encryption", "a computer's memory", "a CPU", "a search engine",
    "GPS", "a microwave oven", "a refrigerator", "a solar panel", "a wind turbine", "the heart",
    "the lungs", "digestion", "sleep", "muscles", "bones", "the brain", "bacteria", "a virus",
    "fungi", "pollination", "a habitat", "climate change", "the ozone layer", "the Moon's phases",
    "the solar system", "a star", "a comet", "the speed of light", "temperature", "melting",
    "condensation", "a fossil", "plate tectonics", "recycling", "compost", "a hybrid car",
    "a 3D printer", "a robot", "binary numbers", "Wi-Fi", "a satellite", "a thermometer",
]
STEM_PAIRS = [
    ("weather", "climate"), ("mass", "weight"), ("a virus", "a bacterium"), ("speed", "velocity"),
    ("an element", "a compound"), ("a planet", "a star"), ("a meteor", "a meteorite"),
    ("an herbivore", "a carnivore"), ("a solid", "a liquid"), ("heat", "temperature"),
    ("an artery", "a vein"), ("RAM", "storage"), ("hardware", "software"), ("a lake", "a sea"),
    ("a mixture", "a solution"), ("a frog", "a toad"), ("an insect", "a spider"),
    ("renewable energy", "non-renewable energy"), ("AC current", "DC current"),
    ("a hypothesis", "a theory"), ("an asteroid", "a comet"), ("a physical change", "a chemical change"),
    ("a mammal", "a reptile"), ("a conductor", "an insulator"), ("a rocket", "a plane"),
    ("a fruit", "a vegetable"), ("a cold", "the flu"), ("an email", "a text message"),
]
STEM_GROUPS = [
    "renewable energy sources", "mammals that live in water", "simple machines", "planets with rings",
    "things that conduct electricity", "insects that help plants", "ways to save water at home",
    "foods that are rich in protein", "gases in the air we breathe", "uses of magnets",
    "animals that hibernate", "inventions that changed medicine", "ways to stay healthy",
    "materials that can be recycled", "things that are made from oil", "states of matter",
    "programming languages", "types of clouds", "types of rock", "parts of a plant",
]
STEM_PARTS = ["a cell", "a flower", "the human heart", "a computer", "an atom", "the eye",
              "a volcano", "a bicycle", "the Earth", "a car engine", "a tooth", "a leaf"]
STEM_QUESTIONS = [
    "Why is the sky blue?", "Why do we have day and night?", "How do plants drink water?",
    "Why does ice float on water?", "How do bees make honey?", "Why do leaves change colour in autumn?",
    "How does a fridge keep food cold?", "Why do we get hiccups?", "How do birds fly?",
    "Why do we need to sleep?", "How do fish breathe underwater?", "Why is the sea salty?",
    "How does a plane stay in the air?", "Why do cats purr?", "How does soap clean our hands?",
    "Why does bread go mouldy?", "How do magnets work?", "Why do stars twinkle?",
    "How does a compass work?", "Why do onions make us cry?", "How do vaccines protect us?",
    "How does the heart pump blood?", "Why do we sweat?", "How are rainbows formed?",
    "Why does metal feel colder than wood?", "How does a microwave heat food?",
    "What causes thunder?", "Why do some animals migrate?", "How do solar panels make electricity?",
    "How does a touch screen know where I touch it?", "Why do we yawn?", "What makes popcorn pop?",
    "How do glasses help people see better?", "Why does the Moon change shape?",
    "How does a seed know which way is up?", "Why is exercise good for the heart?",
    "How does a computer store a photo?", "How does a QR code work?", "Why do we have different blood types?",
    "How do earthquakes happen?",
]
STEM_HYPOS = [
    "the Earth stopped spinning", "there was no Moon", "plants stopped making oxygen",
    "humans could see ultraviolet light", "there was no friction", "water did not expand when it froze",
    "all the ice at the poles melted", "the Sun were twice as big", "we had no bacteria in our bodies",
    "the internet stopped working for a week", "gravity were half as strong",
]
STEM_TEMPLATES = [
    "Explain {c} in simple terms.", "What is {c}?", "Explain {c} to a ten-year-old.",
    "Describe {c} in three sentences.", "Why is {c} important?", "List three facts about {c}.",
    "Explain the concept of {c} with an everyday example.", "Write a short explanation of {c} for a science class.",
    "What is {c}? Answer in one sentence.", "Give me a simple definition of {c} and one example.",
    "What are the most important things to know about {c}?", "Explain {c} using an analogy.",
    "What is a common misconception about {c}?", "Write three quiz questions about {c}, with answers.",
]
STEM_SUFFIX = ["", "", "", " Keep it under 100 words.", " Use a short bulleted list.",
               " Answer in two or three sentences.", " Explain it simply."]


def make_stem(rng: random.Random) -> str:
    kind = rng.randrange(8)
    if kind <= 2:
        text = rng.choice(STEM_TEMPLATES).replace("{c}", rng.choice(STEM_CONCEPTS))
    elif kind == 3:
        a, b = rng.choice(STEM_PAIRS)
        text = rng.choice([f"What is the difference between {a} and {b}?", f"Compare {a} and {b}.",
                           f"How is {a} different from {b}? Give one example of each."])
    elif kind == 4:
        g = rng.choice(STEM_GROUPS)
        text = rng.choice([f"Give three examples of {g}.", f"Name four {g} and say one thing about each.",
                           f"List some {g}."])
    elif kind == 5:
        p = rng.choice(STEM_PARTS)
        text = rng.choice([f"What are the main parts of {p}?", f"Describe the main parts of {p} and what each one does."])
    elif kind == 6:
        text = rng.choice(STEM_QUESTIONS)
    else:
        h = rng.choice(STEM_HYPOS)
        text = rng.choice([f"What would happen if {h}?", f"Imagine {h}. Describe two likely effects."])
    return vary(text + rng.choice(STEM_SUFFIX), rng, 0.3)


STEM_FOLLOWUPS = [
    "Give an example.", "Explain that to a child.", "Make it shorter.",
    "What is a common misconception about this?", "Write three quiz questions about this.",
    "Can you describe a simple experiment that shows this?", "Why does this matter in everyday life?",
    "Summarise that in one sentence.", "Can you explain it with an analogy?",
]


# ---------------------------------------------------------------------------------------------
# humanities
# ---------------------------------------------------------------------------------------------

HIST_TOPICS = [
    "the Industrial Revolution", "the Roman Empire", "ancient Egypt", "the Silk Road", "the Renaissance",
    "the invention of the printing press", "ancient Greece", "the Vikings", "the Aztec Empire",
    "the Great Wall of China", "the age of exploration", "the Cold War", "the French Revolution",
    "the moon landing", "the first Olympic Games", "the history of writing", "the Maya civilisation",
    "the Ottoman Empire", "the Inca Empire", "the fall of the Berlin Wall", "the abolition of slavery",
    "women's suffrage", "the invention of the telephone", "the first railways", "the Bronze Age",
    "the Mongol Empire", "medieval castles", "the Black Death", "the Meiji era in Japan",
]
CAUSE_EVENTS = [
    "the Industrial Revolution", "the French Revolution", "the fall of the Western Roman Empire",
    "the First World War", "the Great Depression", "the end of the Cold War", "the age of exploration",
    "the spread of the Black Death", "the decline of the Maya cities", "the American Revolution",
]
PEOPLE = [
    "Leonardo da Vinci", "Marie Curie", "Cleopatra", "Mahatma Gandhi", "Nelson Mandela", "Confucius",
    "William Shakespeare", "Ada Lovelace", "Genghis Khan", "Joan of Arc", "Isaac Newton",
    "Frida Kahlo", "Ludwig van Beethoven", "Socrates", "Julius Caesar", "Harriet Tubman",
    "Galileo Galilei", "Jane Austen", "Martin Luther King Jr.", "Charles Darwin",
    "Florence Nightingale", "Vincent van Gogh", "Wolfgang Amadeus Mozart", "Ibn Battuta",
]
COUNTRIES = [
    "Japan", "Brazil", "Kenya", "Canada", "Italy", "India", "Egypt", "Mexico", "Norway", "Australia",
    "Peru", "Vietnam", "Morocco", "Greece", "Iceland", "Argentina", "New Zealand", "South Korea",
    "Ireland", "Turkey", "Chile", "Portugal", "Nepal", "Ghana", "Thailand",
]
REGIONS = [
    "the Amazon rainforest", "the Sahara Desert", "the Himalayas", "the Nile River", "the Alps",
    "the Great Barrier Reef", "Antarctica", "the Arctic", "the Mediterranean Sea", "Siberia",
    "the Andes", "the Mississippi River", "the Gobi Desert", "Patagonia", "the Rocky Mountains",
]
IDEAS = [
    "democracy", "free will", "utilitarianism", "stoicism", "the social contract", "human rights",
    "justice", "happiness", "the golden rule", "existentialism", "critical thinking", "ethics",
    "supply and demand", "inflation", "opportunity cost", "globalisation", "a market economy",
    "taxes", "trade", "culture", "tradition", "freedom of speech", "the rule of law", "citizenship",
]
ARTS = [
    "Impressionism", "jazz", "haiku poetry", "opera", "ballet", "Renaissance painting",
    "street art", "folk music", "the novel as a literary form", "Greek tragedy", "classical music",
    "hip hop", "Cubism", "film noir", "calligraphy", "origami", "pottery", "the blues", "sonnets",
    "mythology", "fairy tales", "science fiction", "Surrealism", "architecture in ancient Rome",
]
LIT_TERMS = [
    "a metaphor", "a simile", "alliteration", "a protagonist", "foreshadowing", "irony", "a theme",
    "personification", "a narrator", "a plot twist", "a stanza", "onomatopoeia", "hyperbole",
    "a flashback", "a moral", "a setting", "a rhyme scheme", "an antagonist",
]
HISTORY_OF = [
    "tea", "chocolate", "paper", "money", "the bicycle", "the Olympics", "coffee", "the calendar",
    "maps", "libraries", "chess", "football", "the postal service", "bread", "clocks", "glasses",
    "photography", "the piano", "pizza", "soap", "umbrellas", "the alphabet",
]
HOLIDAYS = [
    "New Year", "harvest festivals", "Diwali", "Lunar New Year", "Thanksgiving", "Midsummer",
    "Carnival", "Day of the Dead", "Hanukkah", "Eid al-Fitr", "Christmas", "Holi", "Easter",
]
DEBATES = [
    "Should homework be banned?", "Is social media good for society?", "Should museums be free?",
    "Should school uniforms be required?", "Is it better to live in a city or the countryside?",
    "Should voting be compulsory?", "Are zoos a good thing?", "Should people work fewer hours?",
    "Is tourism good for small towns?", "Should children learn history from local or world events first?",
]
HUM_PAIRS = [
    ("ancient Greece", "ancient Rome"), ("democracy", "monarchy"), ("a poem", "a song"),
    ("a myth", "a legend"), ("a novel", "a short story"), ("Impressionism", "Realism"),
    ("a city", "a village"), ("a weather map", "a political map"), ("needs", "wants"),
    ("an import", "an export"), ("a tradition", "a law"), ("jazz", "classical music"),
]
ERAS = ["ancient Rome", "medieval Europe", "ancient Egypt", "Victorian London", "Edo-period Japan",
        "a Viking village", "the Stone Age", "a 1920s city", "ancient China", "the Inca Empire"]
INVENTIONS = ["the printing press", "the steam engine", "the telephone", "the light bulb", "the car",
              "the radio", "the internet", "the compass", "writing", "the wheel", "television", "the aeroplane"]


def make_humanities(rng: random.Random) -> str:
    kind = rng.randrange(16)
    if kind == 0:
        t = rng.choice(HIST_TOPICS)
        text = rng.choice([f"Give a short overview of {t}.", f"Why is {t} important in history?",
                           f"What are three interesting facts about {t}?", f"Describe {t} in one paragraph."])
    elif kind == 1:
        text = rng.choice([f"What were the main causes of {rng.choice(CAUSE_EVENTS)}?",
                           f"What were the main effects of {rng.choice(CAUSE_EVENTS)}?"])
    elif kind == 2:
        p = rng.choice(PEOPLE)
        text = rng.choice([f"Who was {p}, and why are they remembered?", f"Write a short biography of {p}.",
                           f"What is {p} best known for?", f"Give three facts about {p}."])
    elif kind == 3:
        c = rng.choice(COUNTRIES)
        text = rng.choice([f"What are three interesting facts about {c}?", f"Describe the geography of {c}.",
                           f"What is the capital of {c}, and what is it known for?",
                           f"What foods is {c} famous for?", f"Describe some traditions from {c}."])
    elif kind == 4:
        r = rng.choice(REGIONS)
        text = rng.choice([f"Describe the climate and wildlife of {r}.", f"Why is {r} important?",
                           f"What is life like for people living near {r}?"])
    elif kind == 5:
        i = rng.choice(IDEAS)
        text = rng.choice([f"What is {i}? Give a simple example.", f"Explain the idea of {i} in plain words.",
                           f"Why do people disagree about {i}?", f"Explain {i} to a high school student."])
    elif kind == 6:
        a = rng.choice(ARTS)
        text = rng.choice([f"What is {a}? Describe its main features.", f"Give a short introduction to {a}.",
                           f"Why do people enjoy {a}?", f"How did {a} begin?"])
    elif kind == 7:
        t = rng.choice(LIT_TERMS)
        text = rng.choice([f"What is {t} in literature? Give an example.", f"Explain {t} and write an example sentence."])
    elif kind == 8:
        text = rng.choice([f"Write a short paragraph about the history of {rng.choice(HISTORY_OF)}.",
                           f"Where does {rng.choice(HISTORY_OF)} come from? Give a brief history."])
    elif kind == 9:
        h = rng.choice(HOLIDAYS)
        text = rng.choice([f"Why do people celebrate {h}?", f"Describe how {h} is celebrated."])
    elif kind == 10:
        d = rng.choice(DEBATES)
        text = rng.choice([f"{d} Give arguments for both sides.", f"{d} Write a balanced answer.",
                           f"Discuss: {d}"])
    elif kind == 11:
        a, b = rng.choice(HUM_PAIRS)
        text = rng.choice([f"Compare {a} and {b}.", f"What is the difference between {a} and {b}?"])
    elif kind == 12:
        e = rng.choice(ERAS)
        text = rng.choice([f"Describe daily life in {e}.", f"What did children do for fun in {e}?",
                           f"What did people eat in {e}?"])
    elif kind == 13:
        inv = rng.choice(INVENTIONS)
        text = rng.choice([f"How did {inv} change society?", f"What was life like before {inv}?"])
    elif kind == 14:
        text = rng.choice([
            "Why do people study history?", "What is the purpose of a museum?", "Why do languages change over time?",
            "Why do cities often grow near rivers?", "What makes a good leader?", "What is culture?",
            "Why do countries trade with each other?", "Why are maps useful?", "What is a primary source in history?",
            "How do archaeologists know how old things are?", "Why do people tell stories?",
            "What is the difference between a country and a continent?", "Why do we have laws?",
            "How do time zones work?", "What does a historian do?", "Why is reading fiction valuable?",
        ])
    else:
        t = rng.choice(HIST_TOPICS + ARTS + IDEAS)
        text = rng.choice([f"What can we learn today from {t}?", f"Write three quiz questions about {t}, with answers.",
                           f"Explain {t} to a twelve-year-old."])
    return vary(text + rng.choice(STEM_SUFFIX), rng, 0.3)


HUMANITIES_FOLLOWUPS = [
    "Give an example.", "Explain that to a child.", "Why does it still matter today?",
    "Summarise that in one sentence.", "Write three quiz questions about this.", "Make it shorter.",
    "What is one surprising fact about this?", "Can you put the main points in a list?",
]


# ---------------------------------------------------------------------------------------------
# Passages for extraction, editing and summarization (all written for this project)
# ---------------------------------------------------------------------------------------------

PASSAGES: list[tuple[str, str]] = [
    # emails
    ("email", "Hi Maria,\n\nJust a reminder that the team lunch has moved from Thursday to Friday, March 14, at 12:30 pm. We will meet at Luigi's on Baker Street instead of the office canteen. Please tell me by Wednesday if you have any dietary needs so I can let the restaurant know. Tom and Priya are bringing a birthday cake for Daniel.\n\nSee you there,\nHelen"),
    ("email", "Dear tenants,\n\nThe water supply to Block C will be switched off on Tuesday, 9 April, from 9 am to 3 pm while plumbers replace a broken pipe in the basement. Please fill a few bottles the night before. If you have a medical need for running water, call the building office on 555-0142 before Monday. We are sorry for the trouble and thank you for your patience.\n\nKind regards,\nMark Ellis, Building Manager"),
    ("email", "Dear Professor Okafor,\n\nI am writing to ask for a short extension on my history essay, which is due this Friday. I was ill for most of last week and missed two seminars, so I am behind with my reading. Would it be possible to hand it in next Wednesday instead? I have attached a note from the campus health centre.\n\nThank you for considering my request.\n\nBest wishes,\nJulia Brandt"),
    ("email", "Hello Sam,\n\nGood news: your order #48213 from Pageturner Books has shipped! It contains two items, 'The Quiet Garden' and 'A Short History of Maps', and should arrive within three to five working days. The total charged was 31.50 dollars, including 4 dollars for delivery. You can track the parcel with the code PT-7781-XQ on our website.\n\nHappy reading,\nThe Pageturner team"),
    ("email", "Hi all,\n\nQuick update on the quarterly report. Sales figures are in and we finished the quarter at 1.2 million dollars, about 8 percent above target. Raj still needs the marketing numbers from Lena by Thursday noon. The final draft goes to the directors on Monday, 3 June, so please send any comments on the charts to me before Friday evening.\n\nThanks,\nOliver"),
    ("email", "Hello neighbours!\n\nWe are organising a clean-up of Willow Park on Saturday, 18 May, from 10 am to 1 pm. Gloves, bags and litter pickers will be provided by the council, and the bakery on Elm Road has kindly offered free coffee and pastries for volunteers. Children are welcome if they come with an adult. Meet at the main gate by the pond. Reply to this email if you can join, so we know how many people to expect.\n\nCheers,\nNadia and Chris"),
    ("email", "Dear parents and guardians,\n\nYear 5 will visit the Natural History Museum on Thursday, 23 October. The coach leaves school at 8:45 am and returns at about 3:30 pm. The trip costs 12 pounds per child, payable through the school app by 10 October. Children need a packed lunch, a water bottle and a raincoat. Please let Ms Harper know about any allergies or medical needs.\n\nThank you,\nGreenfield Primary School"),
    ("email", "Dear Mr Ahmed,\n\nWe are delighted to offer you the position of Junior Data Analyst at Brightline Logistics. Your start date would be Monday, 1 September, and your starting salary will be 34,000 pounds per year, with 25 days of paid holiday. You will report to Clara Jensen, Head of Analytics. Please sign and return the attached contract by 15 August. We look forward to welcoming you to the team.\n\nYours sincerely,\nPeter Vance, HR Manager"),
    # product reviews
    ("review", "I bought the SoundWave X2 headphones three weeks ago for 79 dollars. The sound is clear and the bass is strong without being muddy. Battery life is excellent: I charge them once a week. However, the ear cushions get warm after an hour, and the case feels cheap. Overall, four stars. Great value if you mostly listen at home or on the bus."),
    ("review", "This coffee maker looked great in the pictures, but it has been disappointing. It takes almost ten minutes to brew four cups, and the coffee is never hot enough. The water tank also leaks a little onto the counter. Customer service replied quickly and offered a replacement, which was nice, but the second machine has the same problem. Two out of five stars."),
    ("review", "We stayed three nights at the Harbour View Hotel in Lisbon. The room was small but spotless, and the view over the river at sunset was beautiful. Breakfast had fresh fruit, pastries and very good coffee. The staff at reception, especially a young man called Tiago, gave us excellent tips for restaurants. The only downside was street noise late at night. We would happily stay again."),
    ("review", "Mama Rosa's is a tiny family restaurant with about ten tables. We ordered the mushroom risotto, the lasagne and a tiramisu to share. Everything tasted homemade and the portions were huge. The wait for our food was around forty minutes, which felt long, but the owner apologised and brought us free bread. Prices are fair, about 15 euros for a main dish. Book ahead on weekends."),
    ("review", "These running shoes are light and comfortable straight out of the box. I have done about 200 kilometres in them, including a half marathon, and my feet never hurt. The grip is poor on wet roads though, and the white fabric is already grey. At 120 dollars they are not cheap. I would recommend them for dry-weather training, but not for trail running."),
    ("review", "'The Lantern Keeper' is a slow, gentle novel about an old woman who looks after a lighthouse on a remote island. The writing is beautiful and the descriptions of the sea are vivid. The middle of the book drags, and some characters appear and then vanish without explanation. Still, the ending moved me to tears. A good choice for a quiet weekend, three and a half stars."),
    ("review", "I have used the StudyBuddy app every day for two months to learn Spanish. The short lessons fit into my lunch break, and the speaking exercises really helped my pronunciation. The free version shows an advert after every lesson, which is annoying. The premium plan costs 9.99 dollars a month. The app crashed twice on my old phone, but the newest update seems to have fixed it."),
    ("review", "The TrailPro 30 backpack is perfect for day hikes. It holds a jacket, lunch, two water bottles and a first-aid kit with room to spare. The straps are padded and the back panel lets air through, so my back stays dry. One zip broke after a month, and the rain cover is sold separately for 15 dollars. Good design, average build quality."),
    # news-like paragraphs
    ("news", "The town library on Station Road reopened on Monday after a six-month renovation that cost 2.3 million pounds. The building now has a children's reading room, a small café and twenty new computers for public use. Mayor Linda Carter cut the ribbon in front of about 300 residents. Opening hours have been extended to 8 pm on weekdays, and library membership remains free for everyone who lives in the area."),
    ("news", "The city council voted on Wednesday to build 40 kilometres of new protected bike lanes over the next three years. The plan, which will cost about 18 million dollars, connects the university, the central station and three large parks. Supporters say it will cut traffic and improve safety. Some shop owners on Market Street worry about losing parking spaces. Work on the first section begins in September."),
    ("news", "A small bakery in the village of Ashby has won first prize at the National Bread Awards. Owner Tomasz Nowak, who opened the shop just four years ago, entered a sourdough loaf made with local rye flour. 'I still can't believe it,' he said. Judges praised its crisp crust and rich flavour. Since the news broke on Friday, queues have stretched down the high street every morning."),
    ("news", "Students from Riverside High School have reached the final of the national robotics competition. Their robot, nicknamed Bolt, can sort recycling into five categories in under a minute. The team of six, led by teacher Ms Alvarez, built it from spare parts over eight months. The final takes place in Denver on 12 May. The school is raising money to pay for the trip."),
    ("news", "Last month was the wettest October on record in the region, with 210 millimetres of rain, more than twice the usual amount. Several roads near the River Dale flooded and two schools closed for a day. Farmers say the rain has delayed the planting of winter crops. Forecasters expect drier weather in the first half of November, but warn that the ground will stay waterlogged for weeks."),
    ("news", "A new bus route, the number 27, will start running on 1 March between Hilltop and the city hospital. Buses will run every 15 minutes from 6 am to 11 pm, and a single ticket will cost 2 dollars. The route was requested by nurses and patients, who previously had to change buses twice. The transport company says it will review the timetable after six months."),
    ("news", "The city museum has opened a new exhibition called 'Giants of the Past', featuring a nearly complete skeleton of a plant-eating dinosaur found in a quarry in 1998. The skeleton is 12 metres long and took a team of volunteers three years to clean and assemble. The exhibition runs until January and includes a hands-on area where children can dig for model fossils. Tickets cost 8 dollars for adults."),
    ("news", "Over 5,000 visitors came to the Millbrook Summer Festival last weekend, the biggest crowd in its 25-year history. The event featured live music on two stages, a dog show and more than 60 food stalls. Organiser Grace Lee said the money raised, about 40,000 dollars, will go to repairing the village hall roof. Volunteers spent Monday morning clearing the field."),
    # recipes
    ("recipe", "Simple pancakes (makes 8)\n\nIngredients: 200 g plain flour, 2 eggs, 300 ml milk, 1 tablespoon melted butter, a pinch of salt.\n\nMix the flour and salt in a bowl. Make a well in the middle, add the eggs and half the milk, and whisk until smooth. Whisk in the rest of the milk and the butter. Heat a lightly oiled pan over a medium heat, pour in a small ladle of batter and cook for about one minute on each side until golden. Serve with lemon and sugar."),
    ("recipe", "Quick tomato soup (serves 4)\n\nFry one chopped onion and two cloves of garlic in a little olive oil for five minutes. Add two tins of chopped tomatoes, 500 ml of vegetable stock and a teaspoon of sugar. Simmer for 20 minutes, then blend until smooth. Season with salt and pepper and stir in a splash of cream if you like. Serve hot with crusty bread. The soup keeps for three days in the fridge."),
    ("recipe", "Banana bread\n\nYou will need 3 very ripe bananas, 75 g melted butter, 150 g sugar, 1 egg, 1 teaspoon baking soda, a pinch of salt and 190 g flour. Preheat the oven to 175 degrees Celsius. Mash the bananas, then stir in the butter, sugar and egg. Add the baking soda and salt, then fold in the flour. Pour into a greased loaf tin and bake for 55 to 60 minutes, until a skewer comes out clean. Let it cool for ten minutes before slicing."),
    ("recipe", "Easy guacamole\n\nCut two ripe avocados in half, remove the stones and scoop the flesh into a bowl. Mash with a fork, leaving it a little chunky. Add the juice of one lime, half a finely chopped red onion, one chopped tomato, a handful of chopped coriander and a pinch of salt. Mix well and taste. Add chopped chilli if you like it spicy. Serve straight away with tortilla chips, because it turns brown after an hour or two."),
    ("recipe", "Vegetable fried rice (serves 2)\n\nUse 300 g of cooked rice that has cooled overnight. Heat two tablespoons of oil in a wok, add a chopped carrot and a handful of peas and stir-fry for three minutes. Push the vegetables aside, crack two eggs into the pan and scramble them. Add the rice and fry for five minutes, stirring all the time. Finish with two tablespoons of soy sauce and some sliced spring onions."),
    ("recipe", "Fresh lemonade\n\nSqueeze six lemons to get about 250 ml of juice. In a small pan, heat 150 g of sugar with 250 ml of water until the sugar dissolves, then let it cool. Pour the juice and the sugar syrup into a large jug and add one litre of cold water. Stir, taste and add more water if it is too strong. Serve over ice with a few mint leaves. It keeps for up to five days in the fridge."),
    ("recipe", "Overnight oats\n\nIn a jar, mix 50 g of rolled oats, 120 ml of milk, 2 tablespoons of yoghurt and 1 teaspoon of honey. Add a pinch of cinnamon and stir well. Close the jar and leave it in the fridge overnight, or for at least four hours. In the morning, stir again and top with sliced banana, berries or a spoonful of peanut butter. It is a quick, filling breakfast that needs no cooking."),
    ("recipe", "Roasted vegetables\n\nHeat the oven to 200 degrees Celsius. Chop two peppers, one courgette, one red onion and 300 g of sweet potato into bite-sized pieces. Spread them on a large baking tray, drizzle with three tablespoons of olive oil, and season with salt, pepper and a teaspoon of dried thyme. Roast for 35 to 40 minutes, turning once halfway through, until the edges are brown. Serve as a side dish or with rice."),
    # meeting notes
    ("meeting", "Product team meeting, 4 March\nPresent: Anna, Jorge, Mei, Sunil.\n- The new sign-up page is live; sign-ups rose 12% in the first week.\n- Jorge reported two bugs in the payment form; he will fix them by Friday.\n- Mei will run five user interviews about the search feature before 20 March.\n- Decision: the dark mode feature moves to next quarter.\n- Next meeting: 11 March at 10 am."),
    ("meeting", "Parent-teacher association, 15 January\nChair: Mrs Osei. Twelve members attended.\nThe winter fair raised 2,450 pounds. The group agreed to spend 1,500 pounds on new library books and save the rest for the summer trip. Mr Dunn offered to ask local shops for raffle prizes for the spring quiz night on 21 March. Volunteers are still needed to run the book stall. The next meeting is on 12 February in the school hall."),
    ("meeting", "Garden club notes, Saturday 6 April\nWe discussed the new vegetable beds at the community garden. Ruth will order 20 bags of compost by Wednesday. The tool shed lock is broken; Ahmed will replace it this week. We agreed to hold a seed swap on 27 April from 2 to 4 pm. Membership is now 34 people. Reminder: the water butt must be emptied before the frost returns."),
    ("meeting", "Marketing meeting, 22 May\nAttendees: Claire, Dev, Hannah, Luis.\nThe summer campaign will launch on 10 June with a budget of 15,000 dollars. Dev will finish the three video adverts by 3 June. Hannah suggested a discount code for newsletter subscribers; the team agreed on 10% off. Luis raised concerns about the website's slow loading speed and will talk to IT. Claire will send the final plan to the director on Friday."),
    ("meeting", "IT migration check-in, 8 October\nThe move to the new email system is 70% complete. Finance and HR have moved; Sales and Support will move next week. Karim reported that about 30 staff still use the old password format and must update it before 15 October. Two printers in the north office are not working with the new system; Beth will contact the supplier. Training sessions are booked for 17 and 18 October."),
    ("meeting", "Budget review, 2 February\nPresent: the director, Jenna (finance), Paul (operations).\nTravel spending was 20% over budget last year. From March, all trips over 500 dollars need the director's approval. Paul proposed replacing the office laptops in two stages, 25 this year and 25 next year. Jenna will prepare cost estimates by 16 February. Everyone agreed to move the staff party budget to the training fund."),
    ("meeting", "Book club planning, 12 September\nEight members came. We finished 'The Lantern Keeper' and most people enjoyed the ending. Next month's book is 'Rivers of Salt', chosen by a vote of five to three. Sophie will host the October meeting at her flat on the 10th at 7 pm. Members asked to try a non-fiction book in November. Tim will bring snacks; everyone else should bring their own drinks."),
    ("meeting", "Youth football club committee, 30 August\nThe new season starts on 14 September. We have 86 registered players across six teams, up from 71 last year. Two new coaches, Rita and Jake, have completed their first-aid training. The club needs 400 dollars for new goal nets; Martin will apply for a council grant. Parents will be asked to help with the car-park rota. Kit collection is on 7 September."),
    # short stories
    ("story", "Every morning, Ellie left a slice of apple on the fence for the fox that lived behind the old shed. For weeks she saw nothing but an empty fence. Then, one snowy Saturday, she woke early and saw a thin red fox sitting on the wall, watching her window. It took the apple, looked at her for a long moment, and trotted away. From then on, Ellie always left two slices."),
    ("story", "The lighthouse had been dark for twenty years when Marcus bought it for one dollar. Everyone in the village said he was mad. He spent the winter fixing the stairs, cleaning the glass and rewiring the lamp. On the first night of spring, he switched it on. Down in the harbour, old fishermen came out of their houses to look. Nobody called him mad again."),
    ("story", "Priya found the note inside a library book: 'If you are reading this, please water the plant on the third floor.' She laughed, but she went upstairs anyway. In a corner by the window stood a small, dusty fern with dry soil. She watered it. The next week, another note was waiting in a different book, this time with a drawing of a smiling leaf."),
    ("story", "Grandpa Leo could not remember names any more, but he could still play every song on the piano. On Sunday afternoons, his grandchildren sat around him and called out the titles of old tunes. He never missed a note. When he finished, he always asked, 'Who are all you lovely people?' and they would tell him, again, with a smile."),
    ("story", "The robot was built to sort letters, but the post office closed and it was left alone in the dark sorting room. For months it sorted the same three letters over and over. One day a girl called Ana climbed in through a broken window, looking for her lost cat. The robot handed her a letter addressed to her grandmother. It had been waiting for years."),
    ("story", "On the last day of the school year, Mr Patel gave every student in his class a sealed envelope and said, 'Open it in ten years.' Most of them forgot. Jonas did not. On a rainy evening a decade later, he found it in a box and opened it. Inside was a single line in his teacher's neat writing: 'I told you that you could do it.'"),
    ("story", "Two rival bakers, Hugo and Mina, shared a street but had not spoken for years. One winter morning, Mina's oven broke just before the town fair. Hugo heard about it, walked across the road with flour on his apron, and offered her his second oven. They baked side by side all night. At the fair, their stalls stood next to each other, and they shared the prize."),
    ("story", "The little boat drifted away from the shore while Omar was picking shells. By the time he noticed, it was far out on the calm lake. He sat down on the sand and waited, feeling foolish. An hour later the wind changed, and slowly, as if it had simply gone for a walk, the boat came back and bumped gently against the rocks at his feet."),
    # bios
    ("bio", "Rosa Delgado was born in 1978 in Valencia, Spain. She trained as a pastry chef in Paris and worked in hotel kitchens in London for ten years. In 2012 she opened her own bakery, Dulce, in Manchester, which is now known for its orange-almond cakes. In 2021 she published her first cookbook, 'Sweet Mornings'. She lives with her husband and two children and teaches free baking classes at a local youth centre."),
    ("bio", "Daniel Kim is a civil engineer who designs footbridges. He grew up in Busan, South Korea, and studied engineering at the University of Toronto, graduating in 2005. His best-known project is the Cedar Creek Bridge, a 90-metre wooden bridge opened in 2018. He is a strong believer in using local materials. In his free time he builds model railways and coaches a junior chess team."),
    ("bio", "Amara Nwosu is a painter from Lagos, Nigeria, born in 1990. Her large, colourful paintings show busy markets and family gatherings. She held her first solo exhibition in 2015 at a small gallery in Accra. Since then her work has been shown in Berlin, New York and Cape Town. In 2022 she won the Horizon Prize for young artists. She now runs a studio where she mentors teenage artists."),
    ("bio", "Lars Eriksen started running at the age of 45 to lose weight. Five years later, he has completed twelve marathons, including races in Boston, Berlin and Tokyo. His best time is 3 hours and 8 minutes. A retired postman from Bergen, Norway, he trains six days a week, often in snow. He writes a popular blog called 'Late Starter' and raises money for a heart charity with every race."),
    ("bio", "Mrs Fatima Haddad has taught maths at Oakwood Secondary School since 1996. She is famous among students for turning equations into puzzles and for her yearly 'Maths Escape Room'. In 2019 she was named Teacher of the Year for the county. Before teaching she worked briefly as an accountant. She plans to retire next summer and says she wants to finally learn the cello."),
    ("bio", "Dr Chen Wei is a marine biologist who studies coral reefs. She was born in 1983 in Xiamen, China, and earned her doctorate in Australia in 2011. Her research team was the first to map how a rare coral species recovers after a heatwave. She has written more than forty scientific papers and a children's book, 'The Secret Garden Under the Sea'. She dives about 100 times a year."),
    ("bio", "Jonah Reyes is a jazz pianist and songwriter from New Orleans. He began playing piano in church at the age of six. After studying music in Chicago, he toured with several big bands before releasing his first album, 'Blue Streets', in 2016. He has since released three more albums. Jonah also runs a free summer music camp for children who cannot afford lessons."),
    ("bio", "Grace Mbeki worked as a nurse in Johannesburg for 25 years, mostly in children's wards. In 2010 she founded Small Steps, a charity that trains community health workers in rural villages. The charity has trained over 1,200 workers so far. Grace was born in 1965 and has three grown-up children. She received a national award for public service in 2019 and still volunteers at a clinic twice a week."),
    # support tickets
    ("ticket", "Ticket #5521 - opened 12 June, 9:14 am\nCustomer: Laura Fisher\nIssue: I can't log in to my account. I reset my password twice yesterday, but every time I try to log in it says 'invalid credentials'. I use the app on an Android phone and I also tried the website on my laptop. I need to download my invoices before Friday for my accountant. Please help as soon as possible."),
    ("ticket", "Ticket #7730\nCustomer: Ben Adeyemi (order 99-3812)\nI returned a pair of boots on 2 May using the free return label, and the tracking shows you received them on 6 May. It has now been three weeks and I still have not been refunded the 89.99 dollars. Nobody has answered my two previous emails. Please tell me when I will get my money back."),
    ("ticket", "Ticket #3104\nFrom: Sofia Russo\nThe desk lamp I ordered arrived today, but the glass shade was broken into pieces. The box itself looked fine, so I think it was packed badly. I have photos of the damage. I would prefer a replacement rather than a refund, because I need the lamp for my new office. My order number is LM-20457."),
    ("ticket", "Ticket #8892 - urgent\nCustomer: Hiro Tanaka\nMy parcel was supposed to arrive on Monday for my daughter's birthday on Wednesday. The tracking page has said 'in transit' for five days without any update. I paid 12 dollars extra for express delivery. If it cannot arrive by Wednesday, I would like the delivery fee refunded and the order cancelled."),
    ("ticket", "Ticket #6218\nCustomer: Emily Carter\nI was charged twice for my monthly subscription: two payments of 14.99 dollars on 1 July, both from the same card ending in 4417. I only have one account. Please refund the extra payment and make sure it does not happen again next month. I have attached a screenshot of my bank statement."),
    ("ticket", "Ticket #4407\nUser: Mohammed Ali\nThe photo editing app crashes every time I try to export a picture larger than 10 MB. I am using version 3.2.1 on an iPad. Smaller pictures export fine. I already tried restarting the iPad and reinstalling the app. This started after the last update on 20 August. I use the app for work, so a quick fix would be appreciated."),
    ("ticket", "Ticket #9015\nCustomer: Anna Kowalski\nMy Wi-Fi router keeps disconnecting every evening between 7 and 10 pm. The light turns orange for a minute and then goes back to green. I have restarted it many times. Two laptops and a smart TV are connected. My contract is for 100 Mbps but speed tests show around 15 Mbps in the evening. Can someone check the line or send a new router?"),
    ("ticket", "Ticket #2290\nCustomer: Peter Lindqvist\nI would like to cancel my gym membership from the end of this month. I am moving to another city for work on 30 September. The website says cancellations must be made by phone, but I have called three times and waited over 20 minutes each time. Please confirm the cancellation by email and tell me if there is any fee."),
]

KIND_NAMES = {
    "email": ["email", "message"], "review": ["product review", "review", "customer review"],
    "news": ["news report", "news article", "article"], "recipe": ["recipe"],
    "meeting": ["set of meeting notes", "meeting summary"], "story": ["short story", "story"],
    "bio": ["short biography", "profile"], "ticket": ["support ticket", "customer support request"],
}

ALL_KINDS = tuple(KIND_NAMES)


def with_passage(instr: str, kind: str, passage: str, rng: random.Random) -> str:
    """Put the instruction and the passage together in one of several layouts."""
    name = rng.choice(KIND_NAMES[kind])
    layout = rng.randrange(8)
    if layout == 0:
        return f"{instr}\n\n{passage}"
    if layout == 1:
        return f"{instr}\n\nText:\n{passage}"
    if layout == 2:
        return f"{instr}\n\n\"\"\"\n{passage}\n\"\"\""
    if layout == 3:
        return f"Here is {a_or_an(name)} {name}:\n\n{passage}\n\n{instr}"
    if layout == 4:
        return f"{passage}\n\n{instr}"
    if layout == 5:
        return f"Read the {name} below.\n\n{passage}\n\nTask: {instr}"
    if layout == 6:
        return f"{instr}\n\n---\n{passage}\n---"
    return f"I got this {name}:\n\n{passage}\n\n{instr}"


# (instruction, passage kinds it suits)
EXTRACTION_TASKS: list[tuple[str, tuple[str, ...]]] = [
    ("Extract the names of all the people mentioned in the text.", ALL_KINDS),
    ("List every person named in this text, one per line.", ALL_KINDS),
    ("List every date and time mentioned in the text. If there are none, say so.", ALL_KINDS),
    ("Find all the numbers in the text and say what each one refers to.", ALL_KINDS),
    ("Extract all the places mentioned in the text.", ALL_KINDS),
    ("Extract the key facts from the text as a JSON object.", ALL_KINDS),
    ("Return a JSON object with the fields \"people\", \"dates\" and \"places\", based on the text.", ALL_KINDS),
    ("Make a two-column table (Item | Value) of the facts in this text.", ALL_KINDS),
    ("List any companies, organisations or brands mentioned in the text. If there are none, say so.", ALL_KINDS),
    ("Answer using only the text: who is involved, what happened, and when?", ALL_KINDS),
    ("Find every amount of money in the text, if any, and say what it is for.", ALL_KINDS),
    ("Extract three keywords that describe this text.", ALL_KINDS),
    ("Pull out all the action items and who is responsible for each.", ("email", "meeting")),
    ("Extract every deadline mentioned in the text.", ("email", "meeting", "ticket")),
    ("What does the writer want the reader to do? List each request.", ("email", "ticket")),
    ("Extract the sender, the recipient and the main request as JSON.", ("email",)),
    ("Extract the product or place being reviewed, the rating and the main complaint.", ("review",)),
    ("List the positive points and the negative points mentioned in the review.", ("review",)),
    ("Is the sentiment of this review positive, negative or mixed? Quote the words that show it.", ("review",)),
    ("Extract the price and any other numbers from the review as a JSON object.", ("review",)),
    ("Extract the main event, the place and the date from this article.", ("news",)),
    ("List every number in this article together with what it measures.", ("news",)),
    ("Who is quoted or named in this article, and what is their role?", ("news",)),
    ("Extract the ingredients and their quantities as a bulleted list.", ("recipe",)),
    ("List the cooking times and temperatures mentioned in this recipe.", ("recipe",)),
    ("Extract the ingredients from this recipe as a JSON list of objects with \"item\" and \"amount\".", ("recipe",)),
    ("How many servings does this recipe make, and what equipment is needed?", ("recipe",)),
    ("List the decisions that were made in this meeting.", ("meeting",)),
    ("Who attended the meeting, and when is the next one?", ("meeting",)),
    ("Extract the tasks as JSON with the fields \"owner\", \"task\" and \"due\".", ("meeting",)),
    ("Who are the characters in this story, and where does it take place?", ("story",)),
    ("List the main events of the story in order.", ("story",)),
    ("Extract the person's name, birth year, home town and job as JSON.", ("bio",)),
    ("List the achievements mentioned in this biography with their years.", ("bio",)),
    ("Make a timeline of this person's life from the text.", ("bio",)),
    ("Extract the customer name, ticket number, order number and problem as JSON.", ("ticket",)),
    ("What does the customer want? Extract the request in one line.", ("ticket",)),
    ("Classify this ticket as billing, delivery, technical or account, and extract the key details.", ("ticket",)),
]

EDIT_FIX_TASKS = [
    "Fix the grammar and spelling mistakes in the following text.",
    "Proofread this text and correct any errors.",
    "Correct the spelling and punctuation in this text. Do not change the meaning.",
    "There are some typos in this text. Please fix them and return the corrected version.",
    "Correct the mistakes in this text, then list the changes you made.",
    "Clean up this text: fix spelling, capital letters and punctuation.",
]
EDIT_STYLE_TASKS: list[tuple[str, tuple[str, ...]]] = [
    ("Rewrite this text in a more formal tone.", ALL_KINDS),
    ("Rewrite this text to sound friendlier and warmer.", ALL_KINDS),
    ("Make this text shorter without losing the main points.", ALL_KINDS),
    ("Rewrite this text in simple English for a young reader.", ALL_KINDS),
    ("Rewrite this text as a bulleted list.", ALL_KINDS),
    ("Remove any unnecessary words from this text.", ALL_KINDS),
    ("Improve the flow of this text and split any long sentences.", ALL_KINDS),
    ("Rewrite the first sentence so that it grabs the reader's attention.", ALL_KINDS),
    ("Rewrite this text in about half the length.", ALL_KINDS),
    ("Rewrite this text in a more enthusiastic tone.", ("review", "news", "recipe", "bio", "story")),
    ("Rewrite this email to be more polite and professional.", ("email",)),
    ("Rewrite this email as a short text message.", ("email",)),
    ("Make this review sound more balanced and less emotional.", ("review",)),
    ("Rewrite this review as if the writer loved the product.", ("review",)),
    ("Rewrite this news paragraph for a children's newspaper.", ("news",)),
    ("Rewrite this article as a short radio announcement.", ("news",)),
    ("Rewrite this recipe as numbered steps.", ("recipe",)),
    ("Rewrite this recipe in a chatty, friendly style.", ("recipe",)),
    ("Turn these meeting notes into a short email to the team.", ("meeting",)),
    ("Rewrite these meeting notes as full sentences in one paragraph.", ("meeting",)),
    ("Rewrite this story in the present tense.", ("story",)),
    ("Rewrite this story from the first-person point of view of the main character.", ("story",)),
    ("Rewrite this biography in the first person, as if the person wrote it.", ("bio",)),
    ("Rewrite this biography as a short speaker introduction for an event.", ("bio",)),
    ("Rewrite this support ticket so it is calm, clear and polite.", ("ticket",)),
    ("Rewrite this complaint as a short, professional email.", ("ticket",)),
]
SUMMARY_TASKS: list[tuple[str, tuple[str, ...]]] = [
    ("Summarize the text in one sentence.", ALL_KINDS),
    ("Summarise this in three bullet points.", ALL_KINDS),
    ("Write a short title for this text.", ALL_KINDS),
    ("Give a two-sentence summary of the text.", ALL_KINDS),
    ("TL;DR this, please.", ALL_KINDS),
    ("Summarize this for a busy reader in under 30 words.", ALL_KINDS),
    ("What is the main point of this text?", ALL_KINDS),
    ("Explain what this text is about to a 10-year-old in two or three sentences.", ALL_KINDS),
    ("Write a headline and a one-sentence summary for this text.", ALL_KINDS),
    ("Write a one-line summary that would fit in a text message.", ALL_KINDS),
    ("List the three most important points in this text.", ALL_KINDS),
    ("Condense this into a single tweet.", ALL_KINDS),
    ("Summarize the text in exactly one short paragraph.", ALL_KINDS),
    ("Summarize the email and say what reply is needed.", ("email",)),
    ("What does the reader of this email need to do, and by when? Summarize briefly.", ("email",)),
    ("Summarize this review: what did the reviewer like and dislike?", ("review",)),
    ("In one sentence, would the reviewer recommend this? Summarize why.", ("review",)),
    ("Summarize this news article in the style of a short news bulletin.", ("news",)),
    ("Summarize the recipe in three short steps.", ("recipe",)),
    ("Summarize the key decisions and next steps from this meeting.", ("meeting",)),
    ("Summarize these meeting notes for someone who missed the meeting.", ("meeting",)),
    ("Summarize the plot of this story in one sentence.", ("story",)),
    ("What is the moral or message of this story? Summarize it briefly.", ("story",)),
    ("Summarize this person's life and work in one sentence.", ("bio",)),
    ("Summarize the customer's problem and what they want, in one sentence.", ("ticket",)),
    ("Summarize this ticket for the support team in two bullet points.", ("ticket",)),
]

HOMOPHONES = {"their": "there", "there": "their", "your": "you're", "its": "it's", "it's": "its",
              "then": "than", "than": "then", "to": "too", "were": "where", "who's": "whose",
              "affect": "effect", "lose": "loose", "which": "witch", "our": "are"}


def add_typos(text: str, rng: random.Random, rate: float = 0.07) -> str:
    """Introduce deterministic spelling, grammar and punctuation slips into a passage."""

    def damage(word: str) -> str:
        low = word.lower()
        if low in HOMOPHONES and rng.random() < 0.7:
            new = HOMOPHONES[low]
            return new.capitalize() if word[0].isupper() else new
        if len(word) < 4:
            return word
        i = rng.randrange(1, len(word) - 2)
        op = rng.randrange(4)
        if op == 0:  # swap two letters
            return word[:i] + word[i + 1] + word[i] + word[i + 2:]
        if op == 1:  # drop a letter
            return word[:i] + word[i + 1:]
        if op == 2:  # double a letter
            return word[:i] + word[i] + word[i:]
        return word[:i] + rng.choice("aeiou") + word[i + 1:]  # wrong vowel

    tokens = re.split(r"(\s+)", text)
    changed = 0
    for j, tok in enumerate(tokens):
        m = re.fullmatch(r"([^A-Za-z']*)([A-Za-z']+)([^A-Za-z']*)", tok)
        if not m or any(ch.isdigit() for ch in tok):
            continue
        pre, core, post = m.groups()
        if core[0].isupper() and core.lower() not in HOMOPHONES:
            continue  # leave names and other capitalised words alone
        if rng.random() < rate or (changed < 2 and j > len(tokens) * 0.6 and rng.random() < 0.3):
            new = damage(core)
            if new != core:
                tokens[j] = pre + new + post
                changed += 1
        elif post.startswith(",") and rng.random() < 0.25:
            tokens[j] = pre + core + post[1:]
    out = "".join(tokens)
    if out == text and rate < 1:  # always leave something to fix, where a word can take a typo
        return add_typos(text, rng, rate * 2)
    return out


EDIT_SENTENCES = [
    "Their going to the park tomorow after school.", "Me and him goes to the gym every monday.",
    "The dog wagged it's tail when it seen the ball.", "I should of called you yesterday, sorry.",
    "She don't like coffee but she drink tea every morning.", "Can you borrow me your pen for a minute?",
    "The informations you sent was very usefull.", "We was late because the bus broke down.",
    "Each of the students have their own locker.", "Less people came to the meeting then we expected.",
    "The reports is on you're desk.", "I has been working here since three years.",
    "Him and me are best freinds.", "The childrens was playing in the garden.",
    "Whose going to the party on saturday?", "I seen that film last week and it were great.",
    "The shop close at 6 pm on sundays.", "Between you and I, the plan is not good.",
    "Their are to many cars on this road.", "The team have won there first match.",
    "Please send me the files asap, its urgent.", "I'm looking forward to hear from you.",
    "She is more taller than her brother.", "We discussed about the problem for an hour.",
    "Everybody were happy with the results.", "The meeting have been moved to thursday.",
    "I didn't did my homework because I was tired.", "He run very fast yesterday in the race.",
    "Its a beautiful day, lets go outside.", "The cake tastes deliciously.",
    "My sister and me is going to Spain in july.", "I am agree with your idea.",
    "The weather was so good so we went to the beach.", "This is the most best pizza in town.",
    "Could you explain me how this works?", "Your the best teacher I ever had.",
    "I will call you when I will arrive.", "The list of items are on the table.",
    "Nobody told me nothing about the change.", "Despite of the rain, we went for a walk.",
    "The phone what I bought last week is broken.", "Affect of the new rules are not clear yet.",
]
EDIT_SENTENCE_TASKS = [
    "Correct this sentence: {s}", "Fix the grammar: \"{s}\"", "What is wrong with this sentence? \"{s}\"",
    "Rewrite this sentence correctly and explain the mistake: {s}", "Please correct: {s}",
    "Is this sentence correct? If not, fix it. \"{s}\"",
]
PLAIN_SENTENCES = [
    "The meeting is at 3.", "We need more chairs.", "I am not happy with the service.",
    "The food was okay.", "Please send the report soon.", "The new phone is really good.",
    "It was a nice trip.", "We can't come to the party.", "The project is late.",
    "Thanks for the help yesterday.", "The park is big and has trees.", "I want a refund.",
    "The film was long.", "Our shop has new shoes.", "The weather is bad today.",
    "The train was delayed again.", "This soup needs more salt.", "The kids liked the museum.",
]
PLAIN_SENTENCE_TASKS = [
    "Make this sentence more formal: \"{s}\"", "Make this sentence more polite: \"{s}\"",
    "Rewrite this sentence to be more descriptive: \"{s}\"", "Give me three different ways to say: \"{s}\"",
    "Make this sentence sound more exciting: \"{s}\"", "Rewrite this sentence for a business email: \"{s}\"",
    "Rewrite \"{s}\" in a friendlier way.", "Make this sentence more positive: \"{s}\"",
]


def suited(tasks, kind):
    return [t for t, kinds in tasks if kind in kinds]


def make_extraction(rng: random.Random):
    kind, passage = rng.choice(PASSAGES)
    instr = rng.choice(suited(EXTRACTION_TASKS, kind))
    return with_passage(vary(instr, rng, 0.25), kind, passage, rng)


def make_editing(rng: random.Random):
    r = rng.random()
    if r < 0.14:
        return vary(rng.choice(EDIT_SENTENCE_TASKS).replace("{s}", rng.choice(EDIT_SENTENCES)), rng, 0.2), "fix"
    if r < 0.22:
        return vary(rng.choice(PLAIN_SENTENCE_TASKS).replace("{s}", rng.choice(PLAIN_SENTENCES)), rng, 0.2)
    kind, passage = rng.choice(PASSAGES)
    if r < 0.55:
        return with_passage(vary(rng.choice(EDIT_FIX_TASKS), rng, 0.25), kind, add_typos(passage, rng), rng), "fix"
    return with_passage(vary(rng.choice(suited(EDIT_STYLE_TASKS, kind)), rng, 0.25), kind, passage, rng)


def make_summarization(rng: random.Random):
    kind, passage = rng.choice(PASSAGES)
    instr = rng.choice(suited(SUMMARY_TASKS, kind))
    return with_passage(vary(instr, rng, 0.25), kind, passage, rng)


EXTRACTION_FOLLOWUPS = [
    "Now put that in a table.", "Return it as JSON instead.", "Which of those is the most important?",
    "Sort that list alphabetically.", "Now summarize the text in one sentence.",
    "Did you miss anything? Check again.", "Give me only the dates.", "Explain how you found them.",
]
EDITING_FOLLOWUPS = [
    "Make it even shorter.", "Now make it more formal.", "Now make it sound more casual.",
    "Now turn it into a bulleted list.", "Give it a title.", "Can you make it sound friendlier?",
]
EDITING_FIX_FOLLOWUPS = [
    "What changes did you make?", "Explain the main mistakes in simple words.",
    "Now make it more formal.", "Make it shorter too.", "Which mistake is the most common one?",
]
MATH_CONCEPT_FOLLOWUPS = [
    "Give another example.", "Explain that to a child.", "Make it shorter.",
    "Write a practice question about this, with the answer.", "Where is this used in everyday life?",
]
SUMMARIZATION_FOLLOWUPS = [
    "Make it shorter.", "Now write it as three bullet points.", "Give it a title.",
    "What details did you leave out?", "Explain it to a child.", "Now make it more formal.",
    "Write it as one question and answer.", "Which sentence in the text matters most?",
]


# ---------------------------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------------------------

MAKERS = {
    "writing": make_writing, "roleplay": make_roleplay, "reasoning": make_reasoning, "math": make_math,
    "coding": make_coding, "extraction": make_extraction, "stem": make_stem,
    "humanities": make_humanities, "editing": make_editing, "summarization": make_summarization,
}
FOLLOWUPS = {
    "writing": WRITING_FOLLOWUPS, "roleplay": ROLEPLAY_FOLLOWUPS, "reasoning": REASONING_FOLLOWUPS,
    "math": MATH_FOLLOWUPS, "extraction": EXTRACTION_FOLLOWUPS, "stem": STEM_FOLLOWUPS,
    "humanities": HUMANITIES_FOLLOWUPS, "editing": EDITING_FOLLOWUPS,
    "summarization": SUMMARIZATION_FOLLOWUPS,
}


def followup(category: str, tags: tuple[str, ...], rng: random.Random) -> str:
    if category == "coding":
        options = CODING_FOLLOWUPS[tags[0] if tags else "general"]
    elif category == "editing" and "fix" in tags:
        options = EDITING_FIX_FOLLOWUPS
    elif category == "math" and "concept" in tags:
        options = MATH_CONCEPT_FOLLOWUPS
    else:
        options = FOLLOWUPS[category]
    text = rng.choice(options)
    if rng.random() < 0.15:
        text = rng.choice(["Thanks! ", "Great. ", "Nice. ", "OK. ", "Thank you. "]) + text
    return text


def generate(seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    want = SINGLE_PER_CATEGORY + MULTI_PER_CATEGORY
    records: list[tuple[str, list[str]]] = []
    seen_texts: set[str] = set()
    for category in CATEGORIES:
        pool = Pool()
        build(pool, MAKERS[category], rng, want)
        if len(pool) < want:
            raise SystemExit(f"{category}: only {len(pool)} unique prompts, need {want}")
        picked = rng.sample(pool.items, want)
        for text, _ in picked[:SINGLE_PER_CATEGORY]:
            records.append((category, [text]))
        for text, tags in picked[SINGLE_PER_CATEGORY:]:
            records.append((category, [text, followup(category, tags, rng)]))
    out = []
    for category, turns in records:
        key = "\x00".join(turns)
        if key in seen_texts:
            continue
        seen_texts.add(key)
        convo = []
        for turn in turns:
            convo.append({"from": "human", "value": turn})
            convo.append({"from": "gpt", "value": ""})
        out.append({"category": category, "conversations": convo})
    rng.shuffle(out)
    return [{"id": f"train-{i:05d}", **rec} for i, rec in enumerate(out, start=1)]


HELD_OUT = Path(__file__).resolve().parents[1] / "prompts" / "chat.jsonl"


def word_runs(text: str, n: int = 8) -> set[str]:
    words = text.lower().split()
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def drop_held_out(records: list[dict]) -> tuple[list[dict], int]:
    """Records sharing no eight-word run with the evaluation set, renumbered; and how many went."""
    with open(HELD_OUT, encoding="utf-8") as f:
        evaluation = set().union(*(word_runs(t) for line in f if line.strip() for t in json.loads(line)["turns"]))
    kept = [r for r in records if not any(word_runs(t["value"]) & evaluation for t in r["conversations"])]
    return [{**r, "id": f"train-{i:05d}"} for i, r in enumerate(kept, start=1)], len(records) - len(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "train_prompts.jsonl")
    parser.add_argument("--samples", type=int, default=0, help="print this many random prompts")
    args = parser.parse_args()
    records, dropped = drop_held_out(generate())
    print(f"dropped {dropped} records that share eight words in a row with {HELD_OUT.name}")
    with open(args.out, "w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    counts = Counter(r["category"] for r in records)
    multi = Counter(r["category"] for r in records if len(r["conversations"]) > 2)
    print(f"wrote {len(records)} records to {args.out}")
    for c in CATEGORIES:
        print(f"  {c:14s} {counts[c]:5d}  ({counts[c] - multi[c]} single-turn, {multi[c]} two-turn)")
    show = random.Random(1).sample(records, min(args.samples, len(records)))
    for rec in show:
        print(f"\n--- {rec['id']} [{rec['category']}]")
        for turn in rec["conversations"][::2]:
            print("USER:", turn["value"])


if __name__ == "__main__":
    main()
