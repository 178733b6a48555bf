"""Results made with asv_ssl's toolkit-sign embeddings (the VPC 2026 toolkit's +-1 vectors, issue 36) are labelled
where the user reads them: results_vpc.txt's ASV block title of that attacker and a line of report.md's VoicePrivacy
section; attackers with the default l2 embeddings are not."""

from __future__ import annotations

from types import SimpleNamespace

from vpeval_vpc_report.report import VpcReport
from vpeval_vpc_report.results import embedding_notes, vpc_results_text


def attacker(label: str, **params):
    return SimpleNamespace(label=label, plugin=SimpleNamespace(params=params))


def rows() -> list[dict]:
    out = []
    for name, scenario in (("asv_ssl", "original"), ("asv_anon", "anonymized"), ("asv_l2", "original")):
        for protocol in ("O-O", "A-A"):
            out.append(
                {
                    "metric": "eer", "attacker": name, "scenario": scenario, "protocol": protocol,
                    "anonymizer": "submission", "dataset": "libri_dev", "gender": "all", "value": 12.5,
                }
            )  # fmt: skip
    return out


EXP = SimpleNamespace(
    attackers=[
        attacker("asv_ssl", source="exp/asv_ssl", embedding_normalization="toolkit-sign"),
        attacker("asv_anon", source="exp/asv_ssl", embedding_normalization="toolkit-sign"),
        attacker("asv_l2", source="exp/asv_ssl", embedding_normalization="l2"),
    ],
    anonymizers=[],
    corpus=SimpleNamespace(params={"challenge": "2026-track1"}),
    experiment=SimpleNamespace(report=SimpleNamespace(preset="vpc")),
)


def test_toolkit_sign_attackers_are_named_in_results_vpc_and_report():
    notes = embedding_notes(EXP)
    assert set(notes) == {"asv_ssl", "asv_anon"}
    titles = [line for line in vpc_results_text(rows(), notes).splitlines() if line.startswith("---- ASV")]
    assert len(titles) == 3
    assert [("toolkit-sign" in t) for t in titles] == [True, True, False]
    sections = VpcReport().run_outputs(EXP, rows())
    (block,) = sections.tables
    assert "- `asv_ssl`: embedding_normalization toolkit-sign" in block and "`asv_l2`" not in block
    files = dict(sections.files)
    assert "toolkit-sign" in files["results_vpc.txt"]
