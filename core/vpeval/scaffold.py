"""`vpeval new-plugin`: a complete, installable plugin package that passes its contract tests."""

from __future__ import annotations

import re
from pathlib import Path

from vpeval import __version__
from vpeval.api import KINDS
from vpeval.errors import UserError
from vpeval.hookspecs import HOOK_KINDS

BASES = {kind: cls.__name__ for kind, cls in KINDS.items()}
HOOKS = {kind: hook for hook, kind in HOOK_KINDS.items()}

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
    "encoder": """
    sample_rate = 16000
    dim = 24

    class Params(Params):
        pass

    def embed(self, audio: np.ndarray) -> np.ndarray:
        # Log-spectrum band means as a speaker vector (replace with your embedding model).
        frames = np.lib.stride_tricks.sliding_window_view(np.pad(audio, (0, 512)), 512)[::160]
        spectrum = np.abs(np.fft.rfft(frames * np.hanning(512), axis=1)) ** 2
        bands = np.array_split(spectrum, self.dim, axis=1)
        return np.log(np.stack([b.sum(axis=1) for b in bands], axis=1) + 1e-8).mean(axis=0).astype(np.float32)
""",
    "asr": """
    sample_rate = 16000

    class Params(Params):
        threshold: float = Field(default=0.01, gt=0.0, description="RMS above which a 20 ms frame is speech")

    def transcribe(self, audio: np.ndarray) -> Transcript:
        # One word per voiced stretch (replace with your recognizer).
        hop = self.sample_rate // 50
        frames = audio[: len(audio) // hop * hop].reshape(-1, hop)
        voiced = np.sqrt(np.mean(frames**2, axis=1)) > self.params.threshold
        edges = np.flatnonzero(np.diff(np.concatenate([[0], voiced.astype(int), [0]])))
        words = [("word", start * 0.02, end * 0.02) for start, end in zip(edges[::2], edges[1::2])]
        return Transcript(" ".join(w for w, _, _ in words), words)
""",
    "corpus": """
    class Params(Params):
        root: str = Field(description="a folder of <speaker>/<utterance>.wav files")

    def load(self) -> Corpus:
        root = Path(self.params.root)
        utterances = [
            Utterance(id=f"{wav.parent.name}-{wav.stem}", speaker=wav.parent.name, path=str(wav))
            for wav in sorted(root.glob("*/*.wav"))
        ]
        if not utterances:
            raise UserError(f"{root} has no <speaker>/<utterance>.wav files; give the corpus folder as root")
        corpus = Corpus(name=root.name, utterances=utterances)
        corpus.fingerprint = corpus_fingerprint(corpus)
        return corpus
""",
    "executor": """
    class Params(Params):
        pass

    def map(self, func: Callable[[T], Any], items: Sequence[T], description: str = "") -> Iterable[Any]:
        # In this process, in order (replace with your cluster's submit and gather).
        for item in items:
            yield func(item)
""",
    "report": """
    class Params(Params):
        pass

    def table(self, folders: list[Path], fmt: str, options: dict[str, Any]) -> str | None:
        # `vpeval report RUNS --format md`: one line per run folder (replace with your table).
        if fmt != "md":
            return None
        return "\\n".join(f"- {folder.name}" for folder in folders) + "\\n"
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
    "encoder": "import numpy as np\n\nfrom vpeval.api import Params, SpeakerEncoder\n",
    "asr": "import numpy as np\nfrom pydantic import Field\n\nfrom vpeval.api import ASR, Params, Transcript\n",
    "corpus": (
        "from pathlib import Path\n\nfrom pydantic import Field\n\n"
        "from vpeval.api import CorpusSource, Params\nfrom vpeval.data.fingerprint import corpus_fingerprint\n"
        "from vpeval.errors import UserError\nfrom vpeval.types import Corpus, Utterance\n"
    ),
    "executor": (
        "from collections.abc import Callable, Iterable, Sequence\nfrom typing import Any, TypeVar\n\n"
        'from vpeval.api import Executor, Params\n\nT = TypeVar("T")\n'
    ),
    "report": ("from pathlib import Path\nfrom typing import Any\n\nfrom vpeval.api import Params, Report\n"),
}

CONTRACTS = {kind: f"{base}Contract" for kind, base in BASES.items()} | {
    "encoder": "EncoderContract",
    "asr": "ASRContract",
    "corpus": "CorpusContract",
}
# What a kind's contract suite needs beyond `params` (the corpus writes a folder of speech to read).
EXTRA = {
    "corpus": """
    def source_params(self, tmp_path):
        import soundfile
        from vpeval.testing import speaker_voice, synthesize

        for speaker in range(2):
            folder = tmp_path / "speech" / f"spk{speaker}"
            folder.mkdir(parents=True, exist_ok=True)  # called once per load
            for n in range(2):
                rng = np.random.default_rng([speaker, n])
                soundfile.write(folder / f"u{n}.wav", synthesize(speaker_voice(speaker), 1.0, 16000, rng), 16000)
        return {"root": str(tmp_path / "speech")}
""",
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
dependencies = ["vpeval{compatible_range(__version__)}", "numpy>=2.0,<3", "pydantic>=2.5,<3"]

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
    imports = "import numpy as np\n\n" if kind in EXTRA else ""
    (root / "tests" / f"test_{package}.py").write_text(f'''{imports}from vpeval.testing import {CONTRACTS[kind]}


class Test{class_name}({CONTRACTS[kind]}):
    plugin_name = "{name}"
    params = {{{'"root": "."' if kind == "corpus" else ""}}}
{EXTRA.get(kind, "")}''')
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
    if kind == "metric":
        return f"metrics: [{name}]"
    if kind == "corpus":
        return f"data: {{corpus: {{use: {name}, params: {{root: /path/to/speech}}}}}}"
    if kind == "executor":
        return f"executor: {{use: {name}}}"
    if kind == "report":
        return f"# installed report plugins are asked by `vpeval report RUNS --format md`: {name}"
    return f"# a helper plugin: pass `{name}` where a plugin parameter names a {kind} (e.g. WER's asr)"
