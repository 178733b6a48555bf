"""Hook implementations only; each class lives in its own module and is imported when registered."""

from vpeval import hookimpl


@hookimpl
def register_asr(register):
    from vpeval_speech.speechbrain_asr import SpeechBrainASR
    from vpeval_speech.whisper_asr import WhisperASR
    from vpeval_speech.whisper_transformers import WhisperTransformersASR

    register(WhisperASR)
    register(WhisperTransformersASR)
    register(SpeechBrainASR)


@hookimpl
def register_metrics(register):
    from vpeval_speech.pitch_correlation import PitchCorrelation
    from vpeval_speech.uar import UAR
    from vpeval_speech.wer import WER

    register(WER)
    register(UAR)
    register(PitchCorrelation)
