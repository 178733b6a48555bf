"""espeak-ng driven through ctypes from the espeakng-loader package (GPL-3.0).

Shared by the synth corpus and the asr-tts anonymizer (plugins must not import each other). The engine
belongs to the process that started it, so a worker forked by the runner starts its own server instead
of talking over its parent's socket.

espeak-ng works on a private, pruned copy of the package's data folder (English only, no stock voice
variants): espeak-ng refuses more than about 350 voice files, so each speaker's full voice file is
written into this private copy and loaded by name, never added to the stock folder.

espeak-ng keeps static state from one synthesis to the next (wave phase, queue positions, filter
memories) that neither priming nor espeak_Terminate/espeak_Initialize resets: the same text in the
same voice came out different depending on what had been said before. So every synthesis runs in a
process forked from a server whose engine has been started but has never spoken: each utterance
starts from the same state, and the output depends only on its own inputs. The server is a spawned
process of its own (`python -m vpeval_espeak.driver`), so the caller's threads or libraries never
meet fork(). Voice files use neither
espeak-ng's `breath` (its noise comes from the C library's rand()) nor `flutter`; breathiness is
added afterwards with numpy (voice.add_breath).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np

# enum values from espeak-ng's speak_lib.h
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_CHARS_UTF8 = 1
_PARAMETERS = {"rate": 1, "volume": 2, "pitch": 3, "range": 4}
_DATA_FILES = ("phondata", "phondata-manifest", "phonindex", "phontab", "intonations", "en_dict")
_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)

_engine: EspeakServer | None = None
_engine_pid: int | None = None


def get_engine() -> EspeakServer:
    """This process's engine, started on first use (a forked child starts its own)."""
    global _engine, _engine_pid
    if _engine is None or _engine_pid != os.getpid():
        _engine = EspeakServer()
        _engine_pid = os.getpid()
    return _engine


def require_espeak(who: str) -> None:
    """One sentence (MissingModelError) when the espeakng-loader package is not installed."""
    try:
        import espeakng_loader  # noqa: F401
    except ImportError:
        from vpeval.errors import MissingModelError

        raise MissingModelError(
            f"{who} needs espeak-ng from the espeakng-loader package; "
            "install it with: pip install espeakng-loader==0.2.4."
        ) from None


def espeak_version() -> str:
    from importlib import metadata

    return metadata.version("espeakng-loader")


