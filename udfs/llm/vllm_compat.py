"""Ray Serve LLM's callback for the vLLM replicas (``LLMConfig`` ``callback_config``).

Ray Serve LLM 2.60 reads vLLM's tokenization service from the engine's app state under the name
vLLM gave it before 0.30 (``openai_serving_tokenization``); vLLM 0.32, the CPU build the project
tests with, names it ``serving_tokenization``, and ``/tokenize`` then answers that the model has
no tokenization task. Before the engine starts, ``VllmCompat`` makes the state Ray is about to
create answer the old name with the new one; with a vLLM that still sets the old name nothing
changes.

Imported only inside a vLLM replica (Ray loads the class by its dotted name), where ``ray.llm``
and vLLM import.
"""

from __future__ import annotations

from typing import Any

from ray.llm._internal.common.callbacks.base import CallbackBase
from starlette.datastructures import State


class TokenizeAliasState(State):
    """Starlette's app state, with ``openai_serving_tokenization`` falling back to ``serving_tokenization``."""

    def __getattr__(self, key: Any) -> Any:
        try:
            return super().__getattr__(key)
        except AttributeError:
            if key != "openai_serving_tokenization":
                raise
            return super().__getattr__("serving_tokenization")


class VllmCompat(CallbackBase):
    async def on_before_node_init(self) -> None:
        from ray.llm._internal.serve.engines.vllm import vllm_engine

        # the engine builds its state with this module's State after the callbacks have run
        vllm_engine.State = TokenizeAliasState
