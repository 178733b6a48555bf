"""vpeval report plugin `vpc`: the VoicePrivacy toolkits' results files from a run's rows."""
