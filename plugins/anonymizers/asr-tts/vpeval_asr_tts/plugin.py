"""Entry point: registers the asr-tts anonymizer."""

from vpeval import hookimpl


@hookimpl
def register_anonymizers(register):
    from vpeval_asr_tts.anonymizer import AsrTts

    register(AsrTts)
