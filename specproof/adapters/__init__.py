"""specproof.adapters: engines as the audit sees them (an ``Engine``: a generate loop and the
target's processed law), one module per engine.

- ``hf``: HF transformers' assisted generation; ``hf_mutants``: glue bugs injected into it.
- ``vllm_engine``, ``vllm_sampler``: vLLM's offline engine and its rejection sampler, in place.
- ``llamacpp_engine``, ``mlx_engine``, ``openvino_engine``, ``ortgenai_engine``: llama.cpp
  (llama-cpp-python), mlx-lm, OpenVINO GenAI and ONNX Runtime GenAI, in place;
  ``llamaserver_engine``: llama.cpp's server, a child process asked over HTTP.
- ``configurations``: an engine's configurations, each drafter beside its control.
- ``beside_hf``: how every real engine ends (logit gap to HF on the same weights, the audit at a
  tolerance covering it, the results-file record); ``recipe``: glue for an engine on a GPU box.

A new engine is one module here, a nox session with its own venv, and its name in
:mod:`specproof.tables.real_audit`.
"""
