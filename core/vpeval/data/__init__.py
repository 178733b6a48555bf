"""Speech data: manifests (manifest), Kaldi / VoicePrivacy folders (kaldi), content fingerprints
(fingerprint), bad-audio scanning (scan), splits and trials (plan). Audio I/O is vpeval.audio, the
corpus source plugins that read these formats are in vpeval.builtin.

Import from the submodules; this package imports nothing itself.
"""
