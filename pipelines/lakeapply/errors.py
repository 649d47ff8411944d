"""The one exception hierarchy of lakeapply.

Every error a user can meet derives from :class:`LakeapplyError`, so callers (the CLI, jobs,
tests) catch one root and print one clear message.
"""

from __future__ import annotations


class LakeapplyError(Exception):
    """Root of every lakeapply error.

    ``exit_code`` is what the CLI exits with, so a scheduler (cron, a Databricks job, CI) can tell
    "try again later" (a busy warehouse, 3) from other errors (1).
    """

    exit_code: int = 1


class ConfigurationError(LakeapplyError):
    """A configuration file, table definition or admin call is invalid."""


class EnvironmentSetupError(LakeapplyError):
    """The runtime (Java, Delta jars, Spark) cannot be set up."""


class InvalidIdentifierError(ConfigurationError):
    """An owner, table or column name is not a valid identifier."""


class IngestError(LakeapplyError):
    """The landing folder cannot be ingested (not bad lines: those are quarantined)."""


class ApplyError(LakeapplyError):
    """An apply process cannot run (not LCR errors: those go to the error queue)."""


class ApplyAbortedError(ApplyError):
    """The apply process is ABORTED after an error with disable_on_error = Y."""


class ConcurrentModificationError(LakeapplyError):
    """Another writer kept committing to the same Delta table; retries did not get through."""


class CaptureRecordError(LakeapplyError):
    """One capture-format record (GoldenGate, Debezium) cannot become contract LCRs. Never reaches
    the user: the ingest quarantines the line with ``field`` and the message as its reason."""

    def __init__(self, field: str | None, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason
