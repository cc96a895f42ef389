"""The JSON Schema (draft 2020-12) of the golden law vectors, written beside them. Every field is
constrained: exact fractions are non-negative with a positive denominator (non-finite strings
only in raw input rows), masses and probabilities lie in [0, 1], uniforms in [0, 1), the filter
order is one of the reference's, and there is at least one case. What a schema cannot say (a
row sums to 1, a float is its fraction, a uniform list holds one entry per draft) the C
consumer checks (``examples/engine_ci/golden_c/check_golden.c``)."""

from __future__ import annotations

from typing import Any

from specproof.reference.filters import FILTER_ORDERS

from .vectors import FORMAT, VERSION

EXACT = r"(0|[1-9][0-9]*)(/[1-9][0-9]*)?"
FRACTION = {"type": "string", "pattern": f"^{EXACT}$"}
"""An exact non-negative fraction a or a/b (b > 0), as ``str(Fraction)`` writes it."""
RAW_MASS = {"type": "string", "pattern": f"^({EXACT}|nan|inf|-inf)$"}
"""A raw input mass: an exact fraction, or non-finite in the cases the reference refuses."""
MAYBE_FLOAT = {"type": ["number", "null"]}
MASS_FLOAT = {"type": "number", "minimum": 0, "maximum": 1}
UNIFORM_FLOAT = {"type": "number", "minimum": 0, "exclusiveMaximum": 1}
TOKEN = {"type": "integer", "minimum": 0}
TOKENS = {"type": "array", "items": TOKEN, "minItems": 1}


def _rows(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "array", "items": item, "minItems": 1}}


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
        "temperature_float": {"type": "number", "minimum": 0},
        "top_k": {"type": ["integer", "null"], "minimum": 1},
        "top_p": _optional(FRACTION),
        "top_p_float": _optional({"type": "number", "exclusiveMinimum": 0, "maximum": 1}),
        "min_p": _optional(FRACTION),
        "min_p_float": _optional(MASS_FLOAT),
        "filter_order": {"type": "string", "enum": list(FILTER_ORDERS)},
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
        "draft_ids": {"type": "array", "items": TOKEN},
        "target_probs": _rows(RAW_MASS),
        "target_probs_float": _rows(_optional(MASS_FLOAT)),
        "target_logits": _rows(MAYBE_FLOAT),
        "draft_probs": _rows(RAW_MASS),
        "draft_probs_float": _rows(_optional(MASS_FLOAT)),
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
        "emitted": TOKENS,
        "probability": FRACTION,
        "probability_float": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
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
        "accept_uniforms_float": {"type": "array", "items": UNIFORM_FLOAT},
        "draw_uniform": FRACTION,
        "draw_uniform_float": UNIFORM_FLOAT,
        "accepted": {"type": "integer", "minimum": 0},
        "emitted": TOKENS,
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
                "processed_target_float": _rows(MASS_FLOAT),
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
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["name", "description", "inputs", "expected"],
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
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
