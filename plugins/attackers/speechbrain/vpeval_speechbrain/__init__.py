"""vpeval-speechbrain: SpeechBrain speaker-embedding folders (VoicePrivacy's ASV_eval models), read without running their YAML."""
