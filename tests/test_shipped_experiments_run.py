"""Every shipped experiment (experiments/*.yaml) runs end to end and writes results.json and report.md.

Slow (`-m slow`; the default run skips them): each one runs `vpeval --experiment` in its own process,
one at a time, from the repository root (real-data paths such as ../shared/data/real are relative to it).
An experiment on the built-in corpus runs on its `tiny` preset (with speaker_groups, 12 speakers); one on
real data keeps its data. Where training would take too long on 2 CPU cores the experiment is scaled down
through its parameters only,
by the rules in `scaled` (applied to every file, so a new shipped experiment is covered without an entry
here): epochs to 1, repeats to 2; on the tiny corpus also speaker counts and N values it cannot hold, to
what it can (N in the report sections too: a finding "N = 15 below N = 5" then compares N = 2 with
itself, which may not hold, but it runs), and multiutt's base_share to 1. Nothing else of the experiment
changes: its plugins, protocols, metrics and report sections run. precomputed-real first writes its SoX
speech with scripts/sox_anonymize_vctk.py (skipped without the sox tool).
    OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q -p no:xdist -m slow tests/test_shipped_experiments_run.py -k demo
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = sorted((ROOT / "experiments").glob("*.yaml"))
TINY = {"preset": "tiny"}
TINY_SPEAKERS, TINY_UTTERANCES = 6, 6  # the synth `tiny` preset
GROUP_SPEAKERS = 12  # a tiny corpus with speaker_groups (privacy-beyond-eer): every age band, both genders
RUN_LIMIT_S = 3 * 3600  # a run that takes longer has hung

# keys whose integer values count training passes: at most 1 here
EPOCH_KEYS = ("epochs",)  # also every key ending in "_epochs"
REPEAT_KEYS = ("repeats",)
TINY_PARAMS = {"base_share": 1.0}  # on the tiny corpus only (see `scaled`)


def uses_synth(spec: Any) -> bool:
    return isinstance(spec, dict) and spec.get("use") == "synth"


def tiny_corpus(spec: dict) -> dict:
    """The tiny preset; a corpus's own seed (a train corpus drawn apart from the evaluation one) and speaker_groups
    (which breakdown metrics read) are kept."""
    params = spec.get("params") or {}
    kept = {k: params[k] for k in ("seed", "speaker_groups") if k in params}
    if params.get("speaker_groups"):  # a fusion holds out two training speakers: 6 leave it 1 to train on
        kept["speakers"] = min(params.get("speakers", GROUP_SPEAKERS), GROUP_SPEAKERS)
    return {**spec, "params": {**TINY, **kept}}


def scaled_params(node: Any) -> Any:
    """Epochs to at most 1 and repeats to at most 2, and every nested synth corpus to tiny, anywhere."""
    if isinstance(node, list):
        return [scaled_params(v) for v in node]
    if not isinstance(node, dict):
        return node
    if uses_synth(node):
        return tiny_corpus(node)
    out = {}
    for key, value in node.items():
        if isinstance(value, int) and not isinstance(value, bool) and (key in EPOCH_KEYS or key.endswith("_epochs")):
            out[key] = min(value, 1)
        elif isinstance(value, int) and not isinstance(value, bool) and key in REPEAT_KEYS:
            out[key] = min(value, 2)
        else:
            out[key] = scaled_params(value)
    return out


def replaced(node: Any, values: dict[str, Any]) -> Any:
    """Every key of `values`, anywhere in the experiment, set to its value."""
    if isinstance(node, list):
        return [replaced(v, values) for v in node]
    if not isinstance(node, dict):
        return node
    return {k: values[k] if k in values else replaced(v, values) for k, v in node.items()}


def renamed_n(node: Any, mapping: dict[int, int]) -> Any:
    """Every `n: N` or `n: [N, ...]` of a report section with the N values mapped (lists deduplicated)."""
    if isinstance(node, list):
        return [renamed_n(v, mapping) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "n" and isinstance(value, int) and not isinstance(value, bool):
            out[key] = mapping.get(value, value)
        elif key == "n" and isinstance(value, list) and all(isinstance(v, int) for v in value):
            out[key] = list(dict.fromkeys(mapping.get(v, v) for v in value))
        else:
            out[key] = renamed_n(value, mapping)
    return out


def scaled(doc: dict) -> dict:
    """The experiment as this test runs it (see the module docstring)."""
    on_synth = uses_synth((doc.get("data") or {}).get("corpus"))
    doc = scaled_params(doc)
    data = dict(doc.get("data") or {})
    if on_synth:
        train = data.get("attacker_train_speakers")
        if isinstance(train, int) and not isinstance(train, bool) and train >= TINY_SPEAKERS - 2:
            data["attacker_train_speakers"] = TINY_SPEAKERS // 2  # 20 of 32 -> 3 of 6
        # multiutt's two-stage fusions train encoders and fusion layers on disjoint shares of the training
        # speakers, at least 2 each: 3 tiny training speakers cannot be split, so both train on all 3
        doc = replaced(doc, TINY_PARAMS)
        if isinstance(doc.get("enroll_utterances"), list):
            # an evaluation speaker's 6 utterances hold N-utterance sides up to N = 2 (vpeval says so for
            # N = 3): the N values that do not fit become 2, so N = 1 is still compared with an N above it
            wanted, largest = doc["enroll_utterances"], TINY_UTTERANCES // 3
            fits = [n for n in wanted if n <= largest]
            doc["enroll_utterances"] = fits + ([largest] if len(fits) < len(wanted) and largest not in fits else [])
            if "report" in doc:  # the report's tables, curves and findings name N values: the same ones
                doc["report"] = renamed_n(doc["report"], {n: largest for n in wanted if n > largest})
    doc["data"] = data
    doc.pop("output", None)  # the run folder is the test's
    return doc


def vpeval_run(experiment: Path, output: Path, cache: Path, log: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    command = [
        sys.executable,
        "-m",
        "vpeval",
        "--experiment",
        str(experiment),
        "--output",
        str(output),
        "--cache",
        str(cache),
        "-q",
    ]
    with log.open("w") as sink:
        return subprocess.run(
            command, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT, timeout=RUN_LIMIT_S, check=False
        )


def required_variables(doc: dict) -> list[str]:
    """The file's variables without a default (`VPC_ROOT: null`): it runs on a user's folders only, so
    tests/test_vpc_recipes.py runs it over a tree it writes (the VPC recipes)."""
    return [name for name, value in (doc.get("variables") or {}).items() if value is None]


def real_data_missing(doc: dict) -> str | None:
    """Why an experiment on real data cannot run here (its data or the tool that makes it is absent)."""
    text = json.dumps(doc)
    if "../shared/data/real" in text and not (ROOT / ".." / "shared" / "data" / "real").is_dir():
        return "../shared/data/real is not there"
    return None


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory) -> Path:
    """One cache for all the runs (the tiny corpus, pretrained models' embeddings, transcripts are shared)."""
    return Path(os.environ.get("VPEVAL_CACHE") or tmp_path_factory.mktemp("shipped") / "cache")


def prepare_precomputed_real(doc: dict, tmp_path: Path) -> dict:
    """precomputed-real reads speech anonymized outside vpeval: write it with the shipped SoX recipe into
    tmp_path and point the experiment's paths there."""
    if shutil.which("sox") is None:
        pytest.skip("precomputed-real needs the sox tool to write its anonymized speech (apt-get install sox)")
    recipe = tmp_path / "vctk-sox-recipe"
    done = subprocess.run(
        [sys.executable, "scripts/sox_anonymize_vctk.py", "--out", str(recipe)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(json.dumps(doc).replace("runs/vctk-sox-recipe", str(recipe)))


@pytest.mark.slow
@pytest.mark.parametrize("path", EXPERIMENTS, ids=[p.stem for p in EXPERIMENTS])
def test_shipped_experiment_runs_end_to_end(path: Path, tmp_path: Path, shared_cache: Path):
    doc = scaled(yaml.safe_load(path.read_text()))
    if required := required_variables(doc):
        pytest.skip(f"{path.name} needs --var {', '.join(required)} (tests/test_vpc_recipes.py runs it)")
    if (why := real_data_missing(doc)) is not None:
        pytest.skip(why)
    if "runs/vctk-sox-recipe" in json.dumps(doc):
        doc = prepare_precomputed_real(doc, tmp_path)
    experiment = tmp_path / path.name
    experiment.write_text(yaml.safe_dump(doc, sort_keys=False))
    output, log = tmp_path / "run", tmp_path / "vpeval.log"
    done = vpeval_run(experiment, output, shared_cache, log)
    assert done.returncode == 0, f"{path.name} failed (exit {done.returncode}):\n{log.read_text()[-4000:]}"
    results = json.loads((output / "results.json").read_text())
    assert results.get("rows"), f"{path.name}: results.json has no result rows"
    assert (output / "report.md").read_text().strip(), f"{path.name}: report.md is empty"
