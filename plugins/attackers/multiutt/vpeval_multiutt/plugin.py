"""Entry point: registers the multiutt attacker."""

from vpeval import hookimpl


@hookimpl
def register_attackers(register):
    from vpeval_multiutt.attacker import MultiUttAttacker

    register(MultiUttAttacker)
