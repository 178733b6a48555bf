"""The `vpeval` command line. Commands parse arguments and call library functions; no logic lives here."""

from __future__ import annotations

import json
from pathlib import Path

import click

from vpeval.api import KINDS
from vpeval.boundary import GuardedGroup, note_place
from vpeval.errors import UserError
from vpeval.run.cache import STAGES


@click.group(cls=GuardedGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--experiment", "-e", type=click.Path(dir_okay=False), help="Run this experiment file.")
@click.option(
    "--force", multiple=True, type=click.Choice(STAGES), help="Recompute this stage even if cached (repeatable)."
)
@click.option("--no-cache", is_flag=True, help="Compute everything in a throwaway cache.")
@click.option(
    "--cache",
    "cache_dir",
    type=click.Path(file_okay=False),
    help="Cache folder (default $VPEVAL_CACHE or .vpeval-cache).",
)
@click.option(
    "--output", type=click.Path(file_okay=False), help="Run folder, anywhere (overrides the experiment's `output`)."
)
@click.option("--overwrite", is_flag=True, help="Write into an existing folder that vpeval did not create.")
@click.option("--allow-pipes", is_flag=True, help="Run Kaldi wav.scp lines that are shell pipes (they run commands).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bars or log lines on the terminal.")
@click.option("--var", "var", multiple=True, metavar="NAME=VALUE", help="Set a variable of the file's `variables:`.")
@click.version_option(package_name="vpeval")
@click.pass_context
def main(ctx, experiment, force, no_cache, cache_dir, output, overwrite, allow_pipes, quiet, var):
    """vpeval: evaluate speaker anonymization against attackers.

    `vpeval --experiment exp.yaml` runs an experiment; the commands below inspect plugins and results.
    """
    if ctx.invoked_subcommand is not None:
        return
    if experiment is None:
        click.echo(ctx.get_help())
        return
    from vpeval.config import load_experiment
    from vpeval.run.runner import Runner, default_cache_root
    from vpeval.variables import parse_assignments

    resolved = load_experiment(experiment, variables=parse_assignments(var))
    if not no_cache:
        note_place(cache_dir or default_cache_root(), "the cache", "--cache")
    note_place(output or resolved.output, "the run folder", "--output")
    runner = Runner(
        resolved,
        cache_root=cache_dir,
        force=force,
        no_cache=no_cache,
        quiet=quiet,
        output=output or None,
        overwrite=overwrite,
        allow_pipes=allow_pipes,
    )
    result = runner.run()
    for line in json.loads((result.folder / "results.json").read_text(encoding="utf-8")).get("drops_and_doubts", []):
        click.echo(line.replace("**", ""))  # the drops and doubts at the top of report.md, on the console too
    click.echo(f"Results in {result.folder}/results.json and {result.folder}/report.md")


def _cache_admin():
    """The library of `vpeval cache` and `validate --plan` (lib/cacheadmin: outside the core's line budget)."""
    try:
        import vpeval_cacheadmin
    except ImportError as exc:
        raise UserError(f"This command needs vpeval-cacheadmin ({exc}): `pip install -e lib/cacheadmin`.") from exc
    return vpeval_cacheadmin


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--var", "var", multiple=True, metavar="NAME=VALUE", help="Set a variable of the file's `variables:`.")
@click.option("--plan", is_flag=True, help="List the run's steps: cached (with the time recorded) or to compute.")
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False), help="The cache --plan looks in.")
def validate(file, var, plan, cache_dir):
    """Check an experiment file (schema and every plugin's parameters) without running it."""
    from vpeval.config import load_experiment
    from vpeval.run.folder import experiment_run_folder
    from vpeval.variables import parse_assignments

    resolved = load_experiment(file, variables=parse_assignments(var))
    experiment_run_folder(resolved)
    grid = max(1, len(resolved.anonymizers)) * max(1, len(resolved.attackers))
    click.echo(
        f"{file} is valid: {len(resolved.anonymizers)} anonymizers x {len(resolved.attackers)} attackers "
        f"({grid} systems), protocols {', '.join(resolved.experiment.protocols)}, "
        f"N in {resolved.experiment.enroll_utterances}, {len(resolved.metrics)} metrics."
    )
    if plan:
        click.echo(_cache_admin().plan_text(resolved, cache_dir))


