"""Entry point: registers the speechbrain encoder and the speechbrain / speechbrain-train attackers."""

from vpeval import hookimpl


@hookimpl
def register_encoders(register):
    from vpeval_speechbrain.encoder import SpeechBrainEncoder

    register(SpeechBrainEncoder)


@hookimpl
def register_attackers(register):
    from vpeval_speechbrain.attacker import SpeechBrainAttacker, SpeechBrainTrainAttacker

    register(SpeechBrainAttacker)
    register(SpeechBrainTrainAttacker)
