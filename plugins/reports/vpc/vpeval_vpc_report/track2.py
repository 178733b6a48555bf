"""The VoicePrivacy 2026 Track 2 results files, as the toolkit (Voice-Privacy-Challenge-2026 e6810a4) leaves them.

Its 02_run_track2.sh runs eval_pre.yaml (asv_ssl, Whisper WER, emotion2vec+ UAR on every language) and
eval_post_<lang>.yaml per language (the semi-informed attacker), then:

- `exp/results_summary/eval_orig<suffix>/results_orig.txt`: save_result_summary's SER block (UAR and per-emotion
  accuracies per emodata split, a two-row pandas header), ASV_eval block (asv_ssl's A-A rows of the mixed
  trials: a Track 2 file with a suffix keeps those) and ASR block (evaluate_asr's rows: every set, then its
  anonymized copy);
- `exp/results_summary/track2/eval_anon_<epochs>_<lang><suffix>/results_anon.txt`: the ASV_eval^anon block;
- `exp/results_summary/track2/result_for_rank<suffix>`: results_orig.txt, an empty line, then each language's
  results_anon.txt and an empty line, languages in the order en de es fr;
- `exp/results_summary/track2/{asr,ser,asv}_results<suffix>.csv`: copies of the pandas CSVs evaluate_asr,
  evaluate_ser and evaluate_asv write (their index column; the SER file's two header rows).

vpeval writes the same files under its run folder's results_summary/, from the run's rows, with the toolkit's
row numbers, order, rounding (3 decimals) and pandas layout, and no pandas. The numbers are vpeval's: a set the
run did not evaluate has no row.
"""

from __future__ import annotations

from typing import Any

from vpeval_vpc_report.results import SIDES, _pandas_string
from vpeval_vpc_report.results import two_level as _two_level

LANGUAGES = ("en", "de", "fr", "es")  # eval_pre.yaml's dataset_name order (and evaluate_asv's rows)
RANK_ORDER = ("en", "de", "es", "fr")  # 02_run_track2.sh's `for lang in en de es fr`
SPLITS = ("dev", "test")
TRACK_SETS = tuple(f"{lang}_{split}" for lang in LANGUAGES for split in SPLITS)
ASV_HEADER = ["dataset", "split", "gender", "enrollment", "trial", "EER"]


def track2_summaries(exp, rows: list[dict[str, Any]], time: str) -> dict[str, str]:
    """Path under the run folder -> text, per `precomputed` submission with a `vpc` suffix."""
    out: dict[str, str] = {}
    for anon in exp.anonymizers:
        suffix = (anon.steps[0].params.get("vpc") or {}).get("suffix")
        if not suffix:
            continue
        mine = [r for r in rows if r.get("anonymizer") in (anon.label, "original", None)]
        eer = [r for r in mine if r.get("metric") == "eer" and r.get("dataset") in TRACK_SETS and r["gender"] == "all"]
        eer = [r for r in eer if r.get("anonymizer") == anon.label and r.get("n", 1) == 1]
        pre = [r for r in eer if r.get("scenario") == "original"]
        ser, ser_csv = _ser(mine, anon.label)
        asr, asr_csv = _asr(mine, anon.label)
        orig = f"---- Time: {time} ----\n"
        orig += f"\n---- SER results ----\n{ser}\n" if ser else ""
        orig += f"\n---- ASV_eval results ----\n{_asv_table(pre, keep='A-A')}\n" if pre else ""
        orig += f"\n---- ASR results ----\n{asr}\n" if asr else ""
        out[f"results_summary/eval_orig{suffix}/results_orig.txt"] = orig
        rank = orig + "\n"
        for lang in RANK_ORDER:
            post = _post(exp, eer, lang)
            if post is not None:
                epochs, table = post
                text = f"---- Time: {time} ----\n\n---- ASV_eval^anon results ----\n{table}\n"
                out[f"results_summary/track2/eval_anon_{epochs}_{lang}{suffix}/results_anon.txt"] = text
                rank += text + "\n"
        out[f"results_summary/track2/result_for_rank{suffix}"] = rank
        for name, text in (("asr", asr_csv), ("ser", ser_csv), ("asv", _asv_csv(pre))):
            if text:
                out[f"results_summary/track2/{name}_results{suffix}.csv"] = text
    return out


def _dataset_split(name: str) -> tuple[str, str]:
    """evaluate_asv / evaluate_asr's `dataset`, `split`: de_dev_trials_mixed -> (de, dev)."""
    parts = name.split("_")
    return parts[0], parts[1] if len(parts) > 1 else "_"


def _asv_rows(eer: list[dict[str, Any]]) -> list[tuple[int, list[Any]]]:
    """evaluate_asv's rows in its order (each set of the run in eval_pre's order, then oo, oa, aa), numbered."""
    sets = [d for d in TRACK_SETS if any(r["dataset"] == d for r in eer)]
    out = []
    for i, dataset in enumerate(sets):
        for k, protocol in enumerate(SIDES):
            found = [r for r in eer if (r["dataset"], r["protocol"]) == (dataset, protocol)]
            if found and found[0].get("value") is not None:
                out.append(
                    (3 * i + k, [*_dataset_split(dataset), "mixed", *SIDES[protocol], round(found[0]["value"], 3)])
                )
    return out


