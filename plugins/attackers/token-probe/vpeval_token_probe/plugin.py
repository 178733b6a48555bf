"""Hook implementations only."""

from vpeval import hookimpl


@hookimpl
def register_attackers(register):
    from vpeval_token_probe.attacker import TokenProbe

    register(TokenProbe)
