"""The files a job needs besides code: JSON schemas, the gold dbt project, the demo configuration.

They ship inside the package (``lakeapply/_resources``, package data of the wheel) so an installed
wheel on a cluster finds them without the repository; the repository's top-level ``schemas``,
``dbt`` and ``lakeapply.yml`` are symlinks to the same files. Everything is read through
:mod:`importlib.resources`; callers that need a real directory (dbt wants a project folder) get
one from :func:`resource_path`, which is the installed folder itself for a normal (unzipped)
install.
"""

from __future__ import annotations

from importlib.resources import as_file, files
from importlib.resources.abc import Traversable
from pathlib import Path

from lakeapply.errors import EnvironmentSetupError

__all__ = [
    "DBT_PROJECT",
    "DEMO_CONFIG",
    "SCHEMAS",
    "resource",
    "resource_path",
]

SCHEMAS = "schemas"
DBT_PROJECT = "dbt"
DEMO_CONFIG = "lakeapply.yml"


def resource(name: str) -> Traversable:
    """A file or folder of the packaged resources (``schemas``, ``dbt``, ``lakeapply.yml``)."""
    return files("lakeapply").joinpath("_resources", name)


def resource_path(name: str) -> Path:
    """The resource as a file-system path.

    Wheels install unzipped, so this is the file inside site-packages; a zipped import (which
    pip never produces) would make ``as_file`` extract to a temporary file that disappears once
    its context ends, which dbt and relative table-definition paths cannot live with: refuse it.
    """
    traversable = resource(name)
    with as_file(traversable) as path:
        if isinstance(traversable, Path) or Path(str(traversable)) == path:
            if not path.exists():
                raise EnvironmentSetupError(
                    f"lakeapply's packaged resource {name!r} is missing at {path}: the "
                    "installation is incomplete (reinstall the lakeapply wheel)"
                )
            return path
    raise EnvironmentSetupError(
        f"lakeapply's packaged resource {name!r} is not on the file system ({traversable}): "
        "install lakeapply as an unzipped wheel"
    )
