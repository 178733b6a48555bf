"""Speech data: audio I/O (audio), manifests (manifest), Kaldi / VoicePrivacy folders (kaldi), content
fingerprints (fingerprint), bad-audio scanning (scan), splits and trials (plan), corpus sources (sources).

Import from the submodules; this package imports nothing itself, so `Utterance.load` stays cheap.
"""
