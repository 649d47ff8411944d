"""Silver: the apply process that maintains destination tables from bronze LCRs."""
