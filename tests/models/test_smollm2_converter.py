"""Fetching SmolLM2 without the packages its GGUF conversion needs: one line naming them and
exit 2, before anything is fetched (from the fetch command and from the engine audit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specproof.models import smollm2 as smollm2_model
from specproof.runners import real_audit
from specproof.runners import smollm2 as smollm2_runner

ABSENT = "specproof_absent_package_for_this_test"


@pytest.fixture
def converter_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("SPECPROOF_CACHE", str(tmp_path))
    monkeypatch.setattr(smollm2_model, "CONVERTER_PACKAGES", ("transformers", ABSENT))
    return tmp_path


def test_fetch_names_the_missing_package_and_fetches_nothing(
    converter_missing: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert smollm2_runner.main([]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert ABSENT in err and "specproof[smollm2]" in err
    assert list(converter_missing.iterdir()) == []


def test_engine_audit_refuses_before_any_work(
    converter_missing: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        real_audit.main(["hf", "--model", "smollm2"])
    assert stop.value.code == 2
    assert ABSENT in capsys.readouterr().err
    assert list(converter_missing.iterdir()) == []


def test_a_converted_cache_needs_no_converter(converter_missing: Path) -> None:
    (converter_missing / "smollm2-135m-instruct" / "float32").mkdir(parents=True)
    assert smollm2_model.is_converted()
