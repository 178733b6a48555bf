"""McAdams-coefficient speaker anonymization (VoicePrivacy baseline B2)."""