@main.command(context_settings={"ignore_unknown_options": True}, add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def cache(args):
    """The stage cache's size by stage and plugin; `vpeval cache prune` removes entries (see --help)."""
    _cache_admin().cache_command.main(list(args), prog_name="vpeval cache", standalone_mode=False)


@main.command()
@click.option(
    "--kind", help="Only this kind (anonymizer, attacker, frontend, metric, encoder, asr, corpus, executor, report)."
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def plugins(kind, as_json):
    """List installed plugins with kind, distribution and version, and broken ones with their error."""
    from vpeval.errors import PluginError
    from vpeval.plugins import get_plugin_manager, unknown_kind_message

    manager = get_plugin_manager()
    if kind is not None and kind not in manager.registry:
        raise PluginError(unknown_kind_message(kind))
    entries = [
        {
            "kind": k,
            "name": reg.cls.name,
            "distribution": reg.distribution,
            "version": reg.version,
            "summary": reg.cls.summary(),
        }
        for k, reg in manager.all()
        if kind is None or k == kind
    ]
    broken = [b.__dict__ for b in manager.broken]
    if as_json:
        click.echo(json.dumps({"plugins": entries, "broken": broken}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("kind", "name", "distribution", "version", "summary")
    for e in entries:
        table.add_row(e["kind"], e["name"], e["distribution"], e["version"], e["summary"])
    console = Console()  # the terminal's width (80 when piped, or $COLUMNS): rich wraps the cells
    console.print(table)
    for b in broken:
        console.print(
            f"[red]broken[/red] {b['distribution']} {b['version']} (entry point {b['entry_point']}): {b['error']}"
        )


@main.command()
@click.argument("kind")
@click.argument("name")
def describe(kind, name):
    """Show a plugin's documentation and its parameters with defaults."""
    from vpeval.describe import describe_plugin

    click.echo(describe_plugin(kind, name))


@main.command("new-plugin")
@click.argument("kind", type=click.Choice(list(KINDS)))
@click.argument("name")
@click.option(
    "--dir", "directory", type=click.Path(file_okay=False), default=".", help="Where to create the package folder."
)
def new_plugin(kind, name, directory):
    """Create a complete installable plugin package (pyproject, class, README, a passing test)."""
    from vpeval.scaffold import create_plugin

    folder = create_plugin(kind, name, Path(directory))
    click.echo(f"Created {folder}; install it with `pip install -e {folder}` and run its tests with `pytest {folder}`.")


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "csv", "latex"]),
    help="One paper-layout table of one metric "
    "(systems down, conditions across, marks by the rows' role); without it, every table of the runs in Markdown.",
)
@click.option("--metric", help="The metric of the table (default: the EER).")
@click.option(
    "--rows",
    "row_dims",
    help="Comma-separated coordinates down the table (run, anonymizer, attacker, scenario, "
    "protocol, n, gender, setting); default anonymizer,attacker.",
)
@click.option(
    "--columns", "col_dims", help="Comma-separated coordinates across; default run (when several), protocol, n."
)
@click.option(
    "--best",
    type=click.Choice(["higher", "lower", "none"]),
    help="Mark the highest or lowest value per column (default: by the rows' role: the best system among "
    "systems, the strongest attacker, the worst case for privacy, among attackers; references never).",
)
@click.option(
    "--output", type=click.Path(dir_okay=False), help="Write the report to this new file instead of printing it."
)
@click.option("--overwrite", is_flag=True, help="Replace the --output file if it exists.")
def report(runs, fmt, metric, row_dims, col_dims, best, output, overwrite):
    """Tables across run folders: all of them in Markdown, or one paper-ready table (--format/--metric)."""
    from vpeval.report.writer import check_report_target, combined_report, write_report_file

    if output:
        note_place(output, "the report file", "--output")
        check_report_target(Path(output), overwrite)  # before the work, not after it
    if fmt or metric or row_dims or col_dims or best:
        from vpeval.report.extensions import plugin_table

        def dims(text):
            return None if text is None else [d.strip() for d in text.split(",") if d.strip()]

        options = {"metric": metric, "rows": dims(row_dims), "columns": dims(col_dims), "best": best}
        text = plugin_table([Path(r) for r in runs], fmt or "md", options)
    else:
        text = combined_report([Path(r) for r in runs])
    if output:
        write_report_file(Path(output), text, overwrite)
        click.echo(f"Wrote {output}")
    else:
        click.echo(text, nl=not text.endswith("\n"))


@main.command()
@click.option(
    "--scores",
    "score_file",
    required=True,
    type=click.Path(dir_okay=False),
    help="Kaldi-style score file: enroll test score target|nontarget [f|m].",
)
@click.option(
    "--metric",
    "metric_names",
    multiple=True,
    help="Metric name (repeatable); default: the EER, minDCF and Cllr family.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--bootstrap", default=0, show_default=True, help="Speaker-level bootstrap replicates for confidence intervals."
)
def metrics(score_file, metric_names, as_json, bootstrap):
    """Compute metrics on a score file made by any toolkit."""
    from vpeval.metrics_cli import run_metrics_on_scores

    click.echo(run_metrics_on_scores(score_file, list(metric_names) or None, as_json, bootstrap))


def run() -> None:
    """The `vpeval` script and `python -m vpeval`: the command line, then the process ends without freeing every
    module one by one (vpeval.process_exit; 0.6-0.9 s of each run)."""
    from vpeval.process_exit import run_then_exit

    run_then_exit(main)


if __name__ == "__main__":
    run()
