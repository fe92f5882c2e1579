"""cudalab.models: the GPT and the Llama built from torch.nn run and share their state_dict with the
cudalab-built ones everywhere; on a GPU the two agree on the loss and every parameter's gradient of
one step, and the torch-built Llama agrees with Hugging Face's LlamaForCausalLM where transformers is
installed."""

import dataclasses
import json

import pytest
import torch

from cudalab.models import MODELS
from cudalab.models.__main__ import main
from cudalab.models.gpt import Gpt, GptConfig
from cudalab.models.llama import Llama, LlamaConfig
from conftest import requires_cuda

TINY = {
    "gpt": (Gpt, GptConfig(layers=2, d_model=128, vocab=300, seq=64)),
    "llama": (Llama, LlamaConfig(layers=2, d_model=256, heads=2, kv_heads=1, mlp=512, vocab=300, seq=64)),
}


def batch(config, device, size=2):
    generator = torch.Generator(device=device).manual_seed(3)
    tokens = torch.randint(0, config.vocab, (size, config.seq + 1), device=device, generator=generator)
    return tokens[:, :-1], tokens[:, 1:]


@pytest.mark.parametrize("name", list(TINY))
def test_torch_built_model_trains_on_cpu_and_shares_its_state_dict(name):
    model_class, config = TINY[name]
    model = model_class(config, "torch")
    loss = model(*batch(config, "cpu"))
    loss.backward()
    assert abs(loss.item() - torch.log(torch.tensor(float(config.vocab))).item()) < 0.5  # near uniform at init
    ours = model_class(config, "cudalab")
    assert ours.load_state_dict(model.state_dict()) is not None
    assert list(ours.state_dict()) == list(model.state_dict())


def test_models_command_needs_a_gpu_or_says_so():
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present; this checks the message without one")
    assert main(["--model", "llama"]) == 3


@requires_cuda
@pytest.mark.parametrize("name", list(TINY))
@pytest.mark.parametrize("fused_head", [False, True])
def test_cudalab_built_model_matches_the_torch_built_one(name, fused_head):
    model_class, config = TINY[name]
    reference = model_class(config, "torch").cuda().to(torch.bfloat16)
    ours = model_class(dataclasses.replace(config, fused_head=fused_head), "cudalab").cuda().to(torch.bfloat16)
    ours.load_state_dict(reference.state_dict())
    tokens, targets = batch(config, "cuda")
    loss_ref, loss = reference(tokens, targets), ours(tokens, targets)
    assert abs(loss.item() - loss_ref.item()) <= 2e-2 * abs(loss_ref.item())
    loss_ref.backward()
    loss.backward()
    theirs = dict(reference.named_parameters())
    for key, p in ours.named_parameters():
        g, r = p.grad.double(), theirs[key].grad.double()
        # bf16 end to end, two different orders of every sum: a few bf16 units of the gradient's size.
        assert (g - r).norm() <= 0.05 * r.norm() + 1e-6, key


@requires_cuda
def test_torch_built_llama_matches_hugging_face():
    transformers = pytest.importorskip("transformers")
    _, config = TINY["llama"]
    ours = Llama(config, "torch").cuda()
    hf_config = transformers.LlamaConfig(
        vocab_size=config.vocab,
        hidden_size=config.d_model,
        intermediate_size=config.mlp,
        num_hidden_layers=config.layers,
        num_attention_heads=config.heads,
        num_key_value_heads=config.kv_heads,
        max_position_embeddings=config.seq,
        rope_theta=config.rope_theta,
        rms_norm_eps=config.eps,
        tie_word_embeddings=False,
        attn_implementation="sdpa",
    )
    theirs = transformers.LlamaForCausalLM(hf_config).cuda()
    theirs.load_state_dict(ours.state_dict())
    tokens, targets = batch(config, "cuda")
    with torch.no_grad():
        hf_loss = torch.nn.functional.cross_entropy(theirs(tokens).logits.reshape(-1, config.vocab), targets.reshape(-1))
        assert abs(ours(tokens, targets).item() - hf_loss.item()) <= 1e-4 * hf_loss.item()


