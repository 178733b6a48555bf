"""One privacy-utility figure over several run folders (seed 003's Figure 6: EER against WER and against UAR, the
VPC 2024 baselines of one run beside the proposed systems of another, the original speech as a grey circle).

Each run's systems get their run's marker and colour (the first run blue triangles, the second red stars, as the
paper draws baselines and proposed systems), with the system written beside each point. A system in several runs
(B2, the original speech) is drawn once, from the first run given, and --leave-out drops a system (the paper's
caption names the baselines, the original and the OH series: no Se); each such case is printed. The points are
each run's pooled values (results.json rows without a `dataset`; the female/male average where there is one).
Writes OUT/NAME.png, OUT/NAME.pdf and OUT/NAME.csv (one line per plotted point and panel):

    python scripts/privacy_utility_figure.py runs/paper-scale/seed003-table2-baselines runs/paper-scale/seed003 \\
        --group "VPC 2024 baselines" --group "OH series" --leave-out Se --attacker asv_anon \\
        --original-attacker asv_eval --out runs/paper-scale/seed003-figure6
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from vpeval.errors import UserError
    from vpeval.report.figures import available
    from vpeval.report.runfolder import load_run
    from vpeval_paper_report.privacy_utility import UTILITY_METRICS, privacy_utility_across_runs

    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (each with results.json and resolved.yaml)")
    parser.add_argument("--out", type=Path, required=True, help="folder the PNG, PDF and CSV are written to")
    parser.add_argument("--name", default="privacy-utility", help="file name stem (default privacy-utility)")
    parser.add_argument("--group", action="append", default=[], help="legend name of each run, in order "
                        "(default: the run's experiment name)")  # fmt: skip
    parser.add_argument("--protocol", default="A-A", help="the EER's protocol (default A-A)")
    parser.add_argument("--attacker", help="the EER's attacker (needed where a run has several)")
    parser.add_argument(
        "--original-attacker", help="the attacker of the original speech's O-O EER (default --attacker)"
    )
    parser.add_argument("--utility", default=",".join(UTILITY_METRICS), help="utility metrics, one panel each "
                        f"(default {','.join(UTILITY_METRICS)})")  # fmt: skip
    parser.add_argument("--leave-out", action="append", default=[], help="a system not to draw (repeatable)")
    args = parser.parse_args(argv)
    try:
        if args.group and len(args.group) != len(args.runs):
            raise UserError(
                f"--group was given {len(args.group)} times for {len(args.runs)} run folders: give one per run."
            )
        if not available():
            raise UserError("The figure needs matplotlib: pip install 'vpeval[plots]'.")
        loaded = [load_run(folder) for folder in args.runs]
        groups = args.group or [run.name for run in loaded]
        runs = [(str(run.folder), group, run.rows) for run, group in zip(loaded, groups)]
        utility = tuple(m.strip() for m in args.utility.split(",") if m.strip())
        args.out.mkdir(parents=True, exist_ok=True)
        figure = privacy_utility_across_runs(
            runs,
            args.out,
            args.name,
            protocol=args.protocol,
            attacker=args.attacker,
            original_attacker=args.original_attacker,
            utility_metrics=utility,
            leave_out=tuple(args.leave_out),
        )
    except UserError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 2
    for line in figure.not_drawn:
        print(line)
    print(f"wrote {figure.png}, {figure.pdf} and {figure.csv} ({len(figure.points)} systems)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
