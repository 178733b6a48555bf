"""emotion2vec+ from a local folder, read by FunASR (see folder.py); the VoicePrivacy 2026 toolkit's 9-to-4 map."""