def test_models_command_refuses_bad_sizes_before_looking_for_a_gpu():
    assert main(["--batch", "0"]) == 2
    assert main(["--model", "llama", "--seq", "-1"]) == 2
    assert main(["--vocab", "0"]) == 2
    assert main(["--rounds", "0"]) == 2


def test_models_command_refuses_a_parity_of_no_steps_and_compile_with_parity():
    assert main(["--parity", "0"]) == 2
    assert main(["--parity", "3", "--compile"]) == 2
    assert main(["--model", "gpt", "--generate", "8"]) == 2  # the Llama decodes
    assert main(["--model", "llama", "--generate", "0"]) == 2
    assert main(["--model", "gpt", "--hf"]) == 2  # Hugging Face's Llama only
    assert main(["--model", "gpt2-124m", "--generate", "8"]) == 2
    assert main(["--model", "llama", "--hf", "--parity", "3"]) == 2


@pytest.mark.parametrize("name, millions", [("gpt2-124m", 124.48), ("llama-1b", 1498.48)])
def test_named_sizes_have_their_familys_parameter_counts(name, millions):
    model_class, make_config = MODELS[name]
    with torch.device("meta"):  # the shapes alone: no memory for 1.5B parameters on CI's machine
        model = model_class(make_config(), "torch")
    assert sum(p.numel() for p in model.parameters()) / 1e6 == pytest.approx(millions, abs=0.01)
    assert main(["--model", name, "--generate", "0"]) == 2  # named sizes take the same checks


def test_llama_only_modes_take_the_named_llama(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["--model", "llama-1b", "--generate", "8"]) == 3  # past the checks: no GPU here
    assert main(["--model", "llama-1b", "--hf"]) == 3
    assert main(["--model", "gpt2-124m", "--generate", "8"]) == 2
    assert main(["--model", "gpt2-124m", "--hf"]) == 2


def test_out_of_gpu_memory_is_one_line_and_exit_4(monkeypatch, tmp_path, capsys):
    import cudalab.models.__main__ as command

    def too_big(*args):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 GiB\nmore detail")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "a GPU")
    monkeypatch.setattr(command, "_gemms", too_big)
    out = tmp_path / "r.json"
    assert main(["--model", "llama-1b", "--gemms", "--json", str(out)]) == 4
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "Tried to allocate 64.00 GiB" in error[0] and "lower --batch" in error[0]
    assert json.loads(out.read_text())["failed"].startswith("out of GPU memory")  # what it knew is kept


def test_gemm_products_list_every_linear_and_the_tied_head():
    from cudalab.models.__main__ import gemm_products

    gpt = GptConfig()
    assert gemm_products(Gpt, gpt) == {
        (1024, 3072, True): 8, (1024, 1024, True): 8, (1024, 4096, False): 8, (4096, 1024, True): 8,
        (1024, 50304, False): 1,  # the head, tied to the embedding
    }
    llama = LlamaConfig()
    q_k_v = (llama.heads + 2 * llama.kv_heads) * llama.head_dim
    assert gemm_products(Llama, llama) == {
        (2048, q_k_v, False): 4, (2048, 2048, False): 4, (2048, 2 * 5632, False): 4, (5632, 2048, False): 4,
        (2048, 32000, False): 1,
    }
    assert main(["--gemms", "--parity", "2"]) == 2
    assert main(["--model", "llama", "--gemms", "--generate", "4"]) == 2
    assert main(["--gemms", "--compile"]) == 2


