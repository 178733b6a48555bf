"""ASR + TTS speaker anonymization: transcribe, then speak the words in a pseudo-voice."""
