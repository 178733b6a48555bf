"""`vpeval cache` and `vpeval cache prune`: the core's command line hands them their arguments (vpeval.cli)."""

from __future__ import annotations

import click

from vpeval.errors import UserError
from vpeval_cacheadmin.entries import cache_root, sizes_text
from vpeval_cacheadmin.plan import planned_steps
from vpeval_cacheadmin.prune import parse_age, prune, select


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--cache",
    "cache_dir",
    type=click.Path(file_okay=False),
    help="Cache folder (default $VPEVAL_CACHE or .vpeval-cache).",
)
@click.pass_context
def cache_command(ctx, cache_dir):
    """The stage cache: entries and bytes by stage and by the plugins that built them (entries built before
    vpeval recorded that show 'unknown'), and the folders that are not entries; `prune` removes entries."""
    ctx.obj = cache_root(cache_dir)
    if ctx.invoked_subcommand is None:
        click.echo(sizes_text(ctx.obj))


@cache_command.command("prune")
@click.option("--older-than", metavar="AGE", help="Entries last built or reused longer ago than AGE (45s, 90m, 30d).")
@click.option("--unused-by", is_flag=True, help="Entries that none of the experiment files given would use.")
@click.option("--yes", is_flag=True, help="Remove them; without it, only list them.")
@click.option("--var", "var", multiple=True, metavar="NAME=VALUE", help="Set a variable of the files' `variables:`.")
@click.argument("experiments", nargs=-1, type=click.Path(dir_okay=False))
@click.pass_obj
def prune_command(root, older_than, unused_by, yes, var, experiments):
    """Remove entries by age, or those no given experiment uses (both: entries that are both); a listing
    unless --yes. Entries a running vpeval is building are skipped; work/ and fingerprints/ are kept."""
    if bool(experiments) != unused_by or not (older_than or unused_by):
        raise UserError(
            "Say what to prune: `vpeval cache prune --older-than 30d`, or `--unused-by` followed by experiment "
            "files (or both); add --yes to remove what it lists."
        )
    used = None
    if unused_by:
        from vpeval.config import load_experiment
        from vpeval.variables import parse_assignments

        used = set()
        for file in experiments:
            used |= set(planned_steps(load_experiment(file, variables=parse_assignments(var)), root))
    age = parse_age(older_than) if older_than else None
    if not root.is_dir():
        raise UserError(f"The cache {root} does not exist; give the cache folder with --cache.")
    click.echo("\n".join(prune(root, select(root, age, used), yes)))
