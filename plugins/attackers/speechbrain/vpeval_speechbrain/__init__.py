"""vpeval-speechbrain: SpeechBrain speaker-embedding folders (VoicePrivacy's ASV_eval models), YAML never run."""
