"""scripts/vpc2026_track2.py: every Track 2 language in one command (validate all, one run per language, the merge),
on the Track 2 tree of tests/vpc2026_track2_tree.py."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import time
from pathlib import Path

import pytest
from vpc2026_track2_tree import SUFFIX, build_track2_tree

ROOT = Path(__file__).resolve().parents[1]
FACTS = json.loads((Path(__file__).parent / "data" / "vpc2026_track2.json").read_text())
FAST = ["--var", "EPOCHS=1", "--var", "BATCH=4", "--var", "CROP=0.3"]  # speechbrain-train drops speech under a crop
# l2, not the recipe's toolkit-sign: on the tiny random networks toolkit-sign scores can all be equal (as in
# test_vpc2026_track2's German run), which eer refuses
L2 = ["--var", "ASV_EMBEDDINGS=l2"]


def _script():
    spec = importlib.util.spec_from_file_location("vpc2026_track2", ROOT / "scripts" / "vpc2026_track2.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _exit_status(script, argv: list[str]) -> int:
    with pytest.raises(SystemExit) as stop:
        script.main(argv)
    return stop.value.code


def test_the_script_carries_the_toolkit_values_per_language():
    script = _script()
    assert script.TOOLKIT_VALUES == {lang: (v["train"], v["epochs"]) for lang, v in FACTS["languages"].items()}
    # the default order is eval_pre.yaml's: en, de, fr, es
    assert script.languages(",".join(script.LANGUAGES)) == list(dict.fromkeys(s[:2] for s in FACTS["evaluated_sets"]))
    assert script.run_variables("fr", ["SUFFIX=_x"]) == [
        *("--var", "LANG=fr", "--var", "TRAIN=train_french", "--var", "EPOCHS=10", "--var", "SUFFIX=_x")
    ]
    assert "EPOCHS=10" not in script.run_variables("de", ["EPOCHS=1"])  # a given EPOCHS applies to every language


def test_bad_languages_and_per_language_variables_stop_before_anything_runs(tmp_path, capsys):
    script = _script()
    for langs, words in (("de,it", "it is not a Track 2 language"), ("de,de", "names de twice"), (",", "no language")):
        status = _exit_status(
            script, ["--var", f"VPC_ROOT={tmp_path}", "--langs", langs, "--output", str(tmp_path / "o")]
        )
        assert status == 2 and words in capsys.readouterr().err
    status = _exit_status(script, ["--var", "LANG=de", "--output", str(tmp_path / "o")])
    assert status == 2 and "--var LANG is set per language" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_every_language_missing_folder_is_listed_together_and_nothing_runs(tmp_path, capsys):
    """Two languages on a tree without them: one message with both languages' folders, each shared model once."""
    (tmp_path / "data").mkdir()
    out = tmp_path / "out"
    argv = ["--var", f"VPC_ROOT={tmp_path}", "--var", "SUFFIX=_x", "--langs", "de,fr", "--output", str(out)]
    assert _exit_status(_script(), argv) == 2
    err = capsys.readouterr().err
    assert "found" in err and "(de, fr); nothing was run" in err, err
    for lang, train in (("de", "train_german"), ("fr", "train_french")):
        for folder in (f"{lang}_dev_enrolls", f"{lang}_test_trials_mixed", train, f"{lang}_dev_enrolls_x"):
            assert re.search(rf"^  \[{lang}\] .*\b{folder}\b", err, re.M), (folder, err)
    for shared in ("attacker speechbrain: source", "whisper-large-v3 is not", "emodata_track2_dev has no wav.scp"):
        assert len(re.findall(rf"^  \[every language\] .*{re.escape(shared)}", err, re.M)) == 1, (shared, err)
    assert "en_dev" not in err  # only the languages asked for
    assert not out.exists()


def _run_log_since_last_start(log: Path) -> str:
    text = log.read_text()
    return text[text.rindex(" run vpc2026-track2 -> ") :]


