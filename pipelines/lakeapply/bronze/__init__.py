"""Bronze: landing files -> append-only, lossless LCR tables plus a quarantine."""
