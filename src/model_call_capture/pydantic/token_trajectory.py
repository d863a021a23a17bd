# Generated from schemas/v1/token-trajectory.schema.json by `python codegen/generate.py`; do not edit by hand.
from __future__ import annotations

from typing import Annotated

from ._base import JsonModel
from pydantic import ConfigDict, Field, StrictFloat, StrictInt, StrictStr
from typing_extensions import TypeAliasType

TokenId = TypeAliasType("TokenId", Annotated[StrictInt, Field(ge=0, le=2147483647)])


LossMaskItem = TypeAliasType("LossMaskItem", Annotated[StrictInt, Field(ge=0, le=1)])


class TokenTrajectory(JsonModel):
    """
    One token sequence of a rollout for training: chained calls, with what the model generated.

    Built by `build_token_trajectories` (docs/formats.md, "Token trajectories"): the last
    call's prompt and generated ids, every earlier call of the chain being a prefix of it.
    `token_ids`, `loss_mask` and `log_probs` have the same length.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    rollout_id: StrictStr | None
    """
    The rollout the calls were captured under; null when the caller did not say.
    """
    model_call_ids: list[StrictStr | None]
    """
    The calls of the chain, in order; each one's prompt starts with the previous one's prompt and generation.
    """
    token_ids: list[TokenId]
    """
    The last call's prompt token ids followed by its generated ids.
    """
    loss_mask: list[LossMaskItem]
    """
    1 for a token a call of this chain generated, 0 for prompt, tool and template tokens.
    """
    log_probs: list[StrictFloat | None]
    """
    The log-probability of each generated token; null for other tokens and where the server gave none.
    """
    break_reasons: list[StrictStr]
    """
    Why this chain does not continue an earlier one (`code: detail`); empty for the rollout's first chain.
    """