@pytest.mark.slow
def test_two_languages_in_one_command_and_their_merged_files(tmp_path_factory, capfd):
    """German and French through the script: both runs, one result_for_rank with both ASV_eval^anon blocks, the
    merged ASV_eval block with every set; run again, every step comes from the cache."""
    pytest.importorskip("speechbrain")
    pytest.importorskip("transformers")
    pytest.importorskip("funasr")
    root = tmp_path_factory.mktemp("vpc2026-track2")
    wavlm = build_track2_tree(root, tmp_path_factory.mktemp("work"), (("de", "train_german"), ("fr", "train_french")))
    out, cache = tmp_path_factory.mktemp("out"), tmp_path_factory.mktemp("cache")
    argv = [
        *("--var", f"VPC_ROOT={root}", "--var", f"SSL_MODEL={wavlm}", "--var", f"SUFFIX={SUFFIX}", *FAST, *L2),
        *("--langs", "de,fr", "--output", str(out), "--cache", str(cache), "--quiet"),
    ]
    script = _script()
    started = time.perf_counter()
    script.main(argv)
    first = time.perf_counter() - started
    summary = out / "results_summary"
    orig = (summary / f"eval_orig{SUFFIX}" / "results_orig.txt").read_text()
    posts = {
        lang: (summary / "track2" / f"eval_anon_1_{lang}{SUFFIX}" / "results_anon.txt").read_text()
        for lang in ("de", "fr")
    }
    rank = (summary / "track2" / f"result_for_rank{SUFFIX}").read_text()
    # 02_run_track2.sh's join: results_orig.txt, then each language's results_anon.txt (en de es fr order)
    assert rank == orig + "\n" + posts["de"] + "\n" + posts["fr"] + "\n"
    for lang in ("de", "fr"):
        rows = json.loads((out / lang / "results.json").read_text())["rows"]
        eer = {
            (r["attacker"], r["protocol"], r["dataset"]): round(r["value"], 3)
            for r in rows
            if r["metric"] == "eer" and r["gender"] == "all" and r.get("dataset") and r.get("n", 1) == 1
        }
        anon = [line.split() for line in posts[lang].split("---- ASV_eval^anon results ----\n")[1].splitlines()[1:]]
        assert {(c[1] + "_" + c[2], float(c[6])) for c in anon} == {
            (d, v) for (a, p, d), v in eer.items() if (a, p) == ("asv_anon", "A-A")
        }
        assert {c[1] + "_" + c[2] for c in anon} == {f"{lang}_dev", f"{lang}_test"}
        # the merged ASV_eval block (asv_ssl's A-A rows) holds this language's sets from its own run
        pre = orig.split("---- ASV_eval results ----\n")[1].split("\n\n")[0].splitlines()[1:]
        assert {(c[1] + "_" + c[2], float(c[6])) for c in map(str.split, pre) if c[1] == lang} == {
            (d, v) for (a, p, d), v in eer.items() if (a, p) == ("asv_ssl", "A-A")
        }
    asr = orig.split("---- ASR results ----\n")[1].splitlines()[1:]
    assert {(c[1], c[2], c[3]) for c in map(str.split, asr)} == {
        (lang, split, side) for lang in ("de", "fr") for split in ("dev", "test") for side in ("original", "anon")
    }
    logs = {lang: (out / lang / "run.log").read_text() for lang in ("de", "fr")}
    capfd.readouterr()
    # Run again: the finished languages are taken from the cache, nothing computed, the same merged file.
    started = time.perf_counter()
    script.main(argv)
    again = time.perf_counter() - started
    for lang in ("de", "fr"):
        second = _run_log_since_last_start(out / lang / "run.log")
        assert ": computing" not in second and "reused from cache" in second, second
        assert len((out / lang / "run.log").read_text()) > len(logs[lang])
    untimed = re.compile(r"^---- Time: .* ----$", re.M)
    assert untimed.sub("", (summary / "track2" / f"result_for_rank{SUFFIX}").read_text()) == untimed.sub("", rank)
    print(f"two languages: {first:.0f} s, again from the cache: {again:.0f} s")
    assert again < first / 3


def test_a_failed_run_stops_with_its_language_and_log(tmp_path, capsys, monkeypatch):
    """A stand-in vpeval whose validate passes and whose German run writes a run.log and fails with status 3."""
    script = _script()
    stand_in = (
        "import sys, pathlib\n"
        "args = sys.argv[1:]\n"
        "if 'validate' in args or 'LANG=en' in args: sys.exit(0)\n"
        "folder = pathlib.Path(args[args.index('--output') + 1]); folder.mkdir(parents=True)\n"
        "(folder / 'run.log').write_text('failed\\n'); sys.exit(3)\n"
    )
    monkeypatch.setattr(script, "vpeval", lambda *args: [sys.executable, "-c", stand_in, *map(str, args)])
    out = tmp_path / "out"
    assert _exit_status(script, ["--var", "VPC_ROOT=/x", "--langs", "en,de,fr", "--output", str(out)]) == 3
    err = capsys.readouterr().err
    assert "the de run failed with vpeval exit status 3" in err and "Not run: fr." in err, err
    assert f"its log is {out / 'de' / 'run.log'}" in err and "en finished before it" in err, err
    assert not (out / "fr").exists() and not (out / "results_summary").exists()
