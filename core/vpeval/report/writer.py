"""The run folder: results.json, results.csv, report.md, resolved.yaml, trial lists and score files."""

from __future__ import annotations

import csv
import io
import json
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from vpeval import __version__
from vpeval.api import ReportSections
from vpeval.atomic import write_json_atomic, write_text_atomic
from vpeval.device import machine
from vpeval.names import file_name
from vpeval.report.doubts import drops_and_doubts, logged_warnings
from vpeval.report.extensions import declared_sections, run_outputs
from vpeval.report.figures import FIGURES_DIR, SCORE_INDEX, Figure, report_figures
from vpeval.report.provenance import RunInfo
from vpeval.report.tables import attack_tables, speech_tables
from vpeval.report.training import curve_entries, training_markdown, upper_bound_reasons
from vpeval.report.worst_case import worst_case_tables
from vpeval.safepath import output_target

PROVENANCE = "provenance.md"  # the run's versions, models and stage timings, linked from report.md
CSV_FIELDS = [
    "anonymizer",
    "attacker",
    "scenario",
    "protocol",
    "n",
    "metric",
    "metric_plugin",
    "gender",
    "value",
    "ci_low",
    "ci_high",
    "unit",
    "details",
]


def write_outputs(exp, result, plan, score_sets) -> None:
    folder: Path = result.folder
    resolved = exp.to_dict()
    write_text_atomic(folder / "resolved.yaml", yaml.safe_dump(resolved, sort_keys=False))
    from vpeval.data.kaldi import write_data_dir

    # Kaldi data folders of the anonymized evaluation speech, as the VoicePrivacy toolkits read them.
    for label, corpus in result.anonymized.items():
        write_data_dir(corpus, folder / "data" / file_name(f"evaluation_{label}"))
    write_data_dir(plan.evaluation, folder / "data" / "evaluation_original")
    index = []
    for s in score_sets:
        name = file_name(f"{s.anonymizer}__{s.attacker}__{s.protocol}__N{s.n}") + ".scores"
        write_text_atomic(folder / "scores" / name, kaldi_scores_text(s.scores))
        index.append(
            {
                "file": name,
                "anonymizer": s.anonymizer,
                "attacker": s.attacker,
                "scenario": s.scenario,
                "protocol": s.protocol,
                "n": s.n,
            }
        )
    if index:  # which file holds which scores, for figures and other tools (names are sanitised)
        write_json_atomic(folder / "scores" / SCORE_INDEX, index)
    payload = {
        "experiment": exp.experiment.name,
        "seed": exp.experiment.seed,
        "vpeval_version": __version__,
        "machine": machine(),  # the CPU and the kernel pins: results' last bits follow the kernels they ran on
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "corpus": {
            "fingerprint": plan.evaluation.fingerprint or None,
            "evaluation_speakers": len(plan.evaluation.speakers),
            "train_speakers": len(plan.train.speakers),
        },
        "trials": {str(n): len(t) for n, t in sorted(plan.trial_lists.items())},
        "plan_notes": list(plan.notes),
        # N -> (trials without a gender label, trials): they count in pooled figures, in no f/m one nor their average
        "unlabelled_trials": {
            str(n): [sum(not t.gender for t in tl.trials), len(tl)] for n, tl in plan.trial_lists.items()
        },
        "skipped_audio": [{"utterance": u, "path": p, "reason": r} for u, p, r in result.skipped_audio],
        "rows": result.rows,
        "training": curve_entries(result.training),
        "pretrained": pretrained_attackers(exp),
    }
    payload["log_warnings"] = logged_warnings(folder / "run.log")
    payload["drops_and_doubts"] = drops_and_doubts(payload)
    figures = report_figures(folder, result.rows)
    info = RunInfo.from_run(exp.to_dict(), payload)
    paper = declared_sections(exp.experiment.report, result.rows, folder / FIGURES_DIR, info.caption)
    if paper.findings:  # machine-readable verdicts beside the rows
        payload["findings"] = paper.findings
    write_json_atomic(folder / "results.json", payload)
    write_json_atomic(folder / "timings.json", {"seconds": result.timings, "computed": result.executed})
    write_text_atomic(folder / "results.csv", rows_csv(result.rows))
    outputs = run_outputs(exp, result.rows)
    for name, text in outputs.files:  # e.g. a challenge toolkit's own results files, for its parsers
        write_text_atomic(folder / name, text)
    markdown = report_markdown(exp, result, payload, info, figures, paper, outputs.tables)
    write_text_atomic(folder / "report.md", markdown)
    write_text_atomic(folder / PROVENANCE, provenance_markdown(exp, result, payload, info))


