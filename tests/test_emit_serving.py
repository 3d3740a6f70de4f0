"""Serving launch commands (emit/engines.py) from a deployment and from `deploy --emit`."""

import json

from flopcast import catalog
from flopcast.cli import main
from flopcast.cost import inference as inf
from flopcast.cost.inference.speculation import speculation
from flopcast.emit import engines as E


def test_vllm_flags_from_a_deployment():
    m = catalog.load_model("llama3-8b")
    d = inf.deployment(m, catalog.load_system("p5.48xlarge"), chips=2, tp=2, weights="fp8", kv_dtype="fp8",
                       speculation=speculation("mtp"))
    text = E.vllm_serve(d, replicas=4, max_seqs=128).text
    for flag in ("--tensor-parallel-size 2", "--data-parallel-size 4", "--max-num-seqs 128", "--quantization fp8",
                 "--kv-cache-dtype fp8", '"num_speculative_tokens": 1'):
        assert flag in text
    trn = inf.deployment(m, catalog.load_system("trn2.48xlarge"), chips=16, tp=16)
    assert "--tensor-parallel-size 64" in E.vllm_serve(trn).text  # NeuronCores at LNC=2


def test_llama_server_for_cpus():
    d = inf.deployment(catalog.load_model("llama3-8b"), catalog.load_system("r8g.4xlarge"))
    text = E.launch_for(d, max_seqs=4, max_model_len=1024).text
    assert text.startswith("llama-server") and "--threads 16" in text and "--parallel 4" in text
    assert "--ctx-size 4096" in text


def test_deploy_emit_json(capsys):
    assert main(["deploy", "llama3-8b", "-H", "c8g.16xlarge", "--slo-ttft", "10s", "--slo-tpot", "200ms",
                 "--weights", "q4_0", "--requests", "50", "--json", "--emit"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "\nllama-server --model" in out["launch"]["c8g.16xlarge"]
