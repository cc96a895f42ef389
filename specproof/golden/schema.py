"""The JSON Schema (draft 2020-12) of the golden law vectors, written beside them."""

from __future__ import annotations

from typing import Any

from .vectors import FORMAT, VERSION

FRACTION = {"type": "string", "pattern": r"^(-?[0-9]+(/[0-9]+)?|nan|inf|-inf)$"}
MAYBE_FLOAT = {"type": ["number", "null"]}


def _rows(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "array", "items": item}}


def _optional(item: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [item, {"type": "null"}]}


SAMPLING = {
    "type": "object",
    "required": [
        "temperature",
        "temperature_float",
        "top_k",
        "top_p",
        "top_p_float",
        "min_p",
        "min_p_float",
        "filter_order",
        "greedy",
    ],
    "properties": {
        "temperature": FRACTION,
        "temperature_float": {"type": "number"},
        "top_k": {"type": ["integer", "null"], "minimum": 1},
        "top_p": _optional(FRACTION),
        "top_p_float": MAYBE_FLOAT,
        "min_p": _optional(FRACTION),
        "min_p_float": MAYBE_FLOAT,
        "filter_order": {"type": "string"},
        "greedy": {"type": "boolean"},
    },
    "additionalProperties": False,
}
INPUTS = {
    "type": "object",
    "required": [
        "vocab",
        "draft_ids",
        "target_probs",
        "target_probs_float",
        "target_logits",
        "draft_probs",
        "draft_probs_float",
        "draft_logits",
        "sampling",
    ],
    "properties": {
        "vocab": {"type": "integer", "minimum": 1},
        "draft_ids": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "target_probs": _rows(FRACTION),
        "target_probs_float": _rows(MAYBE_FLOAT),
        "target_logits": _rows(MAYBE_FLOAT),
        "draft_probs": _rows(FRACTION),
        "draft_probs_float": _rows(MAYBE_FLOAT),
        "draft_logits": _rows(MAYBE_FLOAT),
        "sampling": SAMPLING,
    },
    "additionalProperties": False,
}
OUTCOME = {
    "type": "object",
    "required": ["accepted", "emitted", "probability", "probability_float"],
    "properties": {
        "accepted": {"type": "integer", "minimum": 0},
        "emitted": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1},
        "probability": FRACTION,
        "probability_float": {"type": "number"},
    },
    "additionalProperties": False,
}
WITH_UNIFORMS = {
    "type": "object",
    "required": [
        "accept_uniforms",
        "accept_uniforms_float",
        "draw_uniform",
        "draw_uniform_float",
        "accepted",
        "emitted",
    ],
    "properties": {
        "accept_uniforms": {"type": "array", "items": FRACTION},
        "accept_uniforms_float": {"type": "array", "items": {"type": "number"}},
        "draw_uniform": FRACTION,
        "draw_uniform_float": {"type": "number"},
        "accepted": {"type": "integer", "minimum": 0},
        "emitted": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1},
    },
    "additionalProperties": False,
}
EXPECTED = {
    "oneOf": [
        {
            "type": "object",
            "required": ["refused", "reason"],
            "properties": {"refused": {"const": True}, "reason": {"type": "string"}},
            "additionalProperties": False,
        },
        {
            "type": "object",
            "required": [
                "refused",
                "processed_target",
                "processed_target_float",
                "law",
                "with_uniforms",
            ],
            "properties": {
                "refused": {"const": False},
                "processed_target": _rows(FRACTION),
                "processed_target_float": _rows(MAYBE_FLOAT),
                "law": {"type": "array", "items": OUTCOME, "minItems": 1},
                "with_uniforms": {"type": "array", "items": WITH_UNIFORMS},
            },
            "additionalProperties": False,
        },
    ]
}


def golden_schema() -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://specproof/golden/v{VERSION}/chain_vectors.schema.json",
        "title": "specproof golden law vectors for chain verification",
        "type": "object",
        "required": ["format", "version", "convention", "cases"],
        "properties": {
            "format": {"const": FORMAT},
            "version": {"const": VERSION},
            "convention": {"type": "string"},
            "cases": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "description", "inputs", "expected"],
                    "properties": {
                        "name": {"type": "string"},
                        "description": {"type": "string"},
                        "inputs": INPUTS,
                        "expected": EXPECTED,
                    },
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    }
