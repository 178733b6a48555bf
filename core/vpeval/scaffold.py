"""`vpeval new-plugin`: a complete, installable plugin package that passes its contract tests."""

from __future__ import annotations

import re
from pathlib import Path

from vpeval import __version__
from vpeval.errors import UserError

BASES = {"anonymizer": "Anonymizer", "attacker": "Attacker", "frontend": "Frontend", "metric": "Metric"}
HOOKS = {
    "anonymizer": "register_anonymizers",
    "attacker": "register_attackers",
    "frontend": "register_frontends",
    "metric": "register_metrics",
}

BODIES = {
    "anonymizer": """
    class Params(Params):
        strength: float = Field(default=0.5, ge=0.0, le=1.0, description="how far to move the voice")

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        # Draw the pseudo-speaker from voice.rng first: at speaker level every utterance of a
        # speaker then gets the same one. Replace this spectral inversion-and-noise with your method.
        gain = 1.0 + self.params.strength * voice.rng.uniform(-0.5, 0.5)
        noise = self.context.rng("noise", voice.key).normal(0, 1e-3, len(audio))
        out = -audio * gain + noise
        return out.astype(np.float32)
""",
    "attacker": """
    needs_training = True

    class Params(Params):
        bands: int = Field(default=24, ge=2, description="log-spectrum bands of the utterance statistics")

    def train(self, data: TrainingData) -> None:
        # Learn a global mean to subtract (replace with your model's training).
        vectors = [self._utterance_vector(u) for u in data.corpus]
        self._mean = np.mean(vectors, axis=0)

    def save(self, folder: Path) -> None:
        np.save(Path(folder) / "mean.npy", self._mean)

    def load(self, folder: Path) -> None:
        self._mean = np.load(Path(folder) / "mean.npy", allow_pickle=False)

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return np.mean([self._utterance_vector(u) for u in utterances], axis=0) - self._mean

    def _utterance_vector(self, utterance: Utterance) -> np.ndarray:
        audio = utterance.load(self.sample_rate)
        frames = np.lib.stride_tricks.sliding_window_view(audio, 512)[::160]
        spectrum = np.abs(np.fft.rfft(frames * np.hanning(512), axis=1)) ** 2
        bands = np.array_split(spectrum, self.params.bands, axis=1)
        return np.log(np.stack([b.sum(axis=1) for b in bands], axis=1) + 1e-8).mean(axis=0)
""",
    "frontend": """
    sample_rate = 16000
    frame_rate = 25.0

    class Params(Params):
        codebook_size: int = Field(default=16, ge=2, description="number of energy levels")

    def encode(self, audio: np.ndarray) -> FrontendOutput:
        hop = int(self.sample_rate / self.frame_rate)
        frames = audio[: len(audio) // hop * hop].reshape(-1, hop)
        energy = np.log(np.mean(frames**2, axis=1) + 1e-8)
        levels = np.clip(((energy + 18) / 18 * self.params.codebook_size).astype(np.int64), 0, \
self.params.codebook_size - 1)
        return FrontendOutput(self.frame_rate, tokens=levels[:, None], codebook_sizes=(self.params.codebook_size,), \
features=energy[:, None].astype(np.float32))
""",
    "metric": """
    needs = "scores"

    class Params(Params):
        pass

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        scores = inputs.scores
        if scores is None or scores.targets.all() or not scores.targets.any():
            raise MetricInputError("NAME needs target and non-target trials; check the trial list.")
        gap = scores.scores[scores.targets].mean() - scores.scores[~scores.targets].mean()
        return [MetricResult(metric=self.name, value=float(gap))]
""",
}

