"""Launch configurations: every flag or key an emitter writes is one the framework's source defines (lists taken
from those files in tests/data/emit/, each naming its file and commit), and every layout degree appears."""

import math
import re
from pathlib import Path

import pytest
import yaml

from flopcast import catalog, emit
from flopcast.errors import FlopcastError
from flopcast.model.strategy import Layout, Recompute, Schedule, Sharding
from flopcast.model.system import Dtype

DATA = Path(__file__).parent / "data" / "emit"


def listed(name):
    lines = (DATA / name).read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


MEGATRON_FLAGS = listed("megatron_lm_flags.txt")
BRIDGE_KEYS = listed("megatron_bridge_keys.txt")
MAXTEXT_KEYS = listed("maxtext_keys.txt")
NXD_KEYS = listed("nxd_training_keys.txt")

DENSE = Layout(tp=8, pp=4, dp=8, cp=1, vp=5, micro_batch=1, global_batch=512, recompute=Recompute.SELECTIVE,
               sharding=Sharding.ZERO1, schedule=Schedule.INTERLEAVED)  # 256 chips, llama3-70b: 80 / (4 x 5) = 4
MOE = Layout(tp=2, pp=8, dp=16, cp=2, ep=8, micro_batch=1, global_batch=1024, recompute=Recompute.FULL,
             sharding=Sharding.ZERO3, dtype=Dtype.FP8)  # 512 chips, deepseek-v3


def launch(framework, model, hardware, layout, tokens=None):
    return emit.training(framework, catalog.load_model(model), catalog.system_for(hardware), layout, tokens)


def megatron_args(text):
    """flag -> value (True for a bare flag; the words joined by a space for an nargs='+' flag) of the
    pretrain_gpt.py part of a command line."""
    tokens = text.replace("\\\n", " ").split("pretrain_gpt.py", 1)[1].split()
    out, i = {}, 0
    while i < len(tokens):
        flag = tokens[i]
        assert flag.startswith("--"), flag
        j = i + 1
        while j < len(tokens) and not tokens[j].startswith("--"):
            j += 1
        out[flag], i = (" ".join(tokens[i + 1:j]).strip('"') if j > i + 1 else True), j
    return out


@pytest.mark.parametrize("model, layout", [("llama3-70b", DENSE), ("deepseek-v3", MOE), ("mixtral-8x7b", DENSE)])
def test_megatron_flags_exist_and_carry_every_degree(model, layout):
    r = launch("megatron", model, "p5.48xlarge", layout, tokens=1e12)
    args = megatron_args(r.text)
    assert set(args) <= MEGATRON_FLAGS, set(args) - MEGATRON_FLAGS
    m = catalog.load_model(model)
    assert args["--tensor-model-parallel-size"] == str(layout.tp)
    assert args["--pipeline-model-parallel-size"] == str(layout.pp)
    assert args["--context-parallel-size"] == str(layout.cp)
    assert args["--expert-model-parallel-size"] == str(layout.ep)
    assert args["--micro-batch-size"] == str(layout.micro_batch)
    assert args["--global-batch-size"] == str(layout.global_batch)
    assert args["--train-iters"] == str(math.ceil(1e12 / (layout.global_batch * m.seq_len)))
    if layout.vp > 1 and m.layers % (layout.pp * layout.vp) == 0:
        assert int(args["--num-layers-per-virtual-pipeline-stage"]) * layout.pp * layout.vp == m.layers
    elif layout.vp > 1:  # mixtral: 32 layers over 4 x 5 virtual stages
        assert args["--num-virtual-stages-per-pipeline-rank"] == str(layout.vp)
        assert any("do not split evenly" in n for n in r.no_equivalent)
    # dp is what is left: torchrun's processes over tp x pp x cp
    nnodes = int(re.search(r"--nnodes (\d+)", r.text)[1])
    per_node = int(re.search(r"--nproc-per-node (\d+)", r.text)[1])
    assert nnodes * per_node // (layout.tp * layout.pp * layout.cp) == layout.dp
    if m.moe:
        assert args["--num-experts"] == str(m.moe.experts) and args["--moe-router-topk"] == str(m.moe.topk)
    if m.mtp_layers:  # deepseek-v3: one MTP module, 8 expert groups with each token in at most 4
        assert args["--mtp-num-layers"] == "1"
        assert (args["--moe-router-num-groups"], args["--moe-router-group-topk"]) == ("8", "4")
    if layout.sharding == Sharding.ZERO3:
        assert args["--data-parallel-sharding-strategy"] == "optim_grads_params"
    if layout.dtype == Dtype.FP8:
        assert args["--fp8-format"] == "hybrid"


