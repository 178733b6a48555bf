"""The whole VoicePrivacy 2026 Track 2 evaluation in one command, every language, as the toolkit's
02_run_track2.sh runs it:

    python scripts/vpc2026_track2.py --var VPC_ROOT=/path/to/vpc2026 --var SUFFIX=_BM1 --output runs/track2

A vpeval run has one attacker-training folder, so experiments/vpc2026-track2.yaml evaluates one language per run.
This command (1) validates the recipe once per language and, if anything is missing, lists every missing folder
and model of every language together and stops with exit status 2, nothing run; (2) runs it once per language,
in order (`--var LANG=<lang> --var TRAIN=<folder> --var EPOCHS=<n>`, eval_post_<lang>.yaml's values; a --var
EPOCHS given here applies to every language), into DIR/<lang>, all with one cache (--cache, else vpeval's
default); (3) joins the runs into DIR/results_summary/ with track2_merge (the toolkit's file names:
track2/result_for_rank<suffix> and the rest). A failed run stops it with a sentence naming the language and its
run log. Run again, it reuses every step the cache holds, so finished languages are not computed again.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

from vpeval_vpc_report import track2_merge
from vpeval_vpc_report.track2 import LANGUAGES

RECIPE = Path(__file__).resolve().parents[1] / "experiments" / "vpc2026-track2.yaml"
# eval_post_<lang>.yaml at e6810a4: the language's training folder and fine-tuning epochs (the recipe's header)
TOOLKIT_VALUES = {
    "en": ("train_english", 4),
    "de": ("train_german", 10),
    "fr": ("train_french", 10),
    "es": ("train_spanish", 10),
}
PER_LANGUAGE = ("LANG", "TRAIN")  # set here for each language; a --var of them would give every run the same


class Stop(Exception):
    """A sentence for the user and the exit status (2: bad input, as vpeval's user errors)."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


def languages(text: str) -> list[str]:
    """--langs as a list, in the order given; unknown or repeated languages are refused."""
    langs = [lang.strip() for lang in text.split(",") if lang.strip()]
    unknown = [lang for lang in langs if lang not in TOOLKIT_VALUES]
    if unknown or not langs:
        raise Stop(
            f"--langs {text!r}: {', '.join(unknown) or 'no language'} is not a Track 2 language; give some of "
            f"{','.join(LANGUAGES)}, comma-separated."
        )
    repeated = sorted({lang for lang in langs if langs.count(lang) > 1})
    if repeated:
        raise Stop(f"--langs {text!r} names {', '.join(repeated)} twice; give each language once.")
    return langs


def run_variables(lang: str, given: list[str]) -> list[str]:
    """The --var arguments of one language's run: its own values, then the user's (EPOCHS given overrides)."""
    names = {pair.partition("=")[0] for pair in given}
    clash = sorted(names & set(PER_LANGUAGE))
    if clash:
        raise Stop(
            f"--var {clash[0]} is set per language by this command (--langs picks the languages, TRAIN is "
            "each language's train_<language>); leave it out, or run vpeval on the recipe yourself."
        )
    train, epochs = TOOLKIT_VALUES[lang]
    own = [f"LANG={lang}", f"TRAIN={train}"] + ([] if "EPOCHS" in names else [f"EPOCHS={epochs}"])
    return [arg for pair in (*own, *given) for arg in ("--var", pair)]


def vpeval(*args: str | Path) -> list[str]:
    """The vpeval command line of this Python (the environment this script runs in)."""
    return [sys.executable, "-m", "vpeval", *map(str, args)]


def validate_all(recipe: Path, langs: list[str], given: list[str]) -> None:
    """`vpeval validate` per language (side by side); every problem of every language in one Stop."""
    running = {
        lang: subprocess.Popen(
            vpeval("validate", recipe, *run_variables(lang, given)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for lang in langs
    }
    problems: dict[str, list[str]] = {}  # sentence -> the languages whose validation gave it
    statuses = []
    for lang, process in running.items():
        output, _ = process.communicate()
        if process.returncode == 0:
            continue
        statuses.append(process.returncode)
        for line in output.splitlines():
            line = line.removeprefix("Error: ").strip()
            if line:
                problems.setdefault(line, []).append(lang)
    if not statuses:
        return
    failed = [lang for lang in langs if any(lang in where for where in problems.values())]
    # The problems every language shares first, then each language's own, in the order validate gave them.
    ordered = sorted(
        problems.items(), key=lambda item: 0 if len(item[1]) == len(langs) else 1 + langs.index(item[1][0])
    )
    lines = [
        f"  [{'every language' if len(where) == len(langs) > 1 else ', '.join(where)}] {sentence}"
        for sentence, where in ordered
    ]
    raise Stop(
        f"vpc2026_track2: `vpeval validate` of {recipe} found {len(problems)} problem{'s' * (len(problems) != 1)} "
        f"({', '.join(failed)}); "
        "nothing was run. Each, with the languages it concerns:\n" + "\n".join(lines),
        2 if set(statuses) == {2} else max(statuses),
    )


def run_all(recipe: Path, langs: list[str], given: list[str], output: Path, extra: list[str]) -> None:
    """One vpeval run per language into output/<lang>, one after the other; a failed run stops the rest."""
    for n, lang in enumerate(langs):
        folder = output / lang
        command = vpeval("--experiment", recipe, *run_variables(lang, given), "--output", folder, *extra)
        print(f"vpc2026_track2: {lang} ({n + 1}/{len(langs)}): {shlex.join(command)}", flush=True)
        done = f" {', '.join(langs[:n])} finished before it." if n else ""
        rest = f" Not run: {', '.join(langs[n + 1 :])}." if langs[n + 1 :] else ""
        again = "Run this command again to go on: it reuses every step the cache holds."
        try:
            status = subprocess.run(command).returncode
        except KeyboardInterrupt:
            raise Stop(f"vpc2026_track2: interrupted in the {lang} run.{done}{rest} {again}", 130) from None
        if status != 0:
            log = folder / "run.log"
            where = f"its log is {log}" if log.is_file() else f"it stopped before writing a run log into {folder}"
            raise Stop(
                f"vpc2026_track2: the {lang} run failed with vpeval exit status {status} (its message is above); "
                f"{where}.{done}{rest} {again}",
                status,
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python scripts/vpc2026_track2.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--var", action="append", default=[], metavar="NAME=VALUE", help="a recipe variable (VPC_ROOT, SUFFIX, ...)"
    )
    parser.add_argument(
        "--langs",
        default=",".join(LANGUAGES),
        help=f"comma-separated languages, in run order (default {','.join(LANGUAGES)})",
    )
    parser.add_argument("--output", type=Path, required=True, help="DIR: DIR/<lang> per run, DIR/results_summary/")
    parser.add_argument("--cache", type=Path, help="the cache of every run (default: vpeval's)")
    parser.add_argument("--experiment", type=Path, default=RECIPE, help="the recipe (default: %(default)s)")
    parser.add_argument("--quiet", "-q", action="store_true", help="vpeval's --quiet for every run")
    args = parser.parse_args(argv)
    extra = [*(["--cache", str(args.cache)] if args.cache else []), *(["--quiet"] if args.quiet else [])]
    try:
        langs = languages(args.langs)
        run_variables(langs[0], args.var)  # refuses a per-language --var before anything starts
        validate_all(args.experiment, langs, args.var)
        run_all(args.experiment, langs, args.var, args.output, extra)
    except Stop as stop:
        print(stop, file=sys.stderr)
        raise SystemExit(stop.status) from None
    track2_merge.main([*(str(args.output / lang) for lang in langs), "--output", str(args.output)])
    print(f"vpc2026_track2: {', '.join(langs)} done; the toolkit's files are in {args.output / 'results_summary'}")


if __name__ == "__main__":
    main()
