"""lakeapply: an Oracle Streams apply process for Delta Lake."""

__version__ = "0.1.0"
