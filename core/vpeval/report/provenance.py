"""What produced a table or figure: the data, the models, the scenario and the protocol, in one caption line.

Built from what a run folder records (resolved.yaml and results.json), so report.md written by a run
and `vpeval report` on an old folder say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCENARIOS = {
    "original": "lazy-informed: trained on original speech",
    "anonymized": "semi-informed: trained on anonymized speech",
}


@dataclass
class RunInfo:
    name: str
    data: str  # one phrase: corpus, speakers, trials per N
    anonymizers: dict[str, str] = field(default_factory=dict)  # label -> chain of plugins
    attackers: dict[str, str] = field(default_factory=dict)  # label -> plugin, frontend, training scenario

    @classmethod
    def from_run(cls, resolved: dict[str, Any], payload: dict[str, Any]) -> RunInfo:
        corpus = (resolved.get("data") or {}).get("corpus") or {}
        counts = payload.get("corpus") or {}
        trials = ", ".join(f"{count} at N = {n}" for n, count in (payload.get("trials") or {}).items())
        data = (
            f"corpus `{corpus.get('use', '?')}` ({corpus.get('distribution', '?')} {corpus.get('version', '')}".rstrip()
            + f"), {counts.get('evaluation_speakers', '?')} evaluation speakers, trials {trials or 'none'}"
        )
        anonymizers = {
            a["label"]: " then ".join(f"`{s['use']}`" for s in a.get("chain", []))
            + f", {a.get('level', 'utterance')} level"
            for a in resolved.get("anonymizers") or []
        }
        attackers, pretrained = {}, payload.get("pretrained") or {}  # label -> its weights' training data, if known
        for a in resolved.get("attackers") or []:
            frontend = f" on `{a['frontend']['use']}` tokens" if a.get("frontend") else ""
            trained = SCENARIOS.get(a.get("train_on"), "trained on " + str(a.get("train_on")))
            if a["label"] in pretrained:  # it never trained: what it was trained on is its weights' data
                trained = "pretrained" + (
                    f": {pretrained[a['label']]}" if pretrained[a["label"]] else ", not trained here"
                )
            attackers[a["label"]] = f"`{a['use']}`{frontend}, {trained}"
        return cls(str(payload.get("experiment") or resolved.get("name") or "run"), data, anonymizers, attackers)

    @classmethod
    def from_folder(cls, folder: Path) -> RunInfo:
        from vpeval.report.runfolder import load_run

        run = load_run(folder)
        return cls.from_run(run.resolved, run.results)

    def caption(self, *, anonymizers=(), attackers=(), protocols=(), n=(), metric: str = "") -> str:
        """One italic line: which data, models, scenario and protocol produced the table or figure above it."""
        parts = [f"Data: {self.data}"]
        anonymizers = [a for a in dict.fromkeys(anonymizers) if a]
        if anonymizers:
            parts.append(
                "anonymizers: "
                + "; ".join(f"{a} ({self.anonymizers[a]})" if a in self.anonymizers else a for a in anonymizers)
            )
        attackers = [a for a in dict.fromkeys(attackers) if a]
        if attackers:
            parts.append(
                "attackers: " + "; ".join(f"{a} ({self.attackers[a]})" if a in self.attackers else a for a in attackers)
            )
        protocols = [p for p in dict.fromkeys(protocols) if p]
        if protocols:
            parts.append("protocol " + ", ".join(protocols))
        ns = sorted({int(v) for v in n if v is not None})
        if ns:
            parts.append("N = " + ", ".join(str(v) for v in ns) + " enrollment utterances")
        if metric:
            parts.append(f"metric {metric}")
        return "*" + "; ".join(parts).replace("*", "\\*") + ".*"
