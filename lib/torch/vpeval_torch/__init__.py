"""speechbrain building blocks shared by vpeval's torch plugins: a library without entry points."""
