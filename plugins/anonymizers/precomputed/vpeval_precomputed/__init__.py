"""Anonymized speech made by another toolkit, read by utterance id (VoicePrivacy data folders, manifests)."""
