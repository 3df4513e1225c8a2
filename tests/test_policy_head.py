"""policy.hf.contiguous_head: the LM head gets a contiguous input, so torch never copies a frozen head's weight once
per row when it scores the last position of each row (`logits_to_keep=1`)."""

import torch

from murphy_lab.policy.hf import contiguous_head


class Tiny(torch.nn.Module):
    def __init__(self, hidden=64, vocab=20_000):
        super().__init__()
        self.lm_head = torch.nn.Linear(hidden, vocab, bias=False, dtype=torch.bfloat16).requires_grad_(
            False
        )  # frozen (PEFT)

    def get_output_embeddings(self):
        return self.lm_head

    def forward(self, hidden):
        return self.lm_head(
            hidden[:, -1:, :]
        )  # the last position: a strided view, as logits_to_keep=1 makes it


def largest_allocation(model, hidden) -> int:
    with torch.no_grad(), torch.profiler.profile(profile_memory=True) as prof:
        model(hidden)
    return max((e.cpu_memory_usage for e in prof.events() if e.name.startswith("aten::empty")), default=0)


def test_the_head_sees_a_contiguous_input_and_gives_the_same_logits():
    torch.manual_seed(0)
    model, hidden = Tiny(), torch.randn(16, 30, 64, dtype=torch.bfloat16)
    weight_bytes = model.lm_head.weight.numel() * model.lm_head.weight.element_size()
    with torch.no_grad():
        before = model(hidden)
    unfixed = largest_allocation(model, hidden)
    contiguous_head(model)
    contiguous_head(model)  # once per model
    assert len(model.lm_head._forward_pre_hooks) == 1
    seen = []
    model.lm_head.register_forward_pre_hook(lambda m, a: seen.append(a[0].is_contiguous()))
    with torch.no_grad():
        after = model(hidden)
    assert seen == [True] and torch.equal(before, after)
    fixed = largest_allocation(model, hidden)
    assert fixed < weight_bytes  # no per-row copy of the weight
    # torch 2.13 on a CPU, in bf16, copies the weight once per row without the hook (why it exists)
    assert unfixed >= 16 * weight_bytes or unfixed < weight_bytes
