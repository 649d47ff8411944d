"""The public contracts: the LCR format, Oracle types and destination table definitions."""
