"""The precomputed speech: utterance id -> audio file, read with the core's Kaldi and manifest readers.

Those read every text file through vpeval.data.textfile, so a precomputed set's files get the same
checks (encoding, duplicates, columns, declared values) and sentences as a corpus's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vpeval.data.kaldi import read_data_dir
from vpeval.data.manifest import read_manifest
from vpeval.data.textfile import file_problem
from vpeval.errors import DataError
from vpeval.types import Utterance

SHOWN = 5  # ids named in an error sentence


@dataclass
class PrecomputedSet:
    """Every precomputed utterance by id, and where each came from (a data folder or the manifest)."""

    utterances: dict[str, Utterance] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    def __contains__(self, utterance_id: object) -> bool:
        return utterance_id in self.utterances

    def __len__(self) -> int:
        return len(self.utterances)

    def where(self) -> str:
        """The sources in a few words: 'data/x_anon' or 'data/x_anon and 3 more sources'."""
        if len(self.sources) == 1:
            return self.sources[0]
        return f"{self.sources[0]} and {len(self.sources) - 1} more sources"

    def missing_sentence(self, missing: Sequence[str], wanted: int | None = None) -> str:
        """One sentence: how many ids have no precomputed audio, the first few, and what to do.

        `wanted` is the number of utterances asked for, when known (None: one id met while anonymizing).
        """
        first = ", ".join(missing[:SHOWN]) + (", ..." if len(missing) > SHOWN else "")
        if wanted is None:
            what = f"utterance {first} has no audio in {self.where()} ({len(self)} utterances there)"
        else:
            what = (
                f"{len(missing)} of the {wanted} utterances to anonymize have no audio in {self.where()} "
                f"(first: {first})"
            )
        return (
            f"anonymizer precomputed: {what}{self.prefix_hint(missing[0])}; "
            "anonymize the missing utterances with your toolkit too, "
            "or add the data folders that hold them to `folders`."
        )

    def prefix_hint(self, utterance_id: str) -> str:
        """Why an id may be missing although its audio is there: the kaldi corpus prefixed it.

        vpeval's kaldi corpus prefixes an id that two loaded folders share with the folder name, which
        happens when anonymized copies sit beside the originals under the corpus's root.
        """
        # Folder names may hold dashes themselves (train-clean-360), so try every split.
        for at, char in enumerate(utterance_id):
            head, rest = utterance_id[:at], utterance_id[at + 1 :]
            if char == "-" and rest in self.utterances:
                return (
                    f" ({utterance_id} looks like {rest} prefixed with the folder name {head}, which the kaldi "
                    "corpus does when two of its folders hold the same id: list only the original folders in "
                    "its `sets`)"
                )
        return ""


def load_precomputed(
    folders: Iterable[str], manifest: str | None, allow_pipes: bool, pipe_cache: Path
) -> PrecomputedSet:
    """Read every folder (wav.scp, utt2spk, ...) and the manifest; an id may come from one source only."""
    out = PrecomputedSet()
    for folder in folders:
        if not Path(folder).is_dir():
            problem = file_problem(folder)
            what = (
                "is not a folder"
                if problem and "exist" in problem
                else f"{(problem or 'is a file').split(',')[0]}, not a folder"
            )
            raise DataError(
                f"anonymizer precomputed: `folders` names {folder}, which {what}; give the Kaldi data "
                "folders of your anonymized speech (each with a wav.scp)."
            )
        _add(out, folder, read_data_dir(folder, allow_pipes=allow_pipes, pipe_cache=pipe_cache).utterances)
    if manifest is not None:
        problem = file_problem(manifest)
        if problem:
            raise DataError(
                f"anonymizer precomputed: `manifest` names {manifest}, which {problem}; give the CSV or "
                "JSONL manifest of your anonymized speech."
            )
        _add(out, manifest, read_manifest(manifest).utterances)
    return out


def _add(out: PrecomputedSet, source: str, utterances: Iterable[Utterance]) -> None:
    out.sources.append(source)
    for u in utterances:
        if u.id in out.utterances:
            raise DataError(
                f"anonymizer precomputed: utterance {u.id} is in {out.origin[u.id]} and in {source}; each "
                "utterance id may have one precomputed file, so remove one of them."
            )
        out.utterances[u.id] = u
        out.origin[u.id] = source
