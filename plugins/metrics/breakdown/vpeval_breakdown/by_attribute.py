"""Any metric per group of any speaker attribute.

`by-attribute` breaks down a score metric (EER by default): a group's trials are those whose enrollment and
test speakers both belong to it (for gender, VoicePrivacy's same-gender trials). `by-attribute-similarity`
breaks down a similarity metric (identification by default): a group's probes are the test utterances of
its speakers, ranked against the whole enrolled population. The metric itself is reached through the core
(`context.get("metric", ...)`), so every figure is the one that metric reports, with its own interval.

A group with fewer than `min_speakers` speakers gets no figure: its row has no value and says why. Each row
carries the group in the `gender` coordinate as `attribute=group` (the coordinate that held the f/m
breakdown), so headline summaries, which read `avg` or `all`, leave these rows out.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import Field

from vpeval.api import Metric, MetricInputs, Params, PluginRef, SimilarityMatrix
from vpeval.errors import ConfigError, MetricInputError
from vpeval.types import MetricResult, Scores
from vpeval_breakdown.attributes import Attributes, in_bands, read_kaldi_folder, read_manifest_columns, read_spk2


class AttributeParams(Params):
    attributes: list[str] = Field(
        ["gender"], min_length=1, description="The speaker attributes to break down by (gender, age, accent, ...)."
    )
    kaldi: str | None = Field(None, description="A Kaldi data folder whose spk2<attribute> files give attributes.")
    files: dict[str, str] = Field({}, description="attribute -> a 'speaker value' file (spk2age, ...).")
    manifest: str | None = Field(
        None, description="A CSV/TSV/JSONL manifest with a speaker column and one column per attribute."
    )
    corpus: Annotated[dict[str, Any] | None, PluginRef("corpus")] = Field(
        None,
        description="{use, params} of a corpus source (the experiment's own) whose declared speaker attributes "
        "(speaker_attributes(): synth with speaker_groups gives age and accent) give attributes.",
    )
    bands: dict[str, list[Annotated[float, Field(ge=-1e9, le=1e9)]]] = Field(
        {}, description="attribute -> increasing band edges, for numeric attributes such as age."
    )
    min_speakers: int = Field(
        5, ge=1, le=100_000, description="A group with fewer speakers gets no figure, only a reason."
    )


def _gender_from_scores(scores: Scores | None) -> dict[str, str]:
    if scores is None or scores.genders is None or scores.enroll_speakers is None:
        return {}
    return {str(s): str(g) for s, g in zip(scores.enroll_speakers, scores.genders, strict=True) if g in ("f", "m")}


class AttributeMetric(Metric):
    """Shared: reading the attributes, grouping speakers and labelling the rows."""

    inner_needs: ClassVar[str] = "scores"

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        named = [("kaldi", params.kaldi), ("manifest", params.manifest)]
        named += [(f"files.{name}", path) for name, path in params.files.items()]
        return [
            f"{cls.name}: {field} {path} does not exist; give the file or folder that holds the speaker attributes."
            for field, path in named
            if path and not Path(path).exists()
        ]

    def _inner(self) -> Metric:
        inner = getattr(self, "_inner_metric", None)
        if inner is not None:
            return inner
        inner = self._inner_metric = self.context.get("metric", self.params.metric, self.params.metric_params)
        if getattr(inner, "needs", None) != self.inner_needs:
            raise ConfigError(
                f"{self.name} breaks down metrics that read '{self.inner_needs}', but {self.params.metric} reads "
                f"'{inner.needs}'; use {'by-attribute-similarity' if inner.needs == 'similarity' else 'by-attribute'}."
            )
        return inner

    def _attributes(self, scores: Scores | None) -> Attributes:
        p = self.params
        found: Attributes = {}
        if p.kaldi:
            found.update(read_kaldi_folder(p.kaldi))
        for name, path in p.files.items():
            found[name] = read_spk2(path)
        if p.manifest:
            found.update(read_manifest_columns(p.manifest, [a for a in p.attributes if a not in found]))
        if p.corpus:
            spec = dict(p.corpus)
            declared = self.context.get("corpus", spec["use"], spec.get("params") or {}).speaker_attributes()
            found.update({a: values for a, values in declared.items() if a not in found})
        if "gender" not in found and _gender_from_scores(scores):
            found["gender"] = _gender_from_scores(scores)
        missing = [a for a in p.attributes if a not in found]
        if missing:
            raise ConfigError(
                f"{self.name}: no source gives the attribute '{missing[0]}'; give a spk2{missing[0]} file in `kaldi` "
                f"or `files`, a `manifest` with a '{missing[0]}' column or a `corpus` that declares it (found: "
                f"{', '.join(found) or 'none'})."
            )
        for name, edges in p.bands.items():
            if list(edges) != sorted(set(edges)) or not edges:
                raise ConfigError(f"{self.name}: the band edges of {name} must be increasing numbers, not {edges}.")
            if name in found:
                found[name] = in_bands(name, found[name], list(edges), f"the {name} attribute")
        return {a: found[a] for a in p.attributes}

    def _rows(self, attribute: str, group: str, results: list[MetricResult], info: dict[str, Any]):
        return [
            replace(r, gender=f"{attribute}={group}", details={**r.details, **info})
            for r in results
            if r.gender == "all"
        ]

    def _too_small(self, attribute: str, group: str, info: dict[str, Any]) -> list[MetricResult]:
        if info["speakers"] < self.params.min_speakers:
            reason = (
                f"{attribute}={group} has {info['speakers']} speaker(s), fewer than min_speakers "
                f"{self.params.min_speakers}: too few for a figure"
            )
        else:
            reason = f"{attribute}={group} has no target or no non-target trial among its own speakers"
        return [
            MetricResult(name, float("nan"), f"{attribute}={group}", details={**info, "reason": reason})
            for name in self._inner_names()
        ]

    def _inner_names(self) -> tuple[str, ...]:
        return type(self._inner()).result_names()


class ByAttribute(AttributeMetric):
    """A score metric (EER by default) per group of each speaker attribute."""

    name = "by-attribute"
    needs: ClassVar[str] = "scores"
    result_metrics = ("eer",)  # the default metric's; rows carry whatever the broken-down metric reports

    class Params(AttributeParams):
        metric: Annotated[str, PluginRef("metric", params="metric_params")] = "eer"
        metric_params: dict[str, Any] = {}

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        scores = inputs.scores
        if scores is None or scores.enroll_speakers is None or scores.test_speakers is None:
            raise MetricInputError(
                f"Metric {self.name} needs scores with the enrollment and test speaker of each trial."
            )
        if scores.targets.all() or not scores.targets.any():
            raise MetricInputError(f"Metric {self.name} needs both target and non-target trials.")
        inner = self._inner()
        enroll, test = np.asarray(scores.enroll_speakers).astype(str), np.asarray(scores.test_speakers).astype(str)
        out: list[MetricResult] = []
        for attribute, values in self._attributes(scores).items():
            enroll_group = np.array([values.get(s, "") for s in enroll])
            test_group = np.array([values.get(s, "") for s in test])
            unlabelled = sorted(set(enroll[enroll_group == ""]) | set(test[test_group == ""]))
            for group in sorted(set(enroll_group) - {""}):
                mask = (enroll_group == group) & (test_group == group)
                info = {
                    "attribute": attribute,
                    "group": group,
                    "speakers": len(set(enroll[mask])),
                    "trials": int(mask.sum()),
                    "targets": int(scores.targets[mask].sum()),
                    "speakers_unlabelled": len(unlabelled),
                    "trials_in_groups": "enrollment and test speaker both in the group",
                }
                if (
                    info["speakers"] < self.params.min_speakers
                    or info["targets"] == 0
                    or info["targets"] == info["trials"]
                ):
                    out += self._too_small(attribute, group, info)
                    continue
                part = replace(scores.select(mask), genders=None)  # the group itself, not its f/m split
                out += self._rows(
                    attribute, group, inner.compute(MetricInputs(scores=part, attributes=inputs.attributes)), info
                )
        return out


class ByAttributeSimilarity(AttributeMetric):
    """A similarity metric (identification by default) per group of each speaker attribute: the group's test
    utterances against the whole enrolled population."""

    name = "by-attribute-similarity"
    needs: ClassVar[str] = "similarity"
    inner_needs: ClassVar[str] = "similarity"
    result_metrics = ("top-1", "top-5", "top-10", "mean-rank", "srd-mean", "srd-max", "rank-spread")

    class Params(AttributeParams):
        metric: Annotated[str, PluginRef("metric", params="metric_params")] = "identification"
        metric_params: dict[str, Any] = {}

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        if not inputs.similarity:
            raise MetricInputError(f"Metric {self.name} needs similarity matrices, but none were given.")
        inner = self._inner()
        any_matrix = next(iter(inputs.similarity.values()))
        probes = np.asarray(any_matrix.col_speakers).astype(str)
        out: list[MetricResult] = []
        for attribute, values in self._attributes(None).items():
            group_of = np.array([values.get(s, "") for s in probes])
            for group in sorted(set(group_of) - {""}):
                keep = group_of == group
                info = {
                    "attribute": attribute,
                    "group": group,
                    "speakers": len(set(probes[keep])),
                    "speakers_unlabelled": len(set(probes[group_of == ""])),
                    "ranked_against": "every enrolled speaker (details.population)",
                }
                if info["speakers"] < self.params.min_speakers:
                    out += self._too_small(attribute, group, info)
                    continue
                part = {p: _columns(m, keep) for p, m in inputs.similarity.items()}
                out += self._rows(
                    attribute, group, inner.compute(MetricInputs(similarity=part, attributes=inputs.attributes)), info
                )
        return out


def _columns(m: SimilarityMatrix, keep: np.ndarray) -> SimilarityMatrix:
    if len(m.col_speakers) != len(keep):
        raise MetricInputError("the similarity matrices of one run must share their test utterances.")
    return SimilarityMatrix(
        np.asarray(m.scores)[:, keep],
        m.row_speakers,
        np.asarray(m.col_speakers)[keep],
        m.row_ids,
        None if m.col_ids is None else np.asarray(m.col_ids)[keep],
    )
