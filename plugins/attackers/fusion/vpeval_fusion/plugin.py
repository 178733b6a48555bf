"""Entry point: registers the fusion attacker (scikit-learn is imported when it trains)."""

from vpeval import hookimpl


@hookimpl
def register_attackers(register):
    from vpeval_fusion.attacker import Fusion

    register(Fusion)
