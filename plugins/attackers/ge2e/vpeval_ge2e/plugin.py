"""Entry point: registers the ge2e encoder and the ge2e attacker."""

from vpeval import hookimpl


@hookimpl
def register_encoders(register):
    from vpeval_ge2e.encoder import Ge2eEncoder

    register(Ge2eEncoder)


@hookimpl
def register_attackers(register):
    from vpeval_ge2e.attacker import Ge2eAttacker

    register(Ge2eAttacker)
