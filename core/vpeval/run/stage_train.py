"""The train stage: an attacker's frontend fitted on the attacker-train speech, then the attacker trained
on the original speech or on one anonymizer's version of it (a pretrained attacker is only built)."""

from __future__ import annotations

from vpeval.api import Attacker, Frontend
from vpeval.run.cache import stable_key
from vpeval.run.cached_step import get_or_build
from vpeval.run.run_state import RunState
from vpeval.run.stage_anonymize import anonymize
from vpeval.run.stored import StoredPlugin
from vpeval.schema import ResolvedAnonymizer, ResolvedAttacker
from vpeval.types import Corpus, TrainingData, TrainingStage


def fit_frontend(state: RunState, att: ResolvedAttacker, train: Corpus) -> Frontend:
    assert att.frontend is not None
    key = state.cache.key(
        "frontend",
        {
            "frontend": att.frontend.identity(),
            "seed": state.settings.seed,
            "data": state.fingerprint,
            "train": stable_key([u.id for u in train.utterances]),
        },
    )
    frontend = state.instantiate(att.frontend, "frontend-" + att.frontend.use, key[:16])

    def fit() -> Frontend:
        frontend.fit(train)
        return frontend

    return get_or_build(state, "frontend", att.frontend.label, key, StoredPlugin(frontend), fit, reads=[train])


def train_attacker(
    state: RunState, att: ResolvedAttacker, system: ResolvedAnonymizer | None, frontend: Frontend | None
) -> tuple[Attacker, str]:
    """The attacker trained on the original speech (`system` None) or on `system`'s, and its train key."""
    cls = state.manager.get("attacker", att.plugin.use)
    identity = {"attacker": att.plugin.identity(), "frontend": att.frontend.identity() if att.frontend else None}
    label = att.label + (f" on {system.label}" if system else "")
    if not cls.needs_training:
        key = state.cache.key("train", {**identity, "pretrained": True})
        attacker = state.instantiate(att.plugin, "attacker-" + att.plugin.use, key[:16])
        attacker.frontend = frontend
        return attacker, key
    data, data_keys = training_data(state, att, system)
    start_key = None
    if att.init_from is not None:
        ref = next(a for a in state.exp.attackers if a.label == att.init_from)
        _, start_key = train_attacker(state, ref, system if ref.train_on == "anonymized" else None, frontend)
    key = state.cache.key("train", {**identity, "seed": state.settings.seed, "data": data_keys, "init_from": start_key})
    attacker = state.instantiate(att.plugin, "attacker-" + att.plugin.use, key[:16])
    attacker.frontend = frontend

    def train() -> Attacker:
        if start_key is not None:
            attacker.init_from(state.cache.path("train", start_key))
        attacker.train(data)
        return attacker

    return get_or_build(state, "train", label, key, StoredPlugin(attacker), train), key


def training_data(
    state: RunState, att: ResolvedAttacker, system: ResolvedAnonymizer | None
) -> tuple[TrainingData, list[str]]:
    """What the attacker trains on, and the keys of that speech (part of its train key)."""
    plan = state.plan
    if system is None:
        stages = [TrainingStage("original", plan.train, "original")]
        keys = [stable_key([state.fingerprint, [u.id for u in plan.train.utterances]])]
        validation = plan.validation
    else:
        train = anonymize(state, system, plan.train, "train")
        stages = [TrainingStage(system.label, train, system.label)]
        keys = [state.anonymized_key(system.label, "train")]
        validation = anonymize(state, system, plan.validation, "validation") if plan.validation is not None else None
    if validation is not None:
        keys.append(
            stable_key([u.id for u in validation.utterances])
            if system is None
            else state.anonymized_key(system.label, "validation")
        )
    return TrainingData(stages, validation, att.train_on), keys
