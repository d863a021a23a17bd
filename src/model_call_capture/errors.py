"""The library's exceptions: one tree rooted in `CaptureError`.

Catch `CaptureError` to handle every error the library raises on purpose (a bad rollout
id, a damaged or newer capture line, unusable settings, a busy collector, a schema
violation). Each error also keeps the builtin base it always had (`ValueError`,
`RuntimeError`, `LookupError`), so code that catches those keeps working.

Failures of the operating system stay `OSError` (a failed write or fsync, a refused
symlink): they are not the library's verdict but the disk's, and callers handle them as
such.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "AtifMappingError",
    "CaptureConfigError",
    "CaptureError",
    "CollectorBusyError",
    "DamagedLineError",
    "ExportError",
    "InvalidRolloutIdError",
    "LineTooLongError",
    "NotARegularFileError",
    "OtlpExportError",
    "RolloutSourceError",
    "SchemaValidationError",
    "UnknownSchemaError",
    "UnsupportedFormatError",
]


class CaptureError(Exception):
    """Base class of every exception model-call-capture raises on purpose."""


class InvalidRolloutIdError(CaptureError, ValueError):
    """A rollout id that could name a path outside the capture directory, or is malformed."""


class ExportError(CaptureError, ValueError):
    """An export that cannot run as asked: options that do not go together, a target it may
    not replace, a dataset exported with other options, or a write of its files that failed."""


class RolloutSourceError(CaptureError, TypeError):
    """A reader of rollouts was given something that is none of what it reads: a capture
    directory, a `CaptureStore`, rollouts or capture files (the message says what it got)."""


class UnsupportedFormatError(CaptureError, ValueError):
    """A capture line written by a newer major version of the format than this reader knows."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | None = None,
        line_index: int | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        """The capture file, when known."""
        self.line_index = line_index
        """The line's index among the file's lines, from 0, blank lines not counted (a
        record's `call_index` numbering; internal), when known."""
        self.line = line
        """The line's number as editors and `mcc validate` show it (from 1, blank lines
        counted), when known; the message names this one."""

    def at_line(self, line: int) -> UnsupportedFormatError:
        """The same error naming its line `line` (the readers know it, the decoder not)."""
        message = str(self)
        if self.path is not None:
            named = f" in {self.path}"
            message = message.replace(named, f"{named}, line {line}", 1)
        return UnsupportedFormatError(
            message, path=self.path, line_index=self.line_index, line=line
        )


class DamagedLineError(CaptureError, ValueError):
    """A capture line that is not a valid `CaptureLine` (bad JSON, wrong types, torn write)."""

    def __init__(
        self, message: str, *, path: Path, line_index: int, line: int | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        """The capture file."""
        self.line_index = line_index
        """The damaged line's index among the file's lines, from 0, blank lines not counted
        (a record's `call_index` numbering; internal)."""
        self.line = line
        """The line's number as editors and `mcc validate` show it (from 1, blank lines
        counted); the message names this one."""


class LineTooLongError(DamagedLineError):
    """A capture line longer than the reader's `max_line_bytes`: damaged, and never held in memory."""

    def __init__(
        self, message: str, *, path: Path, line_index: int, size: int, line: int | None = None
    ) -> None:
        super().__init__(message, path=path, line_index=line_index, line=line)
        self.size = size
        """The line's length in bytes."""


class NotARegularFileError(CaptureError, OSError):
    """A path named like a capture file that is not a regular file (a FIFO, a directory, a device).

    Readers and writers refuse it before reading or writing a byte, so a FIFO never hangs
    them (a writer's refusal is a capture failure: the model call is still served).
    """


class CaptureConfigError(CaptureError, ValueError):
    """The capture settings of a global config are unusable (says which and why)."""


class CollectorBusyError(CaptureError, RuntimeError):
    """Another collector is running against the same capture directory."""


class UnknownSchemaError(CaptureError, LookupError):
    """A schema name, path or `$id` that names no packaged schema."""


class SchemaValidationError(CaptureError, ValueError):
    """A document that its schema rejects.

    `json_path` names the offending value (`$.model_ref.name`, `$` for the document
    itself) and `schema` the schema it was checked against.
    """

    def __init__(self, message: str, *, json_path: str, schema: str) -> None:
        super().__init__(f"{message} - at `{json_path}` (schema {schema})")
        self.message = message
        """What is wrong, in jsonschema's words."""
        self.json_path = json_path
        """JSONPath of the offending value, `$` for the document root."""
        self.schema = schema
        """The schema's `$id`, with a `#/$defs/...` fragment for a definition."""


class OtlpExportError(CaptureError, RuntimeError):
    """Spans could not be sent to the OTLP endpoint (refused, unreachable, or no `[otel]` extra)."""


class AtifMappingError(CaptureError, ValueError):
    """A rollout that cannot be written as an ATIF trajectory; the message says why."""