def _asv_table(eer: list[dict[str, Any]], keep: str) -> str:
    """save_result_summary's ASV block: the `keep` rows, sorted stably by dataset and split."""
    kept = [(i, row) for i, row in _asv_rows(eer) if (row[3], row[4]) == SIDES[keep]]
    kept.sort(key=lambda item: (item[1][0], item[1][1]))
    return _pandas_string(ASV_HEADER, [row for _, row in kept], [str(i) for i, _ in kept])


def _asv_csv(eer: list[dict[str, Any]]) -> str:
    """exp/asv_ssl/results<suffix>.csv: every row of the lazy-informed attacker, as DataFrame.to_csv writes it."""
    rows = _asv_rows(eer)
    return _csv([""] + ASV_HEADER, [[str(i), *row] for i, row in rows]) if rows else ""


def _post(exp, eer: list[dict[str, Any]], lang: str) -> tuple[Any, str] | None:
    """eval_post_<lang>.yaml's ASV_eval^anon block: the semi-informed attacker's A-A rows on the language's sets
    (numbered as its own evaluate_asv numbers them: <lang>_dev 0-2, <lang>_test 3-5), and its epochs."""
    semi = [r for r in eer if r.get("scenario") == "anonymized" and r["dataset"].startswith(f"{lang}_")]
    attackers = list(dict.fromkeys(r["attacker"] for r in semi))
    if not attackers:
        return None
    # Several semi-informed attackers on one language: the one named for it (asv_anon_de), else the first.
    label = next((a for a in attackers if a.endswith(f"_{lang}")), attackers[0])
    spec = next((a for a in exp.attackers if a.label == label), None)
    epochs = spec.plugin.params.get("epochs") if spec is not None else None
    return epochs, _asv_table([r for r in semi if r["attacker"] == label], keep="A-A")


def _asr(rows: list[dict[str, Any]], label: str) -> tuple[str, str]:
    """evaluate_asr's rows (each set's trial speech in eval_pre's order, then the anonymized copies), as the
    ASR block (sorted stably by dataset and split) and as results<suffix>.csv."""
    wer = [r for r in rows if r.get("metric") == "wer" and (r.get("details") or {}).get("dataset")]
    # The toolkit scores <set>_asr, the set's trial folder (combine_asr_data of _trials_mixed): that row first.
    wer.sort(key=lambda r: not r["details"]["dataset"].endswith("_trials_mixed"))
    body: list[list[Any]] = []
    for speech in ("original", label):
        for dataset in TRACK_SETS:
            key = tuple(dataset.split("_"))
            found = [r for r in wer if r["anonymizer"] == speech and _dataset_split(r["details"]["dataset"]) == key]
            if found and found[0].get("value") is not None:
                body.append([*key, "original" if speech == "original" else "anon", round(found[0]["value"], 3)])
    numbered = list(enumerate(body))
    if not numbered:
        return "", ""
    csv = _csv(["", "dataset", "split", "asr", "WER"], [[str(n), *row] for n, row in numbered])
    numbered.sort(key=lambda item: (item[1][0], item[1][1]))
    table = _pandas_string(["dataset", "split", "asr", "WER"], [r for _, r in numbered], [str(n) for n, _ in numbered])
    return table, csv


def _ser(rows: list[dict[str, Any]], label: str) -> tuple[str, str]:
    """evaluate_ser's mean table (groupby dataset, split, ser: anon before original) of the `uar` rows per emodata
    set, as the SER block and as results<suffix>.csv; UAR and ACC_<emotion> rounded to 3 decimals as there."""
    uar = [r for r in rows if r.get("metric") == "uar" and (r.get("details") or {}).get("dataset")]
    found = []
    for speech in ("original", label):  # evaluate_ser's test sets: the originals, then their copies
        for r in uar:
            name = r["details"]["dataset"]
            if r["anonymizer"] == speech and r.get("value") is not None:
                parts = name.split("_")
                split = parts[-1] if len(parts) >= 3 and parts[-1] in SPLITS else (parts[1] if len(parts) > 1 else "_")
                found.append((parts[0], split, "original" if speech == "original" else "anon", r))
    if not found:
        return "", ""
    emotions = list(dict.fromkeys(e for *_, r in found for e in (r["details"].get("per_class_accuracy") or {})))
    header = ["dataset", "split", "ser", "UAR", *(f"ACC_{e}" for e in emotions)]
    body = []
    for dataset, split, ser, r in sorted(found, key=lambda f: f[:3]):
        accuracy = r["details"].get("per_class_accuracy") or {}
        cells = [round(accuracy[e], 3) if e in accuracy else float("nan") for e in emotions]
        body.append([dataset, split, ser, round(r["value"], 3), *cells])
    index = [str(n) for n in range(len(body))]
    table = _two_level(header, body, index)
    second = [""] * 3 + ["mean"] * (len(header) - 3)
    csv = _csv([""] + header, [[i, *row] for i, row in zip(index, body)], second=[""] + second)
    return table, csv


def _csv(header: list[str], rows: list[list[Any]], second: list[str] | None = None) -> str:
    """DataFrame.to_csv(): comma-separated, floats as Python writes them (repr), NaN empty, '\\n' line ends."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return "" if value != value else repr(value)
        return str(value)

    lines = [",".join(header)] + ([",".join(second)] if second else [])
    lines += [",".join(cell(v) for v in row) for row in rows]
    return "\n".join(lines) + "\n"
