"""cudalab.patch on tiny Hugging Face models (no weights are downloaded): everywhere, which modules
it swaps, that the weights stay as they were and what it refuses; on a GPU, the patched model's
logits, loss and gradients against the unpatched one, and decoding with a cache (on
ops.attention_decode): the same greedy tokens in fp32, the same next-token logits in bf16."""

import copy

import pytest
import torch

import cudalab
from conftest import requires_cuda

transformers = pytest.importorskip("transformers")

# One layer of each kind, two query heads per kv head, head_dim 64 (the tensor-core attention's).
LLAMA = dict(vocab_size=320, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
             num_key_value_heads=1, max_position_embeddings=256)


def tiny(name):
    torch.manual_seed(0)
    if name == "gpt2":
        # No dropout (GPT-2's default is 0.1 in three places; Llama's configs have none), so the two
        # models' training-mode forwards are comparable.
        config = transformers.GPT2Config(vocab_size=320, n_positions=256, n_embd=128, n_layer=2, n_head=2,
                                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        return transformers.GPT2LMHeadModel(config)
    if name == "mistral-window":  # a sliding window of 16 keys, shorter than the tests' sequences
        return transformers.MistralForCausalLM(transformers.MistralConfig(**LLAMA, sliding_window=16))
    config_class = {"llama": transformers.LlamaConfig, "mistral": transformers.MistralConfig,
                    "qwen2": transformers.Qwen2Config}[name]
    model_class = {"llama": transformers.LlamaForCausalLM, "mistral": transformers.MistralForCausalLM,
                   "qwen2": transformers.Qwen2ForCausalLM}[name]
    return model_class(config_class(**LLAMA))


@pytest.mark.parametrize("name", ["llama", "mistral", "qwen2", "gpt2"])
def test_patch_swaps_the_modules_and_keeps_the_weights(name):
    model = tiny(name)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert cudalab.patch(model) is model
    after = model.state_dict()
    assert list(after) == list(before) and all(torch.equal(after[k], before[k]) for k in before)
    kinds = {type(m).__name__ for m in model.modules()}
    assert model.config._attn_implementation == "cudalab"
    if name == "gpt2":
        assert {"LayerNorm", "CudalabConv1D", "CudalabGPT2MLP"} <= kinds
        assert all(isinstance(m, cudalab.nn.LayerNorm) for m in model.modules() if isinstance(m, torch.nn.LayerNorm))
    else:
        assert not any(type(m) is torch.nn.Linear for m in model.modules())
        assert any(k.startswith("Cudalab") and k.endswith("RMSNorm") for k in kinds)
        assert any(k.startswith("Cudalab") and k.endswith("MLP") for k in kinds)
        family = __import__(type(model).__module__, fromlist=["apply_rotary_pos_emb"])
        assert hasattr(family.apply_rotary_pos_emb, "cudalab_original")
    cudalab.patch(model)  # twice is once
    assert list(model.state_dict()) == list(before)


def test_patch_refuses_other_models():
    model = transformers.BertModel(transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1,
                                                           num_attention_heads=2, intermediate_size=64))
    with pytest.raises(ValueError, match="cudalab.patch: takes LlamaForCausalLM"):
        cudalab.patch(model)


@requires_cuda
@pytest.mark.parametrize("name", ["llama", "mistral", "qwen2", "gpt2"])
def test_patched_model_matches_the_model(name):
    assert_patched_matches(tiny(name))


@requires_cuda
def test_a_sliding_window_runs_on_cudalab_attention(monkeypatch):
    # Mistral with a window of 16 keys at seq 96: every layer's attention on ops.attention with
    # window_size (15, 0) (transformers' mask left out), and the same logits, loss and gradients.
    windows = []
    attend = cudalab.ops.attention
    monkeypatch.setattr(cudalab.ops, "attention", lambda *a, **k: windows.append(k.get("window_size")) or attend(*a, **k))
    assert_patched_matches(tiny("mistral-window"))
    assert windows == [(15, 0)] * 2


def assert_patched_matches(model):
    reference = model.cuda().to(torch.bfloat16)
    ours = cudalab.patch(copy.deepcopy(reference))
    tokens = torch.randint(0, 320, (2, 96), device="cuda", generator=torch.Generator("cuda").manual_seed(1))
    out_ref = reference(tokens, labels=tokens)
    out = ours(tokens, labels=tokens)
    logits, logits_ref = out.logits.double(), out_ref.logits.double()
    # bf16 end to end with sums in other orders: a few bf16 units of the logits' size.
    assert (logits - logits_ref).norm() <= 0.03 * logits_ref.norm()
    assert abs(out.loss.item() - out_ref.loss.item()) <= 0.01 * out_ref.loss.item()
    out.loss.backward()
    out_ref.loss.backward()
    theirs = dict(reference.named_parameters())
    for key, p in ours.named_parameters():
        g, r = p.grad.double(), theirs[key].grad.double()
        assert (g - r).norm() <= 0.06 * r.norm() + 1e-6, key


@requires_cuda
@pytest.mark.parametrize("name", ["llama", "mistral", "qwen2", "gpt2"])
def test_decoding_steps_run_attention_decode(name, monkeypatch):
    # Three new tokens one at a time after a prompt of 40, each step's logits against the unpatched
    # model's in bf16, and every step's attention on cudalab's decode op (counted).
    calls = []
    decode = cudalab.ops.attention_decode
    monkeypatch.setattr(cudalab.ops, "attention_decode", lambda *a, **k: calls.append(1) or decode(*a, **k))
    reference = tiny(name).cuda().to(torch.bfloat16)
    ours = cudalab.patch(copy.deepcopy(reference))
    tokens = torch.randint(0, 320, (2, 43), device="cuda", generator=torch.Generator("cuda").manual_seed(3))
    with torch.no_grad():
        caches = []
        for model in (reference, ours):
            out = model(tokens[:, :40], use_cache=True)
            caches.append(out.past_key_values)
        for step in range(40, 43):
            logits = []
            for i, model in enumerate((reference, ours)):
                out = model(tokens[:, step : step + 1], past_key_values=caches[i], use_cache=True)
                caches[i] = out.past_key_values
                logits.append(out.logits.double())
            assert (logits[1] - logits[0]).norm() <= 0.03 * logits[0].norm(), step
    assert len(calls) == 3 * 2  # three steps, two layers


@requires_cuda
def test_greedy_decoding_with_a_cache_gives_the_same_tokens():
    reference = tiny("llama").cuda().to(torch.float32)
    ours = cudalab.patch(copy.deepcopy(reference))
    prompt = torch.randint(0, 320, (1, 16), device="cuda", generator=torch.Generator("cuda").manual_seed(2))
    with torch.no_grad():
        expected = reference.generate(prompt, max_new_tokens=8, do_sample=False)
        got = ours.generate(prompt, max_new_tokens=8, do_sample=False)
    assert torch.equal(got, expected)