def test_moe_layer_pattern_matches_the_models_layers():
    for name in ("deepseek-v3", "qwen3-30b-a3b"):
        m = catalog.load_model(name)
        layers = emit.moe_layer_list(m)
        assert len(layers) == m.layers and sum(layers) == m.moe_layers
        pattern = emit.moe_pattern(m)
        assert pattern is None or eval(pattern) == layers  # Megatron evaluates the same expression
    m = catalog.load_model("deepseek-v3")
    args = megatron_args(launch("megatron", "deepseek-v3", "p5.48xlarge", MOE).text)
    assert args["--moe-layer-freq"] == "([0]*3+[1]*58)"


def flat_keys(d, prefix=""):
    out = set()
    for k, v in d.items():
        out.add(prefix + k)
        if isinstance(v, dict):
            out |= flat_keys(v, prefix + k + ".")
    return out


@pytest.mark.parametrize("model, layout", [("llama3-70b", DENSE), ("deepseek-v3", MOE)])
def test_bridge_overrides_are_config_container_fields(model, layout):
    r = launch("nemo", model, "p5.48xlarge", layout)
    doc = yaml.safe_load(r.text)
    keys = {f"{section}.{k}" for section, body in doc.items() if isinstance(body, dict) for k in body}
    assert keys <= BRIDGE_KEYS, keys - BRIDGE_KEYS
    assert f"mixed_precision={doc['mixed_precision']}" in BRIDGE_KEYS
    assert {f"section {s}" for s in doc} <= BRIDGE_KEYS
    mdl = doc["model"]
    for field, value in (("tensor_model_parallel_size", layout.tp), ("pipeline_model_parallel_size", layout.pp),
                         ("context_parallel_size", layout.cp), ("expert_model_parallel_size", layout.ep)):
        assert mdl[field] == value
    assert doc["train"]["global_batch_size"] == layout.global_batch
    if layout.vp > 1:
        assert mdl["virtual_pipeline_model_parallel_size"] == layout.vp


def test_nxd_config_counts_neuron_cores():
    layout = Layout(tp=8, pp=4, dp=2, micro_batch=1, global_batch=256, recompute=Recompute.SELECTIVE)  # 64 trn2 chips
    r = launch("neuron", "llama3-70b", "trn2.48xlarge", layout, tokens=1e11)
    doc = yaml.safe_load(r.text)
    assert flat_keys(doc) <= NXD_KEYS, flat_keys(doc) - NXD_KEYS
    ds = doc["distributed_strategy"]
    assert ds["tensor_model_parallel_size"] == 32  # 8 chips x 4 logical NeuronCores (LNC=2)
    assert ds["pipeline_model_parallel_size"] == 4 and ds["context_parallel_size"] == 1
    assert doc["trainer"] == {"devices": 64, "num_nodes": 4, "max_steps": math.ceil(1e11 / (256 * 8192)), "lnc": 2}
    # dp = devices x nodes / (tp x pp), in cores
    assert 64 * 4 // (ds["tensor_model_parallel_size"] * ds["pipeline_model_parallel_size"]) == layout.dp
    moe = launch("neuron", "deepseek-v3", "trn2.48xlarge", MOE)
    assert any("latent attention" in n for n in moe.no_equivalent)
    assert any("shared experts" in n for n in moe.no_equivalent) and any("zero3" in n for n in moe.no_equivalent)


def maxtext_settings(text):
    parts = text.replace("\\\n", " ").split()[4:]  # after python3 -m MODULE base.yml
    return dict(p.strip('"').split("=", 1) for p in parts)


