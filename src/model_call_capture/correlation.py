"""Correlating model calls with rollouts: rollout ids, the /ng-rollout/<id> prefix and agent helpers."""

from __future__ import annotations

from typing import Any


def apply_rollout_prefix(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError


def base_url_for_run(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError


def resolve_model_base_url(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError


def rollout_id_from_run(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError


def rollout_path_prefix(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError


def url_path_for_request(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError


def url_path_for_run(*args: Any, **kwargs: Any) -> Any:
    """Not implemented yet."""
    raise NotImplementedError

