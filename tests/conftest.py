import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# the published measured runs ship with the repository (validation/, copied from the project's shared data)
VALIDATION = ROOT / "validation"
CALIBRATION_CSV = VALIDATION / "calibration_runs.csv"
INFERENCE_CSV = VALIDATION / "inference_runs.csv"


@pytest.fixture(scope="session")
def calibration_csv():
    return CALIBRATION_CSV


@pytest.fixture(scope="session")
def inference_csv():
    return INFERENCE_CSV
