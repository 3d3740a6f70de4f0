import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CALIBRATION_CSV = SHARED / "validation" / "calibration_runs.csv"
INFERENCE_CSV = SHARED / "validation" / "inference_runs.csv"


@pytest.fixture(scope="session")
def calibration_csv():
    if not CALIBRATION_CSV.exists():
        pytest.skip("shared/validation/calibration_runs.csv is not beside the repository")
    return CALIBRATION_CSV


@pytest.fixture(scope="session")
def inference_csv():
    if not INFERENCE_CSV.exists():
        pytest.skip("shared/validation/inference_runs.csv is not beside the repository")
    return INFERENCE_CSV
