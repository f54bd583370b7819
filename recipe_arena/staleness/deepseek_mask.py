"""DeepSeek's off-policy sequence bound and stale-token mask (DeepSeek-AI 2026,
"DeepSeek-V4.1-Flash", arXiv:2609.19969; seed Table 9.2, row "Stale data").

    sequence b dropped  iff  A_b < 0  and  mean_t (logp_behavior(y_bt) - logp_theta(y_bt)) > delta
    token t masked      iff  learner_version - version_t > max_token_lag

The sequence bound drops negative-advantage rollouts the current policy has moved far
from (their mean log-ratio estimates KL(behaviour || theta) on the sampled tokens):
pushing down tokens the policy no longer produces teaches little and destabilises.
The token mask zeroes the loss on tokens sampled too many versions ago, so a long
rollout that spans several in-flight updates still trains its recent tokens. The loss
normalises over what is left. With ``routing_replay`` the trainer's forward on a
mixture-of-experts model replays the experts the engine chose (below); the engine keeps its KV cache across updates
(``engine.keep_kv_on_update``).

Routing replay: the (DeepSeek-V3.2's "keep routing") experts each token was routed to
when the engine sampled it are recorded (``engines.routing``) and replayed here, with
gate weights recomputed from the live router scores, so the router still learns:

    e_t = experts the engine chose for token t,   g_t,e = softmax(W_router h_t)_e / sum_{e' in e_t} softmax(W_router h_t)_e'

Without replay a weight update (or a numerical difference between the two sides) can
send a token to other experts in the trainer than in the engine, and its log-probability
then differs for a reason that has nothing to do with the policy's change.

Deviation: the report gives no values of delta and of the lag; ours are below.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from recipe_arena.core.hooks import ForwardHooks
from recipe_arena.core.lazy import torch
from recipe_arena.staleness.base import StalenessInput, StalenessResult, masked_mean
from recipe_arena.strategy import Strategy, StrategyParams

if TYPE_CHECKING:
    from torch import nn

    from recipe_arena.core.types import LearnerBatch


class DeepSeekMaskParams(StrategyParams):
    name: Literal["deepseek_mask"] = "deepseek_mask"
    delta: float = Field(0.05, ge=0, examples=[1.0])
    """Off-policy bound (nats per token, >= 0): a negative-advantage sequence whose mean
    logp_behavior - logp_theta exceeds it is dropped. Ours; small because the micro
    model's engine and trainer agree to ~1e-6 and one in-flight update moves a token by
    a few hundredths of a nat."""
    max_token_lag: int = Field(1, ge=0, examples=[2])
    """Tokens sampled more than this many policy versions before the learner's are
    masked (versions, >= 0). Binds only when it is below ``rl.max_staleness``."""
    routing_replay: bool = True
    """Mixture-of-experts models: replay the engine's expert choices in the trainer's
    forward (gate weights from the live router); no effect on dense models."""


def deepseek_mask(inp: StalenessInput, params: DeepSeekMaskParams) -> StalenessResult:
    """Sequence bound and stale-token mask (module docstring); w_t = 1, extra_t = 0."""
    mask_BL = inp.mask_BL
    n_B = mask_BL.sum(-1).clamp(min=1.0)
    log_ratio_BL = (inp.behavior_logprobs_BL - inp.logprobs_BL.detach()) * mask_BL
    kl_B = log_ratio_BL.sum(-1) / n_B
    # a row's advantage: every trained token of a row carries the sequence's advantage
    adv_B = (inp.advantages_BL * mask_BL).sum(-1) / n_B
    drop_B = (adv_B < 0) & (kl_B > params.delta)
    stale_BL = (inp.learner_version - inp.versions_BL) > params.max_token_lag
    keep_BL = mask_BL * (~drop_B).float()[:, None] * (~stale_BL).float()
    has_B = (mask_BL.sum(-1) > 0).float()
    n_seq = float(has_B.sum().clamp(min=1.0))
    return StalenessResult(
        token_weights_BL=torch.ones_like(mask_BL),
        extra_loss_BL=torch.zeros_like(mask_BL),
        mask_BL=keep_BL,
        metrics={
            "staleness/masked_seq_frac": float((drop_B.float() * has_B).sum()) / n_seq,
            "staleness/masked_token_frac": masked_mean(1.0 - keep_BL, mask_BL),
            "staleness/stale_token_frac": masked_mean(stale_BL.float(), mask_BL),
            "staleness/offpolicy_kl_mean": float((kl_B * has_B).sum()) / n_seq,
        },
    )


@contextmanager
def replay_routing(model: nn.Module, expert_ids_BLNK: torch.Tensor | None) -> Iterator[None]:
    """Within the block, every forward of ``model`` over a (B, L) batch routes token
    (b, l) at MoE layer n to ``expert_ids_BLNK[b, l, n]`` where those ids are >= 0 (the
    engine's choice) and to the live top-k elsewhere (padding, positions never fed to
    the engine). ``None`` or a dense model: no change."""
    from recipe_arena.models.moe import moe_routers

    routers = moe_routers(model)
    if expert_ids_BLNK is None or not routers:
        yield
        return
    if expert_ids_BLNK.shape[2] != len(routers):
        raise ValueError(
            f"routing replay: ids for {expert_ids_BLNK.shape[2]} MoE layers, model has {len(routers)}"
        )
    handles = [
        router.register_forward_hook(_replay_hook(expert_ids_BLNK[:, :, n]))
        for n, router in enumerate(routers)
    ]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def _replay_hook(ids_BLK: torch.Tensor) -> Any:
    flat_ids = ids_BLK.reshape(-1, ids_BLK.shape[-1]).long()

    def hook(
        module: nn.Module, args: Any, output: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        logits, weights, live = output
        if live.shape != flat_ids.shape:
            raise ValueError(
                f"routing replay: router saw {tuple(live.shape)} token slots, ids give {tuple(flat_ids.shape)}"
            )
        ids = torch.where(flat_ids >= 0, flat_ids.to(live.device), live)
        probs = torch.softmax(logits.float(), dim=-1)
        gate = probs.gather(-1, ids)
        gate = gate / gate.sum(-1, keepdim=True)
        return logits, gate.to(weights.dtype), ids

    return hook


def routing_hooks(params: DeepSeekMaskParams) -> ForwardHooks:
    """With ``routing_replay``: every trainer forward replays the engine's routing."""
    if not params.routing_replay:
        return ForwardHooks()

    def replay(model: nn.Module, batch: LearnerBatch) -> AbstractContextManager[None]:
        return replay_routing(model, batch.expert_ids_BLNK)

    return ForwardHooks(forward=(replay,))


STRATEGY = Strategy(DeepSeekMaskParams, deepseek_mask, learner_hooks=routing_hooks)
