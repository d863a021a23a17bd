"""model-call-capture: durable, typed capture of every LLM API call made through a model server.

Mount `CaptureMiddleware` (or run `mcc serve`) in front of a model server, prefix model
calls with `/ng-rollout/<rollout_id>`, and read the per-rollout capture files back as
typed `ModelCallRecord`s and `ng_model_call_capture` attachments.
"""

from __future__ import annotations

# First: importing it guards the `mcc` command's start (a Ctrl-C while the rest is
# imported is one line, not a traceback); a program importing the library is unaffected.
from . import _interrupt  # noqa: F401
from .collection import (
    CollectionSummary,
    CollectorBusyError,
    clear_model_call_captures_for_rollouts,
    collect,
    merge_model_call_capture_into_record,
)
from .config import load_capture_config
from .contracts import (
    CaptureConfig,
    CaptureLine,
    ModelCallCapture,
    ModelCallMetrics,
    ModelCallRecord,
    ModelRef,
    ObservationGap,
    TokenTrajectory,
    ToolCall,
)
from .correlation import (
    RolloutCorrelation,
    add_rollout_self_call_route,
    base_url_for_run,
    resolve_model_base_url,
    rollout_id_from_run,
    url_path_for_request,
    url_path_for_run,
)
from .errors import (
    AtifMappingError,
    CaptureConfigError,
    CaptureError,
    DamagedLineError,
    ExportError,
    InvalidRolloutIdError,
    LineTooLongError,
    NotARegularFileError,
    OtlpExportError,
    RolloutSourceError,
    SchemaValidationError,
    UnknownSchemaError,
    UnsupportedFormatError,
)
from .middleware import (
    CaptureMiddleware,
    ModelExecutionOutcome,
    install_model_call_capture,
    start_model_execution,
)
from .reassembly import StreamReassembler, reassemble_stream
from .records import (
    aggregate_model_call_metrics,
    aggregate_model_call_records,
    build_model_call_record,
    read_available_model_call_records,
    read_model_call_records,
)
from .redaction import Redactor
from .rollout_ids import apply_rollout_prefix, rollout_path_prefix
from .store import CaptureStore, Rollout
from .trajectories import build_token_trajectories

__version__ = "0.1.0"

__all__ = [
    "AtifMappingError",
    "CaptureConfig",
    "CaptureConfigError",
    "CaptureError",
    "CaptureLine",
    "CaptureMiddleware",
    "CaptureStore",
    "CollectionSummary",
    "CollectorBusyError",
    "DamagedLineError",
    "ExportError",
    "InvalidRolloutIdError",
    "LineTooLongError",
    "ModelCallCapture",
    "ModelCallMetrics",
    "ModelCallRecord",
    "ModelExecutionOutcome",
    "ModelRef",
    "NotARegularFileError",
    "ObservationGap",
    "OtlpExportError",
    "Redactor",
    "Rollout",
    "RolloutCorrelation",
    "RolloutSourceError",
    "SchemaValidationError",
    "StreamReassembler",
    "TokenTrajectory",
    "ToolCall",
    "UnknownSchemaError",
    "UnsupportedFormatError",
    "add_rollout_self_call_route",
    "aggregate_model_call_metrics",
    "aggregate_model_call_records",
    "apply_rollout_prefix",
    "base_url_for_run",
    "build_model_call_record",
    "build_token_trajectories",
    "clear_model_call_captures_for_rollouts",
    "collect",
    "install_model_call_capture",
    "load_capture_config",
    "merge_model_call_capture_into_record",
    "read_available_model_call_records",
    "read_model_call_records",
    "reassemble_stream",
    "resolve_model_base_url",
    "rollout_id_from_run",
    "rollout_path_prefix",
    "start_model_execution",
    "url_path_for_request",
    "url_path_for_run",
]
