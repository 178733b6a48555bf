"""Entry point: registers the stream-voice-anon anonymizer."""

from vpeval import hookimpl


@hookimpl
def register_anonymizers(register):
    from vpeval_streamvoiceanon.anonymizer import StreamVoiceAnon

    register(StreamVoiceAnon)
