"""Entry point: registers the privacy-gate metric (numpy only)."""

from vpeval import hookimpl


@hookimpl
def register_metrics(register):
    from vpeval_gate.gate import PrivacyGate

    register(PrivacyGate)
