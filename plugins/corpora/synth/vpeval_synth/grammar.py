"""A small English grammar with slots, and per-speaker word habits (idiolects) over it.

Every speaker draws from the same grammar, but with their own preferences: a Dirichlet (alpha about
0.3) over each slot's fillers, over clause templates and connectors, plus a couple of favourite
phrases. So a transcript carries some identity, more so over several utterances, as conversational
speech does. Only plain words (no digits, no contractions) so an ASR's output compares cleanly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

SLOTS: dict[str, tuple[str, ...]] = {
    "subject": (
        "i",
        "we",
        "my brother",
        "my sister",
        "my friend",
        "our neighbor",
        "my mother",
        "my father",
        "the children",
        "my colleague",
        "my cousin",
        "the whole team",
    ),
    "went": ("went", "walked", "drove", "hurried", "wandered", "headed", "cycled", "rushed"),
    "place": (
        "market",
        "station",
        "library",
        "office",
        "beach",
        "garden",
        "park",
        "museum",
        "bakery",
        "river",
        "hospital",
        "cinema",
        "harbor",
        "village",
        "stadium",
        "airport",
    ),
    "time": (
        "on monday",
        "this morning",
        "last night",
        "yesterday afternoon",
        "after lunch",
        "at the weekend",
        "early today",
        "before dinner",
        "last summer",
        "on friday evening",
        "a while ago",
        "the other day",
    ),
    "adjective": (
        "lovely",
        "strange",
        "terrible",
        "wonderful",
        "boring",
        "brilliant",
        "awful",
        "quiet",
        "busy",
        "expensive",
        "crowded",
        "peaceful",
        "odd",
        "perfect",
    ),
    "intensifier": (
        "really",
        "very",
        "quite",
        "pretty",
        "rather",
        "incredibly",
        "fairly",
        "absolutely",
        "a bit",
        "terribly",
        "totally",
        "extremely",
    ),
    "thing": (
        "weather",
        "food",
        "music",
        "film",
        "meeting",
        "journey",
        "coffee",
        "game",
        "book",
        "party",
        "concert",
        "lesson",
        "dinner",
        "show",
    ),
    "said": (
        "said",
        "told me",
        "mentioned",
        "claimed",
        "thought",
        "felt",
        "insisted",
        "explained",
        "admitted",
        "complained",
    ),
    "think": ("i think", "i guess", "i suppose", "i believe", "it seems", "i feel", "my feeling is", "i would say"),
    "want": (
        "wanted to",
        "decided to",
        "tried to",
        "planned to",
        "hoped to",
        "promised to",
        "managed to",
        "forgot to",
        "needed to",
        "offered to",
    ),
    "activity": (
        "cook dinner",
        "clean the house",
        "read a book",
        "watch a film",
        "go for a walk",
        "visit the museum",
        "play football",
        "paint the fence",
        "plant some flowers",
        "fix the car",
        "write a letter",
        "bake some bread",
        "call our parents",
        "learn the piano",
    ),
    "reaction": ("it was", "that was", "everything was", "the whole thing was", "honestly it was"),
    "connector": ("and then", "but", "because", "so", "although", "and", "while", "after that"),
    "opener": (
        "well",
        "so",
        "actually",
        "honestly",
        "you know",
        "i mean",
        "look",
        "basically",
        "now",
        "right",
        "anyway",
        "to be fair",
        "in fact",
        "frankly",
        "listen",
    ),
}

TEMPLATES: tuple[str, ...] = (
    "{subject} {went} to the {place} {time}",
    "{subject} {want} {activity} {time}",
    "the {thing} was {intensifier} {adjective}",
    "{subject} {said} that the {thing} was {intensifier} {adjective}",
    "{think} we should {activity} at the {place}",
    "{time} {subject} {want} {activity}",
    "{reaction} {intensifier} {adjective}",
    "the {thing} at the {place} was {intensifier} {adjective}",
)

# Longer habits, each speaker has a couple and slips them in often.
FAVOURITES: tuple[str, ...] = (
    "you see",
    "kind of",
    "sort of",
    "at the end of the day",
    "to be honest",
    "literally",
    "in a way",
    "obviously",
    "for sure",
    "no doubt",
    "mind you",
    "as it happens",
    "i must say",
    "believe me",
    "funnily enough",
    "as a matter of fact",
    "truth be told",
    "all in all",
    "by the way",
    "if you ask me",
    "more or less",
    "as usual",
    "for some reason",
    "of course",
)

_SLOT = re.compile(r"\{(\w+)\}")


@dataclass
class Idiolect:
    """One speaker's word habits: probabilities over fillers, templates and favourite phrases."""

    slot_probs: dict[str, np.ndarray]
    template_probs: np.ndarray
    favourites: tuple[str, ...]
    favourite_rate: float  # chance per utterance that a favourite phrase is used
    opener_rate: float  # chance per sentence that it starts with an opener

    @classmethod
    def draw(cls, rng: np.random.Generator, alpha: float, favourites: int) -> Idiolect:
        slot_probs = {slot: rng.dirichlet(np.full(len(fillers), alpha)) for slot, fillers in SLOTS.items()}
        # Templates get a flatter prior than words: everyone uses every construction now and then.
        template_probs = rng.dirichlet(np.full(len(TEMPLATES), max(alpha, 1.0)))
        picked = rng.choice(len(FAVOURITES), size=min(favourites, len(FAVOURITES)), replace=False)
        return cls(
            slot_probs=slot_probs,
            template_probs=template_probs,
            favourites=tuple(FAVOURITES[i] for i in picked),
            favourite_rate=float(rng.uniform(0.3, 0.7)),
            opener_rate=float(rng.uniform(0.2, 0.8)),
        )

    def fill(self, slot: str, rng: np.random.Generator) -> str:
        return SLOTS[slot][rng.choice(len(SLOTS[slot]), p=self.slot_probs[slot])]

    def clause(self, rng: np.random.Generator) -> str:
        template = TEMPLATES[rng.choice(len(TEMPLATES), p=self.template_probs)]
        return _SLOT.sub(lambda m: self.fill(m.group(1), rng), template)

    def sentence(self, clauses: list[str], rng: np.random.Generator) -> str:
        """Join clauses with this speaker's connectors, openers and favourite phrases.

        Commas mark the phrase breaks, so espeak-ng pauses there as a speaker would.
        """
        text = clauses[0]
        for clause in clauses[1:]:
            text += f", {self.fill('connector', rng)} {clause}"
        if rng.random() < self.opener_rate:
            text = f"{self.fill('opener', rng)}, {text}"
        if self.favourites and rng.random() < self.favourite_rate:
            phrase = self.favourites[rng.integers(len(self.favourites))]
            text = f"{phrase}, {text}" if rng.random() < 0.5 else f"{text}, {phrase}"
        return text


def to_transcript(sentence: str) -> str:
    """The sentence as a transcript: capitalized first word and 'I', a full stop."""
    text = re.sub(r"\bi\b", "I", sentence)
    text = re.sub(r"\b(monday|friday)\b", lambda m: m.group(1).capitalize(), text)
    return text[0].upper() + text[1:] + "."


def normalize(text: str) -> str:
    """Lower case words without punctuation, for comparing transcripts with ASR output."""
    return " ".join(re.findall(r"[a-z']+", text.lower()))


def grammar_words() -> set[str]:
    """Every word the grammar can produce."""
    words: set[str] = set()
    for fillers in SLOTS.values():
        for filler in fillers:
            words.update(filler.split())
    for template in TEMPLATES:
        words.update(w for w in _SLOT.sub(" ", template).split())
    for phrase in FAVOURITES:
        words.update(phrase.split())
    return words