def pretrained_attackers(exp) -> dict[str, str]:
    """Label -> what its weights were trained on ("" when the plugin does not say), of attackers that never train."""
    from vpeval.registry import get_plugin_manager

    classes = {a.label: get_plugin_manager().get("attacker", a.plugin.use) for a in exp.attackers}
    return {label: getattr(cls, "pretrained_on", "") for label, cls in classes.items() if not cls.needs_training}


def kaldi_scores_text(scores) -> str:
    genders = scores.genders if scores.genders is not None else [""] * len(scores)
    lines = []
    for e, t, v, target, g in zip(scores.enroll_ids, scores.test_ids, scores.scores, scores.targets, genders):
        lines.append(f"{e} {t} {v:.6f} {'target' if target else 'nontarget'}" + (f" {g}" if g else ""))
    return "\n".join(lines) + "\n"


def rows_csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for r in rows:
        writer.writerow({**r, "details": json.dumps(r.get("details") or {}, sort_keys=True, default=str)})
    return buffer.getvalue()


def report_markdown(
    exp,
    result,
    payload: dict[str, Any],
    info: RunInfo,
    figures: list[Figure] = (),
    paper: ReportSections | None = None,
    plugin_blocks: list[str] = (),
) -> str:
    """Results and warnings first: what was run (its one caption), drops and doubts, the worst case, the
    experiment's findings and paper tables, every table, training curves, figures. Timings and provenance
    are in PROVENANCE (provenance_markdown)."""
    e = exp.experiment
    lines = [f"# {e.name}", "", info.caption(anonymizers=list(info.anonymizers), attackers=list(info.attackers)), ""]
    lines.append(
        f"Seed {e.seed}; {payload['corpus']['train_speakers']} attacker-train speakers. Protocols: O-O original "
        "enrollment and trials (the reference); O-A original enrollment, anonymized trials; A-A both anonymized. "
        "Brackets: 95 % speaker-level bootstrap confidence intervals; (f, m): the female and male values of an "
        f"average. Every result: results.csv; timings and provenance: [{PROVENANCE}]({PROVENANCE})."
    )
    if payload.get("machine"):  # not in runs from before it was recorded
        kernels = ", ".join(f"{k}={v}" if v else f"{k} unset" for k, v in payload["machine"]["kernels"].items())
        lines[-1] += f" Computed on {payload['machine']['cpu']}; kernels {kernels} (unset: the library chose by CPU)."
    lines += ["", "## Drops and doubts", ""] + [f"- {line}" for line in payload["drops_and_doubts"]]
    marks = upper_bound_reasons(payload["training"], result.rows)
    worst = worst_case_tables(result.rows, marks=marks)
    if worst:
        lines += ["", "## Worst case at a glance", ""] + [t + "\n" for t in worst]
    if paper is not None and paper.findings:
        lines += ["", "## Findings", "", "Each finding of the experiment's `report:` section, checked on this run.", ""]
        lines += [f + "\n" for f in paper.findings_markdown]
    if paper is not None and paper.tables:
        lines += ["", "## Paper tables", ""] + [t + "\n" for t in paper.tables]
    lines += [line for block in plugin_blocks for line in ("", block)]  # each with its own heading
    pretrained = set(payload.get("pretrained") or {})
    attack = attack_tables(result.rows, marks=marks, pretrained=pretrained)
    if attack:
        lines += ["", "## Privacy (attacker) metrics", ""] + [t + "\n" for t in attack]
    speech = speech_tables(result.rows)
    if speech:
        lines += ["", "## Utility and speech metrics", ""] + [t + "\n" for t in speech]
    if payload["training"]:
        lines += [
            "",
            "## Training curves",
            "",
            "Each trained attacker's epochs, left to right, as it reported them; bold: the epoch it kept.",
        ]
        lines += [""] + [t + "\n" for t in training_markdown(payload["training"])]
    if paper is not None and (paper.figures or paper.notes):
        lines += ["", "## Paper figures", ""] + [figure_markdown(f, result.folder) for f in paper.figures]
        lines += [f"- {note}" for note in paper.notes]
    if figures:
        lines += ["", "## Figures", ""] + [figure_markdown(f, result.folder) for f in figures]
    out, captions, fenced = [], set(), False
    for line in "\n".join(lines).split("\n"):  # each caption once: a declared table's may repeat one
        fenced ^= line.startswith("```")
        if (line.startswith("*Data:") and line in captions) or (not fenced and not line and out and not out[-1]):
            continue  # and one blank line between blocks, outside code blocks
        captions.add(line)
        out.append(line)
    return "\n".join(out) + "\n"


