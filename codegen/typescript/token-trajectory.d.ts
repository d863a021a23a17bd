// Generated from schemas/v1/token-trajectory.schema.json by `python codegen/generate.py`; do not edit by hand.
/**
 * One token sequence of a rollout for training: chained calls, with what the model generated.
 *
 * Built by `build_token_trajectories` (docs/formats.md, "Token trajectories"): the last
 * call's prompt and generated ids, every earlier call of the chain being a prefix of it.
 * `token_ids`, `loss_mask` and `log_probs` have the same length.
 */
export interface TokenTrajectory {
  /**
   * The rollout the calls were captured under; null when the caller did not say.
   */
  rollout_id: string | null;
  /**
   * The calls of the chain, in order; each one's prompt starts with the previous one's prompt and generation.
   */
  model_call_ids: (string | null)[];
  /**
   * The last call's prompt token ids followed by its generated ids.
   */
  token_ids: number[];
  /**
   * 1 for a token a call of this chain generated, 0 for prompt, tool and template tokens.
   */
  loss_mask: number[];
  /**
   * The log-probability of each generated token; null for other tokens and where the server gave none.
   */
  log_probs: (number | null)[];
  /**
   * Why this chain does not continue an earlier one (`code: detail`); empty for the rollout's first chain.
   */
  break_reasons: string[];
  [k: string]: unknown;
}