IMPORTS = {
    "anonymizer": (
        "import numpy as np\nfrom pydantic import Field\n\nfrom vpeval.api import Anonymizer, Params, Voice\n"
    ),
    "attacker": (
        "from collections.abc import Sequence\nfrom pathlib import Path\n\n"
        "import numpy as np\nfrom pydantic import Field\n\n"
        "from vpeval.api import Attacker, Params\nfrom vpeval.types import TrainingData, Utterance\n"
    ),
    "frontend": (
        "import numpy as np\nfrom pydantic import Field\n\n"
        "from vpeval.api import Frontend, Params\nfrom vpeval.types import FrontendOutput\n"
    ),
    "metric": (
        "from vpeval.api import Metric, MetricInputs, Params\n"
        "from vpeval.errors import MetricInputError\nfrom vpeval.types import MetricResult\n"
    ),
}

CONTRACTS = {
    "anonymizer": "AnonymizerContract",
    "attacker": "AttackerContract",
    "frontend": "FrontendContract",
    "metric": "MetricContract",
}


def create_plugin(kind: str, name: str, directory: Path) -> Path:
    if not re.fullmatch(r"[a-z][a-z0-9-]*", name):
        raise UserError(f"Plugin name '{name}' must be lower-case letters, digits and dashes, starting with a letter.")
    package = "vpeval_" + name.replace("-", "_")
    class_name = "".join(part.capitalize() for part in name.split("-")) + BASES[kind]
    root = Path(directory) / name
    if root.exists() and any(root.iterdir()):
        raise UserError(f"{root} already exists and is not empty; choose another --dir or name.")
    (root / package).mkdir(parents=True, exist_ok=True)
    (root / "tests").mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text(f'''[build-system]
requires = ["setuptools>=68,<81"]
build-backend = "setuptools.build_meta"

[project]
name = "vpeval-{name}"
version = "0.1.0"
description = "A vpeval {kind} plugin: {name}"
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["vpeval{compatible_range(__version__)}"]

[project.entry-points.vpeval]
{name} = "{package}.plugin"

[tool.setuptools.packages.find]
include = ["{package}*"]
''')
    (root / "README.md").write_text(f"""# vpeval-{name}

A vpeval {kind} plugin. Install with `pip install -e .`, check with `vpeval plugins --kind {kind}`,
describe with `vpeval describe {kind} {name}`, test with `pytest`.

Use it in an experiment:

```yaml
{_yaml_use(kind, name)}
```
""")
    (root / package / "__init__.py").write_text(f'"""vpeval {kind} plugin {name}."""\n')
    body = BODIES[kind].replace("NAME", name)
    (
        root / package / "method.py"
    ).write_text(f'''"""The {kind} {name}. Replace the placeholder computation with your method."""

from __future__ import annotations

{IMPORTS[kind]}

class {class_name}({BASES[kind]}):
    """{name}: describe the method, its paper and its parameters here (shown by `vpeval describe`)."""

    name = "{name}"
{body}''')
    (
        root / package / "plugin.py"
    ).write_text(f'''"""Registers {name} with vpeval. Keep this import light: heavy imports belong in methods."""

from vpeval import hookimpl


@hookimpl
def {HOOKS[kind]}(register):
    from {package}.method import {class_name}

    register({class_name})
''')
    (root / "tests" / f"test_{package}.py").write_text(f'''from vpeval.testing import {CONTRACTS[kind]}


class Test{class_name}({CONTRACTS[kind]}):
    plugin_name = "{name}"
    params = {{}}
''')
    return root


def compatible_range(version: str) -> str:
    """The vpeval versions a plugin written against `version` can expect to work with: the same minor
    line while vpeval is 0.x (a minor release may break plugins), else the same major line."""
    major, minor = (int(part) for part in version.split(".")[:2])
    upper = f"{major}.{minor + 1}" if major == 0 else f"{major + 1}"
    return f">={major}.{minor},<{upper}"


def _yaml_use(kind: str, name: str) -> str:
    if kind == "anonymizer":
        return f"anonymizers: [{{use: {name}, params: {{strength: 0.5}}}}]"
    if kind == "attacker":
        return f"attackers: [{{use: {name}, train_on: original}}]"
    if kind == "frontend":
        return f"attackers: [{{use: token-probe, frontend: {{use: {name}}}}}]"
    return f"metrics: [{name}]"
