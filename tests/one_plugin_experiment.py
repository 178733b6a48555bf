"""A valid experiment with one plugin of each kind, and one slot replaced: the skeleton that the parameter
tests (bounds, strictness) put one value into, with where each plugin stands in the file."""

SKELETON = """\
name: one-plugin
data:
  corpus: {corpus}
anonymizers:
  - {anonymizer}
attackers:
  - {attacker}
metrics:
  - {metric}
"""
VALID = {
    "corpus": "{use: synth, params: {preset: tiny}}",
    "anonymizer": "{use: mcadams}",
    "attacker": "{use: ge2e}",
    "metric": "{use: eer}",
}
# slot -> (line, dotted location) of the plugin in SKELETON
PLACE = {
    "corpus": (3, "data.corpus"),
    "anonymizer": (5, "anonymizers[0]"),
    "attacker": (7, "attackers[0]"),
    "metric": (9, "metrics[0]"),
}


def experiment(slot: str, text: str) -> str:
    return SKELETON.format(**{**VALID, slot: text})
