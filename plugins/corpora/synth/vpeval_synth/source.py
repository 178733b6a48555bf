"""The `synth` corpus source: a multi-speaker corpus generated with espeak-ng and cached."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from vpeval.api import CorpusSource
from vpeval.api import Params as BaseParams
from vpeval.types import Corpus, Utterance

# speakers, utterances, (min, max) seconds, share of emotional utterances, style strength
PRESETS = {
    "tiny": (6, 6, (2.0, 4.0), 0.4, 1.0),
    "demo": (40, 20, (2.0, 8.0), 0.4, 1.0),
    "large": (300, 20, (2.0, 8.0), 0.4, 1.0),
    # Like an acted emotion corpus (ESD, IEMOCAP scripted): the four emotions equally often and stronger.
    "emotion": (24, 24, (2.0, 8.0), 0.75, 2.0),
    # Seed 000's N = 5 / 10 / 15 on both sides: pools of 24 utterances per evaluation speaker; shorter
    # utterances keep the hours near the demo's while words and prosody habits add up over many of them.
    "multiutt": (40, 48, (2.0, 6.0), 0.4, 1.0),
}
MAX_UTTERANCES = 200_000
MANIFEST_COLUMNS = ("path", "id", "speaker", "gender", "transcript", "emotion", "session", "sample_rate", "duration")
GROUP_COLUMNS = ("age", "accent")  # with speaker_groups


class SynthCorpus(CorpusSource):
    """Built-in multi-speaker corpus generated with espeak-ng (voices, idiolects, emotions, sessions)."""

    name = "synth"

    class Params(BaseParams):
        preset: Literal["tiny", "demo", "large", "emotion", "multiutt"] = Field(
            "demo",
            description="tiny: 6x6 short utterances for tests; demo: 40 speakers x 20; large: 300 x 20; "
            "emotion: 24 x 24 with balanced, strong emotions; multiutt: 40 x 48 of 2-6 s, for N up to 15 on both "
            "trial sides (seed 000).",
        )
        # Upper bounds: generation runs about 20 utterances a second per core, so a typo such as
        # speakers: 1000000000000 would generate for ever; MAX_UTTERANCES in all is hours already.
        speakers: int | None = Field(None, ge=2, le=10_000, description="Number of speakers (overrides the preset).")
        utterances: int | None = Field(
            None, ge=1, le=1_000, description="Utterances per speaker (overrides the preset)."
        )
        seed: int | None = Field(None, ge=0, le=2**32 - 1, description="Corpus seed; None uses the experiment seed.")
        sample_rate: int = Field(
            16000,
            ge=8000,
            le=96000,
            description="Output sample rate in Hz (espeak-ng makes 22050 Hz; resampled with soxr).",
        )
        engine: Literal["espeak"] = Field("espeak", description="Speech engine: espeak-ng formant synthesis.")
        min_seconds: float | None = Field(
            None, ge=1.0, le=59.0, description="Shortest utterance in seconds (preset: 2)."
        )
        max_seconds: float | None = Field(
            None, ge=2.0, le=60.0, description="Longest utterance in seconds (preset: 8, tiny 4)."
        )
        sessions: int = Field(
            4, ge=1, le=1_000, description="Recording sessions per speaker; utterance j is in session j mod sessions."
        )
        # Beyond 3 standard-deviation multiples, formant frequencies of some voices turn negative.
        voice_spread: float = Field(
            1.0, ge=0.0, le=3.0, description="How far speakers' voices differ (scales pitch, formant and rate spreads)."
        )
        # Above about 1e307 numpy's Dirichlet draws overflow to NaN probabilities; at 1000 every speaker's
        # preferences are already uniform to three digits.
        idiolect_alpha: float = Field(
            0.3,
            gt=0.0,
            le=1000.0,
            description="Dirichlet concentration of each speaker's word preferences; smaller = stronger habits.",
        )
        favourites: int = Field(2, ge=0, le=100, description="Favourite phrases per speaker.")
        emotion_share: float | None = Field(
            None,
            ge=0.0,
            le=1.0,
            description="Share of utterances spoken happy, sad or angry, the rest neutral "
            "(preset: 0.4; emotion: 0.75).",
        )
        style_strength: float | None = Field(  # above 4, sad speech reaches a rate of zero
            None,
            ge=0.0,
            le=4.0,
            description="Scales how far happy, sad and angry depart from neutral in pitch level and "
            "range, rate, intensity and tilt (preset: 1; emotion: 2, like acted emotional speech).",
        )
        session_variation: float = Field(
            1.0,
            ge=0.0,
            le=3.0,
            description="Scales per-session channels and per-utterance rate, pitch and tilt jitter (0 = none).",
        )
        snr_db: tuple[Annotated[float, Field(ge=-10.0, le=100.0)], Annotated[float, Field(ge=-10.0, le=100.0)]] = Field(
            (25.0, 40.0),
            description="Range [low, high] of signal-to-noise ratios in dB (-10 to 100), drawn per utterance.",
        )
        # No RMS level reaches 0 dBFS (loud takes are limited to peak 0.98); below -60 is noise floor.
        level_db: tuple[Annotated[float, Field(ge=-60.0, le=0.0)], Annotated[float, Field(ge=-60.0, le=0.0)]] = Field(
            (-32.0, -18.0),
            description="Range [low, high] of speech RMS levels in dBFS (-60 to 0), drawn per utterance.",
        )
        workers: int = Field(
            1, ge=1, le=256, description="Processes generating in parallel (does not change the audio)."
        )
        speaker_groups: bool = Field(
            False,
            description="Give each speaker an age (bands 20-29, 30-49, 50-75: declared edges 30 and 50) and an accent "
            "group (north, south, west) that shape its voice, balanced with gender; the manifest gains age and "
            "accent columns, and speaker_attributes() declares them for the breakdown metrics.",
        )

        @field_validator("snr_db", "level_db")
        @classmethod
        def _low_high(cls, value, info):
            if value[0] > value[1]:
                raise ValueError(f"{info.field_name} must be [low, high], got {list(value)}; swap them")
            return value

        @model_validator(mode="after")
        def _ranges(self):
            low, high = self.min_seconds or 2.0, self.max_seconds or PRESETS[self.preset][2][1]
            if low + 1.0 > high:
                raise ValueError(f"min_seconds ({low}) must be at least 1 s below max_seconds ({high})")
            speakers, utterances = self.speakers or PRESETS[self.preset][0], self.utterances or PRESETS[self.preset][1]
            if speakers * utterances > MAX_UTTERANCES:
                raise ValueError(
                    f"speakers x utterances is {speakers * utterances}, above the {MAX_UTTERANCES} utterances "
                    "synth generates; ask for fewer"
                )
            return self

    def settings(self):
        from vpeval_synth.generate import Settings

        p = self.params
        speakers, utterances, (low, high), share, strength = PRESETS[p.preset]
        return Settings(
            seed=self.context.seed if p.seed is None else p.seed,
            speakers=p.speakers or speakers,
            utterances=p.utterances or utterances,
            sample_rate=p.sample_rate,
            min_seconds=p.min_seconds or low,
            max_seconds=p.max_seconds or high,
            sessions=p.sessions,
            voice_spread=p.voice_spread,
            idiolect_alpha=p.idiolect_alpha,
            favourites=p.favourites,
            emotion_share=p.emotion_share if p.emotion_share is not None else share,
            style_strength=p.style_strength if p.style_strength is not None else strength,
            session_variation=p.session_variation,
            snr_db=tuple(p.snr_db),
            level_db=tuple(p.level_db),
            speaker_groups=p.speaker_groups,
        )

    def fingerprint(self) -> str:
        """Content identity: generation is deterministic, so version and settings fix every byte."""
        from vpeval_espeak.driver import espeak_version
        from vpeval_synth.generate import GENERATOR_VERSION

        settings = _identity_settings(self.settings())
        key = {
            "generator": GENERATOR_VERSION,
            "engine": self.params.engine,
            "espeakng-loader": espeak_version(),
            "settings": settings,
        }
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()

    def speaker_attributes(self) -> dict[str, dict[str, str]]:
        """gender, age (years) and accent of every speaker, with speaker_groups (no audio is generated for them)."""
        from vpeval_synth.generate import speaker_gender, speaker_group, speaker_id

        settings = self.settings()
        if not settings.speaker_groups:
            return {}
        groups = {speaker_id(i): speaker_group(settings, i) for i in range(settings.speakers)}
        return {
            "gender": {speaker_id(i): speaker_gender(i) for i in range(settings.speakers)},
            "age": {s: str(age) for s, (age, _) in groups.items()},
            "accent": {s: a for s, (_, a) in groups.items()},
        }

    def cache_folder(self) -> Path:
        return Path(self.context.work_dir) / f"synth-{self.fingerprint()[:16]}"

    def load(self) -> Corpus:
        folder = self.cache_folder()
        for stale in remove_stale_partials(folder.parent):
            self.context.log.warning("removed %s, left by a synth generation that was killed", stale)
        rows = _read_manifest(folder)
        if rows is None or not all((folder / r["path"]).is_file() for r in rows):
            if rows is not None:  # someone deleted audio from the cache: make it again
                self.context.log.warning("synth cache %s is incomplete; generating it again", folder)
                shutil.rmtree(folder)
            self._build(folder)
            rows = _read_manifest(folder)
        utterances = [
            Utterance(
                id=r["id"],
                speaker=r["speaker"],
                path=str(folder / r["path"]),
                gender=r["gender"],
                transcript=r["transcript"],
                emotion=r["emotion"],
                session=r["session"],
                sample_rate=int(r["sample_rate"]),
                duration=float(r["duration"]),
            )
            for r in rows
        ]
        card = json.loads((folder / "card.json").read_text())
        return Corpus(
            name=f"synth-{self.params.preset}",
            utterances=utterances,
            fingerprint=self.fingerprint(),
            info={"card": card, "folder": str(folder)},
        )

    def _build(self, folder: Path) -> None:
        """Generate into a temporary folder and rename it, so an interrupted run leaves no half corpus."""
        from vpeval_espeak.driver import espeak_version, require_espeak
        from vpeval_synth.card import make_card, write_card
        from vpeval_synth.generate import GENERATOR_VERSION, generate_speaker

        require_espeak("The synth corpus")
        settings = self.settings()
        partial = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        self.context.log.info(
            "generating synth corpus (%d speakers x %d utterances) in %s",
            settings.speakers,
            settings.utterances,
            folder,
        )
        indices = range(settings.speakers)
        if self.params.workers > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            from vpeval.executor import children_ignore_interrupts, ignore_interrupts, stop_pool

            # Ctrl-C is the parent's to report: workers ignore it, and the parent ends them at once.
            pool = ProcessPoolExecutor(
                self.params.workers, mp_context=multiprocessing.get_context("spawn"), initializer=ignore_interrupts
            )
            try:
                with children_ignore_interrupts():  # spawned while submitting
                    jobs = pool.map(generate_speaker, [settings] * len(indices), indices, [partial] * len(indices))
                per_speaker = list(self.context.progress(jobs, total=len(indices), description="synth: speakers"))
            except BaseException:
                stop_pool(pool)
                raise
            pool.shutdown()
        else:
            per_speaker = [
                generate_speaker(settings, i, partial)
                for i in self.context.progress(indices, total=len(indices), description="synth: speakers")
            ]
        rows = [row for speaker_rows in per_speaker for row in speaker_rows]
        with open(partial / "manifest.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=MANIFEST_COLUMNS + (GROUP_COLUMNS if settings.speaker_groups else ()))
            writer.writeheader()
            writer.writerows(rows)
        write_card(make_card(rows, _card_settings(settings), "espeak-ng", espeak_version(), GENERATOR_VERSION), partial)
        try:
            os.replace(partial, folder)
        except OSError:  # another process finished the same corpus first; its copy is identical
            shutil.rmtree(partial, ignore_errors=True)


def _card_settings(settings) -> dict:
    """The settings as the card names them: speaker_groups (added later) only when on, so corpora made
    before it keep their card byte for byte."""
    out = asdict(settings)
    if not out["speaker_groups"]:
        del out["speaker_groups"]
    return out


def _identity_settings(settings) -> dict:
    """The settings the fingerprint is made of: options added later are left out at their default, so corpora
    made before them keep their identity."""
    out = _card_settings(settings)
    if out["style_strength"] == 1.0:
        del out["style_strength"]
    return out


def remove_stale_partials(work_dir: Path) -> list[Path]:
    """Delete the `synth-*.partial-PID` folders of generations whose process is gone; return them.

    A generation writes into such a folder and renames it when complete, so one whose process died
    (kill -9, power loss) would otherwise stay for ever. Folders of live processes are left alone.
    """
    removed = []
    for partial in sorted(Path(work_dir).glob("synth-*.partial-*")):
        pid = partial.name.rsplit(".partial-", 1)[1]
        if partial.is_dir() and pid.isdigit() and int(pid) != os.getpid() and not _process_alive(int(pid)):
            shutil.rmtree(partial, ignore_errors=True)
            removed.append(partial)
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    except (OverflowError, ValueError):  # not a possible pid
        return False
    return True


def _read_manifest(folder: Path) -> list[dict] | None:
    if not (folder / "manifest.csv").is_file():
        return None
    with open(folder / "manifest.csv", newline="") as f:
        return list(csv.DictReader(f))
