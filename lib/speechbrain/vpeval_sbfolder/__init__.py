"""SpeechBrain model folders read as data (see README.md)."""
