import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CALIBRATION_CSV = SHARED / "validation" / "calibration_runs.csv"


@pytest.fixture(scope="session")
def calibration_csv():
    if not CALIBRATION_CSV.exists():
        pytest.skip("shared/validation/calibration_runs.csv is not beside the repository")
    return CALIBRATION_CSV
