"""specproof.adapters: engines as the audit sees them (an ``Engine``: a generate loop and the
target's processed law), one module per engine, each taking the model it is audited on (a
:class:`specproof.models.AuditModel`); nothing here imports a subject.

- ``registry``: the engines as records found by name (``specproof engines``); a new engine is
  one module here, one ``register`` line there, and a nox session with its own venv.
- ``hf``: HF transformers' assisted generation; ``hf_assisted``: its configurations on a model
  (the glue bugs injected into it are subjects: :mod:`specproof.subjects.hf_mutants`).
- ``vllm_engine``, ``vllm_audit``, ``vllm_sampler``, ``vllm_verifier``: vLLM's offline engine,
  its configurations audited in place, its rejection sampler, specproof's step inside it.
- ``llamacpp_engine``, ``mlx_engine``, ``openvino_engine``, ``ortgenai_engine``: llama.cpp
  (llama-cpp-python), mlx-lm, OpenVINO GenAI and ONNX Runtime GenAI, in place;
  ``llamaserver_engine``: llama.cpp's server, a child process asked over HTTP;
  ``dflash_engine``: the DFlash reference implementation (DFlash and DFlash2 drafters);
  ``specproof_dspark``: specproof's own end-to-end decoder (DSpark with Algorithm 1).
- ``configurations``: an engine's configurations, each drafter beside its control;
  ``run_plan``: how much an audit runs.
- ``beside_hf``: how every real engine ends (logit gap to HF on the same weights, the audit at a
  tolerance covering it, the results-file record); ``recipe``: glue for an engine on a GPU box.
"""
