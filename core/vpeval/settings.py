"""How the core splits a corpus and draws trials: one model, checked once when the experiment loads.

The experiment file spreads these settings over two places (`seed` and `enroll_utterances` at the top,
the rest under `data`). `vpeval.config` validates both places with the field types defined here and
builds one `PlanSettings` from them, so every bound below is refused by `vpeval validate` and nothing
is validated again at run time. A leaf module: it imports nothing else from vpeval.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field


class StrictModel(BaseModel):
    """Unknown fields are errors; numbers stay numbers (true is not 1); NaN and infinity are refused."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


def _share_or_count(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("give a share between 0 and 1 (for example 0.5) or a whole number of speakers (for example 4)")
    if isinstance(value, int) and value < 0:
        raise ValueError(
            "a count of speakers is a whole number, 0 or more (0: every speaker is evaluated, for pretrained attackers)"
        )
    if isinstance(value, int) and value > MAX_SPEAKERS:
        raise ValueError(
            f"a count of speakers is at most {MAX_SPEAKERS:,}, far above any corpus; give a share such as 0.5 "
            "or the number of speakers to train on"
        )
    if isinstance(value, float) and not (math.isfinite(value) and 0.0 < value < 1.0):
        raise ValueError(
            "a share must lie strictly between 0 and 1; write a whole number such as 4 for a count of speakers"
        )
    return value


def non_empty_distinct(what: str, example: str):
    """An after-validator for lists: at least one item, none twice (`what` names an item)."""

    def check(values: list) -> list:
        if not values:
            raise ValueError(f"the list is empty; give at least one {what}, for example {example}")
        counts = Counter(values)  # not values.count: that is quadratic, minutes for a list of 100,000 N
        repeated = sorted({str(v) for v, times in counts.items() if times > 1})
        if repeated:
            raise ValueError(f"the {what} {repeated[0]} appears twice; list each {what} once")
        return values

    return AfterValidator(check)


def _seed(value: int) -> int:
    if value < 0:
        raise ValueError(
            "the seed must be 0 or more (numpy's SeedSequence, which plugins feed with it, takes no negative numbers)"
        )
    return value


# numpy's SeedSequence, which the synth corpus and other plugins feed with the seed, takes no negative
# numbers; refusing them here keeps every consumer working. Random generators take the seed's lowest 32
# bits (`seed & 0xFFFFFFFF`), so a larger seed would silently repeat a smaller one's numbers.
MAX_SEED = 2**32 - 1
Seed = Annotated[
    int,
    AfterValidator(_seed),
    Field(
        le=MAX_SEED, description="Seed of every random choice: splits, trials, pseudo-speakers, training (below 2^32)."
    ),
]
# Upper bounds on counts: far above any corpus or protocol (VoxCeleb2 has 6,112 speakers), low enough
# that a typo cannot run for days or allocate without end.
MAX_SPEAKERS = 10_000_000
MAX_TRIALS_PER_SPEAKER = 100_000
MAX_N = 1000
ShareOrCount = Annotated[int | float, BeforeValidator(_share_or_count)]  # its bounds: _share_or_count
EnrollSizes = Annotated[
    list[Annotated[int, Field(ge=1, le=MAX_N)]],
    Field(description="Utterances per trial side, N (at least one N, each at least 1)."),
    non_empty_distinct("N", "[1]"),
]


class SplitSettings(StrictModel):
    """The experiment's `data` settings that decide the split and the trials."""

    attacker_train_speakers: ShareOrCount = Field(
        0.5,
        description="Speakers for attacker training: a share in (0, 1) of all speakers, or a whole number of "
        "speakers (at least 2 fewer than the corpus has; 0 only when no attacker trains); "
        "the rest are evaluation speakers.",
    )
    validation_speakers: float = Field(
        0.1, ge=0.0, lt=1.0, description="Share of the attacker-train speakers held out for early stopping."
    )
    enroll_share: float = Field(
        0.5, gt=0.0, lt=1.0, description="Share of an evaluation speaker's utterances in its enrollment pool."
    )
    target_trials_per_speaker: int = Field(
        10, ge=1, le=MAX_TRIALS_PER_SPEAKER, description="Target trials per evaluation speaker and N."
    )
    nontarget_trials_per_speaker: int = Field(
        10, ge=1, le=MAX_TRIALS_PER_SPEAKER, description="Non-target trials per evaluation speaker and N."
    )
    same_gender_nontargets: bool = Field(True, description="Draw non-target trials from speakers of the same gender.")
    gender_balanced_split: bool = Field(
        True, description="Split each gender in the same proportion between attacker training and evaluation."
    )
    n1_trials: Literal["voiceprivacy", "n-vs-n"] = Field(
        "voiceprivacy",
        description="What N=1 means: `voiceprivacy`, the speaker's whole enrollment pool against one utterance "
        "(the VoicePrivacy protocol); `n-vs-n`, one utterance against one, drawn like N>1 (U1 within U5), "
        "so that a curve over N compares one protocol.",
    )


class PlanSettings(SplitSettings):
    """Everything `vpeval.data.plan.make_plan` needs: the data section's split settings, the seed and N."""

    model_config = ConfigDict(frozen=True)

    seed: Seed = 0
    enroll_utterances: EnrollSizes = Field(default_factory=lambda: [1])