@pytest.mark.parametrize("layout", [
    Layout(tp=4, pp=2, dp=128, micro_batch=1, global_batch=1024),  # 1024 v5p chips, one slice
    Layout(tp=8, pp=1, dp=32, cp=2, ep=4, micro_batch=2, global_batch=512, sharding=Sharding.ZERO3),
])
def test_maxtext_mesh_places_every_degree(layout):
    model = "deepseek-v3" if layout.ep > 1 else "llama3-70b"
    r = launch("maxtext", model, "tpu-v5p-pod", layout)
    s = maxtext_settings(r.text)
    assert set(s) <= MAXTEXT_KEYS, set(s) - MAXTEXT_KEYS
    data = "fsdp" if layout.sharding == Sharding.ZERO3 else "data"
    for axis, degree in (("tensor", layout.tp), ("pipeline", layout.pp), ("context", layout.cp),
                         ("expert", layout.ep), (data, layout.dp // layout.ep)):
        assert int(s[f"ici_{axis}_parallelism"]) * int(s[f"dcn_{axis}_parallelism"]) == degree, axis
    ici = math.prod(int(v) for k, v in s.items() if k.startswith("ici_"))
    dcn = math.prod(int(v) for k, v in s.items() if k.startswith("dcn_"))
    assert ici * dcn == layout.chips
    assert s["mlp_activations"] == "['silu','linear']"  # quoted on the command line: one shell word
    if model == "deepseek-v3":
        assert (s["mtp_num_layers"], s["n_routing_groups"], s["topk_routing_group"]) == ("1", "8", "4")
    per_step = float(s["per_device_batch_size"]) * layout.chips * int(s.get("gradient_accumulation_steps", 1))
    assert per_step == layout.global_batch


def test_maxtext_spans_slices_over_dcn():
    layout = Layout(tp=4, pp=1, dp=128, micro_batch=1, global_batch=512)  # 512 v6e chips = 2 slices of 256
    s = maxtext_settings(launch("maxtext", "llama3-70b", "tpu-v6e-pod", layout).text)
    assert (s["ici_tensor_parallelism"], s["ici_data_parallelism"], s["dcn_data_parallelism"]) == ("4", "64", "2")


@pytest.mark.parametrize("framework, hardware", [("maxtext", "gb300-nvl72"), ("maxtext", "tpu-v5p-pod"),
                                                 ("megatron", "p5.48xlarge"), ("nemo", "p5.48xlarge"),
                                                 ("neuron", "trn2.48xlarge")])
@pytest.mark.parametrize("dtype", list(Dtype))
def test_every_dtype_emits_or_says_it_has_no_equivalent(framework, hardware, dtype):
    """Every training dtype gives a launch: its framework's setting or a 'no equivalent' line, never a KeyError
    (fuzz seed 2901: `train llama4-scout --dtype mxfp4 --emit maxtext -H gb300-nvl72`)."""
    layout = Layout(tp=8, pp=1, dp=8, micro_batch=1, global_batch=64, dtype=dtype)
    r = launch(framework, "llama3-8b", hardware, layout)
    if framework == "maxtext" and dtype not in (Dtype.BF16, Dtype.FP8, Dtype.INT8, Dtype.FP32, Dtype.FP16):
        assert maxtext_settings(r.text)["dtype"] == "bfloat16" and "quantization" not in maxtext_settings(r.text)
        assert any(f"dtype {dtype.label}" in p for p in r.no_equivalent)


def test_wrong_hardware_or_framework_is_one_sentence():
    with pytest.raises(FlopcastError, match="runs on trainium chips, not h100-sxm .*valid for p5.48xlarge: "
                                            "megatron, nemo, maxtext"):
        launch("neuron", "llama3-8b", "p5.48xlarge", DENSE)
    with pytest.raises(FlopcastError, match="valid for trn2.48xlarge: neuron"):
        launch("megatron", "llama3-8b", "trn2.48xlarge", DENSE)
    with pytest.raises(FlopcastError, match="unknown training framework 'deepspeed'; "
                                            "valid: megatron, nemo, neuron, maxtext"):
        launch("deepspeed", "llama3-8b", "p5.48xlarge", DENSE)


def test_render_says_what_has_no_equivalent():
    gpipe = Layout(tp=8, pp=4, dp=8, micro_batch=1, global_batch=512, schedule=Schedule.GPIPE)
    text = launch("megatron", "llama3-70b", "p5.48xlarge", gpipe).render()
    assert "# no equivalent: schedule gpipe" in text and text.startswith("# Megatron-LM pretrain_gpt.py")
    assert all(line.startswith("#") or line.startswith("torchrun") or line.startswith("    --")
               for line in text.splitlines())


@pytest.mark.parametrize("framework, model, hardware, layout", [
    ("megatron", "deepseek-v3", "p5.48xlarge", MOE), ("megatron", "mistral-7b", "p5.48xlarge", DENSE),
    ("maxtext", "deepseek-v3", "tpu-v5p-pod", Layout(tp=4, dp=128, ep=8, micro_batch=1, global_batch=1024)),
])
def test_commands_are_one_valid_shell_command(framework, model, hardware, layout):
    import shlex
    import subprocess

    text = launch(framework, model, hardware, layout).render()
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0  # the shell parses it
    words = shlex.split(text.replace("\\\n", " "), comments=True)  # a shell joins backslash-newline lines
    assert all("\\" not in w and "\n" not in w for w in words)
    if framework == "megatron":
        flags = [w for w in words if w.startswith("--") and "pretrain_gpt.py" in words[:words.index(w)]]
        assert set(flags) <= MEGATRON_FLAGS