def provenance_markdown(exp, result, payload: dict[str, Any], info: RunInfo) -> str:
    """PROVENANCE: what produced the run (versions, corpus fingerprint, each model) and how long each stage took."""
    lines = [f"# {exp.experiment.name}: provenance and timings", "", "The results are in [report.md](report.md)."]
    lines += [
        "",
        f"vpeval {payload['vpeval_version']}, finished {payload['finished']}; seed {payload['seed']}; corpus "
        f"fingerprint {payload['corpus']['fingerprint']}; the experiment as run: resolved.yaml; trial lists: data/.",
        "",
        "| model | what |",
        "|---|---|",
    ]
    lines += [f"| {label} | {what} |" for label, what in {**info.anonymizers, **info.attackers}.items()]
    lines += ["", "## Stage timings (s)", "", "| stage | seconds |", "|---|---|"]
    lines += [f"| {k} | {v:.1f} |" for k, v in result.timings.items()]
    return "\n".join(lines) + "\n"


def figure_markdown(figure: Figure, folder: Path) -> str:
    """One list item: the title, a link to the PDF, and the figure embedded by its path relative to report.md
    (the report's caption says what produced it)."""
    png, pdf = figure.png.relative_to(folder).as_posix(), figure.pdf.relative_to(folder).as_posix()
    note = f" Kept: {figure.note}." if figure.note else ""
    return f"- **{figure.title}** ([PDF]({pdf})).{note} ![{figure.title}]({png})"


def combined_report(run_folders: list[Path]) -> str:
    """One markdown document with the tables of several runs side by side (a `run` column)."""
    from vpeval.report.runfolder import load_run

    rows, pretrained, doubts = [], set(), ["## Drops and doubts", ""]
    for folder in run_folders:
        run = load_run(folder)
        rows += [{**r, "run": run.name} for r in run.rows]
        pretrained |= set(run.results.get("pretrained") or {})  # runs before round four say nothing: none
        doubts += [f"- {run.name}: {line}" for line in run.results.get("drops_and_doubts") or ["not recorded."]]
    parts = [f"# Results of {len(run_folders)} runs", "", *doubts, ""]
    parts += [t + "\n" for t in attack_tables(rows, extra_key="run", pretrained=pretrained)]
    parts += [t + "\n" for t in speech_tables(rows, extra_key="run")]
    return "\n".join(parts)


def check_report_target(path: Path, overwrite: bool = False) -> Path:
    """Refuse an --output that would destroy a file, or that cannot be written, before any work is done;
    the file that will be written (a link's target: vpeval.safepath.output_target).

    An existing file is the user's until they say otherwise (`--overwrite`), even one an earlier
    `vpeval report` wrote: a report is often edited after it is written, and vpeval cannot tell.
    """
    return output_target(path, overwrite)


def write_report_file(path: Path, text: str, overwrite: bool = False) -> None:
    """Write `text` to `path` atomically: a temporary file beside it, renamed into place when complete,
    so a full disk or a Ctrl-C mid-write leaves the old file (or none), never half of one."""
    path = check_report_target(path, overwrite)  # through a link, so the link keeps leading to the report
    # os.open rather than mkstemp: the file gets the usual permissions (umask), not mkstemp's 0600.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename in (None, str(tmp)):  # name the file the user asked for
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
