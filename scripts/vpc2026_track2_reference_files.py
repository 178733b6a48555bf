"""Writes the VPC 2026 toolkit's Track 2 results files from inputs.json, with the toolkit's own code where it has
a function for it (run_evaluation.save_result_summary, imported from a checkout) and pandas as its evaluate_asv,
evaluate_asr and evaluate_ser call it (DataFrame of their rows; to_csv; the SER groupby mean), joined as
02_run_track2.sh joins them. Run with the toolkit's pandas (2.3.3 here) and its checkout:

    PYTHONPATH=/path/to/pandas-site python scripts/vpc2026_track2_reference_files.py CHECKOUT OUT

The files in toolkit-e6810a4/ were written so (checkout at e6810a4, pandas 2.3.3).
"""

from __future__ import annotations

import json
import logging
import sys
import types
from datetime import datetime
from pathlib import Path

import pandas as pd


def toolkit_save_result_summary(checkout: Path) -> types.ModuleType:
    """run_evaluation (for its save_result_summary), imported with its heavy imports stubbed (it calls none of
    them) and its command-line parser given no arguments."""
    stubs = {
        "evaluation": ["evaluate_asv", "train_asv_eval", "evaluate_asr", "evaluate_ser"],
        "utils": ["parse_yaml", "scan_checkpoint", "combine_asr_data", "check_dependencies",
                  "check_kaldi_formart_data", "limit_utts_per_speaker"],
    }  # fmt: skip
    for name, names in stubs.items():
        module = types.ModuleType(name)
        for attr in names:
            setattr(module, attr, None)
        sys.modules[name] = module
    sys.modules["utils"].setup_logger = logging.getLogger
    sys.modules["utils"].save_yaml = lambda config, path: None  # its config.yaml copy is not compared
    sys.path.insert(0, str(checkout))
    sys.argv = ["run_evaluation.py"]
    import run_evaluation

    return run_evaluation


class FixedClock(datetime):
    """datetime.today() at inputs.json's `time`, so that the files' `---- Time: ... ----` lines are fixed."""

    moment = None

    @classmethod
    def today(cls):
        return cls.moment


def asv_rows(sets: dict[str, list[float]]) -> list[dict]:
    rows = []
    for name, values in sets.items():
        for (enroll, trial), eer in zip((("o", "o"), ("o", "a"), ("a", "a")), values, strict=True):
            dataset, split = name.split("_")
            side = {"o": "original", "a": "anon"}
            rows.append({"dataset": dataset, "split": split, "gender": "mixed", "enrollment": side[enroll],
                         "trial": side[trial], "EER": eer})  # fmt: skip
    return rows


def main(checkout: Path, out: Path) -> None:
    fixtures = Path(__file__).parents[1] / "plugins/reports/vpc/tests/data/vpc2026_track2"
    inputs = json.loads((fixtures / "inputs.json").read_text())
    toolkit = toolkit_save_result_summary(checkout)
    FixedClock.moment = datetime.strptime(inputs["time"], "%d-%m-%y_%H:%M")
    toolkit.datetime = FixedClock
    save = toolkit.save_result_summary
    suffix = inputs["suffix"]
    out.mkdir(parents=True, exist_ok=True)
    config = {"anon_data_suffix": suffix}
    asv = pd.DataFrame(asv_rows(inputs["asv_pre"]))
    asr_rows = []
    for i, speech in enumerate(("original", "anon")):
        for name, values in inputs["asr"].items():
            dataset, split = name.split("_")
            asr_rows.append({"dataset": dataset, "split": split, "asr": speech, "WER": values[i]})
    asr = pd.DataFrame(asr_rows)
    folds = pd.DataFrame(
        [
            {"dataset": "emodata", "split": r["set"].split("_")[-1], "fold": 1, "ser": r["speech"], "UAR": r["UAR"],
             **{f"ACC_{k}": v for k, v in r["ACC"].items()}}
            for r in inputs["ser"]
        ]
    )  # fmt: skip
    agg = {"UAR": ["mean"]} | {c: ["mean"] for c in folds.columns if c.startswith("ACC_")}
    ser = folds.groupby(["dataset", "split", "ser"]).agg(agg)
    ser.reset_index(inplace=True)

    orig = out / f"exp/results_summary/eval_orig{suffix}/results_orig.txt"
    save(out_path=orig, results_dict={"ser": ser, "asv": asv, "asr": asr}, config=config)
    rank = orig.read_text() + "\n"
    posts = {}
    for lang, post in inputs["asv_post"].items():
        path = out / f"exp/results_summary/track2/eval_anon_{post['epochs']}_{lang}{suffix}/results_anon.txt"
        save(out_path=path, results_dict={"asv": pd.DataFrame(asv_rows(post["sets"]))}, config=config)
        posts[lang] = path
    for lang in ("en", "de", "es", "fr"):  # 02_run_track2.sh: cat each results_anon.txt; echo
        rank += posts[lang].read_text() + "\n"
    track2 = out / "exp/results_summary/track2"
    (track2 / f"result_for_rank{suffix}").write_text(rank)
    asr.to_csv(track2 / f"asr_results{suffix}.csv")
    ser.to_csv(track2 / f"ser_results{suffix}.csv")
    asv.to_csv(track2 / f"asv_results{suffix}.csv")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
