"""Entry point: registers the dast attacker."""

from vpeval import hookimpl


@hookimpl
def register_attackers(register):
    from vpeval_dast.attacker import DastAttacker

    register(DastAttacker)