class EspeakServer:
    """Synthesizes text in a voice given as the lines of an espeak-ng voice file."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        # A process group of its own: the terminal's Ctrl-C goes to the caller, which says once that the
        # run was interrupted; the server ends when the caller closes the connection or dies (EOF).
        self._process = subprocess.Popen(
            [sys.executable, "-m", "vpeval_espeak.driver", str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            process_group=0,
        )
        theirs.close()
        self._conn = Connection(ours.detach())
        try:
            reply = self._conn.recv()
        except EOFError:
            reply = f"the espeak-ng server exited with code {self._process.wait()}"
        if isinstance(reply, str):
            raise RuntimeError(reply)
        self.sample_rate = int(reply)
        self._voice_lines: str | None = None
        self._owner = os.getpid()
        atexit.register(self.close)

    def set_voice(self, voice_lines: str) -> None:
        """Use a voice: the stock en-US voice plus `voice_lines` (pitch, formant, roughness ...)."""
        if "breath" in voice_lines or "flutter" in voice_lines:
            raise ValueError("voice lines must not set breath or flutter: their output is not reproducible")
        self._voice_lines = voice_lines

    def synthesize(
        self, text: str, rate: int = 175, pitch: int = 50, pitch_range: int = 50, volume: int = 100
    ) -> np.ndarray:
        """int16 samples at `self.sample_rate` for `text` in the current voice.

        rate is words per minute; pitch and pitch_range are espeak-ng's 0-100 scales (50 = the
        voice's own); volume is a percentage.
        """
        if self._voice_lines is None:
            raise RuntimeError("set_voice must be called before synthesize")
        self._conn.send((self._voice_lines, text, int(rate), int(pitch), int(pitch_range), int(volume)))
        reply = self._conn.recv()
        if isinstance(reply, str):
            raise RuntimeError(reply)
        return reply

    def close(self) -> None:
        if os.getpid() != self._owner:  # a forked child must not stop its parent's server
            return
        if self._process.poll() is None:
            try:
                self._conn.send(None)
                self._process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
        self._conn.close()


def _serve(conn) -> None:
    """Server loop: start espeak-ng once, then fork a fresh child for every request.

    A caller that goes away (it exited, or was killed with its worker) ends the server quietly: there
    is nobody left to answer, and a traceback would land on the user's terminal.
    """
    try:
        engine = _Engine()
    except Exception as exc:  # reported to the caller as one message
        try:
            conn.send(f"espeak-ng could not start: {exc}")
        except OSError:
            pass
        return
    try:
        conn.send(engine.sample_rate)
        while True:
            try:
                request = conn.recv()
            except EOFError:  # the caller went away without saying goodbye
                request = None
            if request is None:
                break
            pid = os.fork()
            if pid == 0:  # child: speak once from the pristine state, answer, leave
                try:
                    conn.send(engine.speak(*request))
                except BaseException as exc:  # noqa: BLE001 - the child must always answer
                    conn.send(f"espeak-ng failed on {request[1]!r}: {exc}")
                finally:
                    os._exit(0)
            os.waitpid(pid, 0)
    except OSError:  # the connection broke (reset, broken pipe): the caller is gone
        pass
    finally:
        engine.remove()


class _Engine:
    """The espeak-ng library in this process, started on a private data folder, never spoken."""

    def __init__(self) -> None:
        import espeakng_loader

        self._root = Path(tempfile.mkdtemp(prefix="vpeval-espeak-"))
        data = self._root / "espeak-ng-data"
        _copy_pruned_data(Path(espeakng_loader.get_data_path()), data)
        self._voice_file = data / "voices" / "syn" / "voice"
        self._base_voice = (data / "lang" / "gmw" / "en-US").read_text().replace("name English (America)", "name synth")
        self._chunks: list[np.ndarray] = []
        self._lib = ctypes.CDLL(espeakng_loader.get_library_path())
        self._libc = ctypes.CDLL(None)
        self._lib.espeak_Initialize.restype = ctypes.c_int
        self.sample_rate = self._lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, str(self._root).encode(), 0)
        if self.sample_rate <= 0:
            raise RuntimeError(f"espeak_Initialize failed on {data}")
        self._callback = _CALLBACK(self._collect)  # kept on self so ctypes does not free it
        self._lib.espeak_SetSynthCallback(self._callback)

    def _collect(self, wav, count, events) -> int:
        if count > 0:
            self._chunks.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
        return 0

    def speak(self, voice_lines: str, text: str, rate: int, pitch: int, pitch_range: int, volume: int) -> np.ndarray:
        self._voice_file.write_text(f"{self._base_voice}\n{voice_lines}\nflutter 0\n")
        code = self._lib.espeak_SetVoiceByName(b"syn/voice")
        if code != 0:
            raise RuntimeError(f"the voice file was refused (code {code}):\n{voice_lines}")
        for name, value in (("rate", rate), ("pitch", pitch), ("range", pitch_range), ("volume", volume)):
            self._lib.espeak_SetParameter(_PARAMETERS[name], value, 0)
        self._libc.srand(0)
        data = text.encode("utf-8") + b"\0"
        code = self._lib.espeak_Synth(data, len(data), 0, 0, 0, _CHARS_UTF8, None, None)
        if code != 0:
            raise RuntimeError(f"espeak_Synth returned {code}")
        self._lib.espeak_Synchronize()
        return np.concatenate(self._chunks) if self._chunks else np.zeros(0, np.int16)

    def remove(self) -> None:
        shutil.rmtree(self._root, ignore_errors=True)


def _copy_pruned_data(source: Path, target: Path) -> None:
    """The English subset of espeak-ng's data, with an empty private voice folder."""
    (target / "voices" / "syn").mkdir(parents=True)
    (target / "lang" / "gmw").mkdir(parents=True)
    for name in _DATA_FILES:
        shutil.copy2(source / name, target / name)
    for name in ("en", "en-US"):
        shutil.copy2(source / "lang" / "gmw" / name, target / "lang" / "gmw" / name)


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a SIGINT sent to this process alone: the caller decides
    _serve(Connection(int(sys.argv[1])))
