"""Paper-layout reporting for vpeval: the experiment's declared `report:` section and tables across runs."""