@requires_cuda
def test_gemms_time_each_product_both_ways(tmp_path):
    from cudalab.models.__main__ import gemm_products

    out = tmp_path / "gemms.json"
    assert main(["--gemms", "--layers", "1", "--seq", "64", "--batch", "2", "--vocab", "256", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    shapes = gemm_products(Gpt, GptConfig(layers=1, seq=64, vocab=256))
    assert len(result["gemms"]) == 3 * len(shapes)
    assert all(row["torch_us"] > 0 and row["cudalab_us"] > 0 and row["tokens"] == 128 for row in result["gemms"])
    assert result["gemm_ms"]["torch"] > 0 and result["gemm_ms"]["cudalab"] > 0


@requires_cuda
def test_speed_run_times_each_model_in_rounds(tmp_path):
    out = tmp_path / "speed.json"
    assert main(["--layers", "1", "--seq", "64", "--batch", "2", "--vocab", "256", "--steps", "2", "--rounds", "3",
                 "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["rounds"] == 3 and result["cudalab_over_torch"] > 0
    for name in ("torch", "cudalab"):
        row = result[name]
        assert len(row["step_ms_rounds"]) == 3 and row["step_ms"] == sorted(row["step_ms_rounds"])[1]
        assert row["peak_gib"] > 0 and row["profile"]["kernel_ms"] > 0 and row["tokens_per_s"] > 0


@requires_cuda
def test_parity_run_compares_losses_and_gradients(tmp_path):
    out = tmp_path / "parity.json"
    arguments = ["--model", "gpt", "--layers", "2", "--seq", "64", "--batch", "2", "--parity", "6", "--json", str(out)]
    status = main(arguments)
    parity = json.loads(out.read_text())["parity"]
    assert status == 0 and parity["steps"] == 6 and len(parity["losses"]) == 6
    assert parity["largest_relative_loss_difference"] <= parity["tolerance"]
    assert len(parity["gradients_at_step_0"]) == len(list(Gpt(GptConfig(layers=2, seq=64), "torch").parameters()))


@requires_cuda
def test_hugging_face_training_step_is_timed_patched_and_unpatched(tmp_path):
    pytest.importorskip("transformers")
    out = tmp_path / "hf.json"
    status = main(["--model", "llama", "--hf", "--layers", "1", "--seq", "64", "--batch", "2", "--steps", "2",
                   "--json", str(out)])
    result = json.loads(out.read_text())
    assert status == 0
    losses = [result[name]["last_loss"] for name in ("transformers", "cudalab.patch", "cudalab")]
    # The same weights and batch, five steps of AdamW at lr 1e-4 on one batch of 128 tokens, which a
    # model of 150M parameters learns: from log(32000) = 10.4 to about 0.01 in each build, apart by
    # bf16's rounding (a build that did not learn would stay near 10).
    assert max(losses) <= 0.1 and max(losses) - min(losses) <= 0.01, losses
    assert set(result["liger"]) & {"step_ms", "skipped", "failed"}
    # Each model has its own configuration: cudalab.patch's attention stays on the patched model.
    for name in ("transformers", "liger"):
        kernels = [row["kernel"] for row in result[name].get("profile", {}).get("top", [])]
        assert not any("attention_variants" in kernel for kernel in kernels), (name, kernels)


def greedy_without_a_cache(model, prompt, new_tokens):
    """The reference decoding: the whole sequence again for every new token."""
    tokens = prompt
    with torch.no_grad():
        for _ in range(new_tokens):
            next_token = model.lm_head(model.hidden(tokens)[:, -1]).argmax(-1, keepdim=True)
            tokens = torch.cat([tokens, next_token], 1)
    return tokens


def test_generation_with_a_cache_chooses_what_recomputation_does_on_the_cpu():
    model_class, config = TINY["llama"]
    model = model_class(config, "torch")
    prompt = torch.randint(0, config.vocab, (2, 9), generator=torch.Generator().manual_seed(4))
    assert torch.equal(model.generate(prompt, 12), greedy_without_a_cache(model, prompt, 12))
    with pytest.raises(ValueError, match="must fit 64 positions"):
        model.generate(prompt, 60)


@requires_cuda
def test_cudalab_built_generation_matches_the_torch_built_one():
    model_class, config = TINY["llama"]
    reference = model_class(config, "torch").cuda()
    ours = model_class(config, "cudalab").cuda()
    ours.load_state_dict(reference.state_dict())
    prompt = torch.randint(0, config.vocab, (3, 16), device="cuda", generator=torch.Generator("cuda").manual_seed(5))
    # fp32 end to end: the same greedy choices (the two builds sum in other orders, far below the
    # gaps between a tiny model's top logits).
    assert torch.equal(ours.generate(prompt, 20), reference.generate(prompt, 20))
