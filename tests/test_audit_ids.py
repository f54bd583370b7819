"""The audit's quarantine names a task by its domain and id, not by its id alone."""

from __future__ import annotations

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.micro import generate_split
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.audit import apply_quarantine, run_audit


def test_a_quarantined_task_drops_no_row_of_another_domain_with_its_id() -> None:
    """Attack: rows read from files (``world.train_path``) that number each domain's rows
    alike. An IFEval row ``7`` asks for no commas in a prompt that holds none, so the
    audit's ``prompt_echo`` probe (the prompt copied) follows it and the row is
    quarantined; a micro math row renamed ``7`` accepts none of the math probes (the
    exact verifier). By hand: the math row's probes are all rejected, so with
    ``audit_quarantine`` on it must be kept and the IFEval row dropped: kept == [math
    row]. Before, the quarantine matched ids alone and dropped both (kept == [])."""
    echo_ok = PromptRow(
        id="7",
        messages=[{"role": "user", "content": "Write about snow without commas."}],
        ground_truth={"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
        domain="ifeval",
    )
    math = generate_split("math", "train", 1, seed=1)[0].model_copy(update={"id": "7"})
    cfg = RewardsConfig(workers=1, audit_quarantine=True)
    report = run_audit({"data/ifeval": [echo_ok], "data/math": [math]}, cfg)
    accepted = {(p.domain, p.hack) for p in report.probes if p.accepted}
    assert ("ifeval", "prompt_echo") in accepted
    assert not any(d == "math" for d, _ in accepted)
    assert apply_quarantine([echo_ok, math], report, cfg) == [math]
    assert report.quarantined_rows() == {("ifeval", "7")}
