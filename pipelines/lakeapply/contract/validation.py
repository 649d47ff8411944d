"""JSON Schema validation with one precise message: the first error and its path."""

from __future__ import annotations

from typing import Any

import jsonschema

from lakeapply.errors import ConfigurationError


def validate_document(document: Any, schema: dict[str, Any], origin: str) -> None:
    """Raise ConfigurationError("<origin>: <path>: <message>") for the first schema violation."""
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(document),
        key=lambda error: [str(part) for part in error.absolute_path],
    )
    if errors:
        error = errors[0]
        where = "/".join(str(part) for part in error.absolute_path) or "(document)"
        raise ConfigurationError(f"{origin}: {where}: {error.message}")
