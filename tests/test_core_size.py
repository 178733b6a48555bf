"""The core's size budget (docs/plugin-hooks.md, "Where new features go"): new features arrive as plugins,
declared report sections, report plugins (register_reports) or libraries under lib/, not as core code.

Raising a number here takes a commit that says why the code belongs in the core."""

from pathlib import Path

import vpeval

CORE = Path(vpeval.__file__).parent
BUDGET = {"report": 2_400, "": 13_669}  # lines of .py files: the report folder, the whole core
# 13,508 -> 13,669 (issue 39, items 3 and 5): a run hashes and measures its lists of files on its cores (the data
# scan, the corpus and submission fingerprints, a stage entry's manifest: fingerprint.hash_ahead, thread_results)
# and knows an entry's files after the entry's rename; the `vpeval` command ends without the interpreter's
# teardown (vpeval.process_exit). The run's data stage, its cache and its command line are the core's.
# 13,486 -> 13,508 (issue 39, item 5): the EER stages of a run's score sets run on its workers (forked processes:
# bootstrap loops hold the interpreter lock), in the core's metrics stage.
# 13,453 -> 13,486 (issue 39, item 5): the run's serial part on two cores: a throwaway cache (--no-cache) hard-links
# a submission's stored files instead of writing them again and is removed beside the report; a plugin's code key
# reads only its own libraries' metadata. The anonymize task and the runner that these change are the core's.
# 13,430 -> 13,453 (issue 40): the math libraries' kernel pins (scripts/portable-kernels.sh) join the stages'
# cache-key numerics where set, and results.json / report.md name them and the CPU: where a run computed is the core's.
# 13,420 -> 13,430 (issue 39, item 3): trainings' torch threads come from the experiment file, not the machine's
# cores (PluginContext.training_threads), so the default `workers` (every core) cannot change trained weights.
# 13,400 -> 13,420 (issue 39, item 5): `cpu_precision: bf16`, the run's CPU precision (its schema key, cache-key
# numerics, the refusal on a CPU without bf16 instructions, the run.log / report.md warning) is the platform's.
# 13,300 -> 13,400 (issue 39, item 2): a run decodes and hashes each audio file once whatever stages read it
# (vpeval.audio.DecodedAudio, fingerprint.remembered_hashes): the core's reader, used by every plugin.
# Round 4 held 13,300 (issue 35): the VoicePrivacy toolkits' results files went to the `vpc` report plugin
# (Report.run_outputs), the new-plugin templates became package data files.
# 12,500 -> 13,300 (round 3): the run's device and precision, experiment variables and the VoicePrivacy
# protocol (its folder names, per-dataset results, the toolkit summary) are the platform's, not a method's.
# Round 4 moved the paper reporting (paper tables, declared sections, EER-against-N and privacy-utility
# figures: about 800 lines) to the `paper` report plugin and kept the budget for round four's features.


def lines_under(folder: Path) -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in folder.rglob("*.py"))


def test_the_core_stays_within_its_budget():
    for folder, budget in BUDGET.items():
        used = lines_under(CORE / folder)
        assert used <= budget, (
            f"core/vpeval/{folder or ''} has {used} lines, over its budget of {budget}: move the new feature into a "
            "plugin (a report plugin for reporting) or a lib/ library (docs/plugin-hooks.md), or raise the budget "
            "with a reason"
        )
