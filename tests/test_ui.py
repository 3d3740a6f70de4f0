"""The page's server, through its endpoints (starlette's TestClient): forecasts are flopcast.api's, bad input
is HTTP 400 with one sentence in {"error"}, downloads are the result's JSON, CSV and HTML report."""

import csv
import io
import json

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

import flopcast  # noqa: E402
from flopcast.ui import create_app  # noqa: E402

SMALL = {"model": "narayanan-gpt-1.7b", "hardware": "trn1.32xlarge", "chips": "16", "tokens": "100B"}

QWEN3 = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 2048, "num_hidden_layers": 28,
         "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 6144,
         "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": True, "rope_theta": 1e6}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with TestClient(create_app(tmp_path_factory.mktemp("uploads"))) as c:
        yield c


def test_the_page_is_offline(client):
    r = client.get("/")
    assert r.status_code == 200 and "<script>" in r.text
    assert "http://" not in r.text and "https://" not in r.text and "src=" not in r.text  # nothing fetched


def test_catalog_lists_models_and_systems(client):
    d = client.get("/api/catalog").json()
    assert "llama3-8b" in d["models"] and "trn2.48xlarge" in d["systems"]
    assert d["defaults"]["model"] in d["models"] and d["defaults"]["hardware"] in d["systems"]


def test_a_forecast_is_the_api_result(client):
    r = client.get("/api/train", params=SMALL)
    assert r.status_code == 200
    expected = flopcast.train("narayanan-gpt-1.7b", hardware="trn1.32xlarge", chips=16, tokens="100B").to_dict()
    got = r.json()
    assert got["step_time_s"] == pytest.approx(expected["step_time_s"])
    assert got["layout"] == expected["layout"]
    assert got["memory_breakdown_gib"] == pytest.approx(expected["memory_breakdown_gib"])


def test_more_chips_change_the_forecast(client):
    a = client.get("/api/train", params=SMALL).json()
    b = client.get("/api/train", params={**SMALL, "chips": "32"}).json()
    assert b["chips"] == 32 and b["step_time_s"] < a["step_time_s"]


def test_pinned_layout_fields_are_passed(client):
    d = client.get("/api/train", params={**SMALL, "tp": "2", "pp": "2", "dtype": "bf16"}).json()
    assert (d["layout"]["tp"], d["layout"]["pp"], d["layout"]["dtype"]) == (2, 2, "bf16")


@pytest.mark.parametrize("params,message", [
    ({"chips": "0"}, "`chips` must be a positive whole number, got '0'"),
    ({"chips": "many"}, "`chips` must be a positive whole number"),
    ({"tp": "7"}, "`tp=7`"),
    ({"tokens": "lots"}, "tokens"),
    ({"model": "no-such-model"}, "no-such-model"),
    ({"hardware": "no-such-box"}, "no-such-box"),
    ({"model": "/etc/passwd"}, "name a catalog model, or upload the file"),
    ({"model": "upload:feedbeef"}, "upload the file again"),
    ({"bogus": "1"}, "unknown field(s) bogus"),
])
def test_bad_input_is_400_with_one_sentence(client, params, message):
    r = client.get("/api/train", params={**SMALL, **params})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert message in err and "\n" not in err and "Traceback" not in err


def test_compare_puts_systems_side_by_side(client):
    r = client.get("/api/compare", params={**SMALL, "hardware": "trn1.32xlarge,p5.48xlarge"})
    assert r.status_code == 200
    systems = r.json()["systems"]
    assert list(systems) == ["trn1.32xlarge", "p5.48xlarge"]
    assert all(s["step_time_s"] > 0 for s in systems.values())


def test_compare_needs_two_systems(client):
    r = client.get("/api/compare", params=SMALL)
    assert r.status_code == 400 and "two or more systems" in r.json()["error"]


def test_downloads(client):
    base = {**SMALL, "what": "train"}
    j = client.get("/api/download", params={**base, "format": "json"})
    assert j.status_code == 200 and "attachment" in j.headers["content-disposition"]
    assert json.loads(j.text)["chips"] == 16
    c = client.get("/api/download", params={**base, "format": "csv"})
    rows = list(csv.DictReader(io.StringIO(c.text)))
    assert len(rows) == 1 and float(rows[0]["step_time_s"]) == pytest.approx(json.loads(j.text)["step_time_s"])
    assert "layout/tp" in rows[0]
    cmp = client.get("/api/download", params={**SMALL, "hardware": "trn1.32xlarge,p5.48xlarge", "what": "compare",
                                              "format": "csv"})
    assert [r["system"] for r in csv.DictReader(io.StringIO(cmp.text))] == ["trn1.32xlarge", "p5.48xlarge"]
    bad = client.get("/api/download", params={**base, "format": "xls"})
    assert bad.status_code == 400 and "valid: json, csv, html" in bad.json()["error"]


def test_html_report_download(client):
    pytest.importorskip("matplotlib")
    h = client.get("/api/download", params={**SMALL, "what": "train", "format": "html"})
    assert h.status_code == 200 and h.text.startswith("<!") and "<svg" in h.text


def test_upload_a_config_json_then_forecast_it(client):
    up = client.post("/api/upload", json={"filename": "config.json", "text": json.dumps(QWEN3)})
    assert up.status_code == 200, up.text
    key = up.json()["model"]
    assert key.startswith("upload:") and "no_cost_effect" in up.json()["notes"]
    r = client.get("/api/train", params={**SMALL, "model": key})
    assert r.status_code == 200 and r.json()["step_time_s"] > 0


def test_upload_a_yaml_model(client):
    text = "base: llama3-8b\nlayers: 16\n"
    key = client.post("/api/upload", json={"filename": "half.yaml", "text": text}).json()["model"]
    half = client.get("/api/train", params={**SMALL, "model": key, "hardware": "p5.48xlarge", "chips": "8"}).json()
    full = client.get("/api/train", params={**SMALL, "model": "llama3-8b", "hardware": "p5.48xlarge",
                                            "chips": "8"}).json()
    assert half["step_time_s"] < full["step_time_s"]


@pytest.mark.parametrize("body,message", [
    ({"filename": "config.json", "text": json.dumps({"model_type": "bert", "hidden_size": 8})},
     "unsupported architecture"),
    ({"filename": "config.json", "text": "{not json"}, "cannot read config.json as JSON"),
    ({"filename": "weights.bin", "text": "x"}, "not a model file"),
    ({"filename": "m.yaml", "text": "base: llama3-8b\nlayer: 16\n"}, "layer"),
    ({"text": 3}, "the upload must be JSON"),
])
def test_bad_uploads_are_400_and_name_the_users_file(client, body, message):
    r = client.post("/api/upload", json=body)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert message in err and "flopcast-ui-" not in err and "uploads" not in err


def test_the_command_refuses_a_bad_port_in_one_line(capsys):
    from flopcast.cli import main

    assert main(["ui", "--port", "70000", "--no-browser"]) == 2
    assert capsys.readouterr().err.strip() == "error: --port 70000: valid ports are 1 to 65535"


def test_the_command_refuses_a_taken_port(capsys):
    import socket

    from flopcast.cli import main

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["ui", "--port", str(port), "--no-browser"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: cannot serve on 127.0.0.1:{port}: ") and "\n" not in err
