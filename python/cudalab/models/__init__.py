"""Models written with cudalab's ops, each beside the same model in plain PyTorch (same parameter
names, so one state_dict loads into either): what the ops give in a whole training step."""

import functools

from .gpt import Gpt, GptConfig
from .llama import Llama, LlamaConfig

# The models the command lines build, by name: each class's defaults (the sizes the tables of
# docs/models.md were first measured at), and the sizes most trained in each family. GPT-2 small's
# vocabulary of 50257 is padded to 50304, a multiple of 128, as llm.c and nanoGPT pad it. The
# Llama 3.2 1B shapes keep this Llama's untied LM head (1.5B parameters where Meta's tied one has 1.24B).
MODELS = {
    "gpt": (Gpt, GptConfig),
    "gpt2-124m": (Gpt, functools.partial(GptConfig, layers=12, d_model=768, head_dim=64, vocab=50304, seq=1024)),
    "llama": (Llama, LlamaConfig),
    "llama-1b": (
        Llama,
        functools.partial(
            LlamaConfig, layers=16, d_model=2048, heads=32, kv_heads=8, mlp=8192, vocab=128256, seq=4096
        ),
    ),
}
