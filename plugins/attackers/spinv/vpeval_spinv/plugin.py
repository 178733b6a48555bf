"""Hook implementations only; the attacker class is imported when registered and loads torch lazily."""

from vpeval import hookimpl


@hookimpl
def register_attackers(register):
    from vpeval_spinv.attacker import SpInv

    register(SpInv)
