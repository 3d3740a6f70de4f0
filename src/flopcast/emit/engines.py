"""Serving launch commands from a deployment: vLLM (GPUs; Trainium/Inferentia through the vLLM Neuron plugin)
and llama.cpp's llama-server (CPUs).

Flag names: vLLM's EngineArgs as `vllm serve` spells them (--tensor-parallel-size, --data-parallel-size,
--max-num-seqs, --max-model-len, --kv-cache-dtype, --quantization, --enable-prefix-caching,
--speculative-config), checked against public launch scripts that pass them; llama.cpp tools/server
README (--model, --threads, --ctx-size, --parallel, --cache-type-k/--cache-type-v). On Neuron the
tensor-parallel size counts NeuronCores as the runtime shows them (logical cores: 4 per Trainium2 at LNC=2),
so one trn2.48xlarge is --tensor-parallel-size 64.
"""

from __future__ import annotations

import json

from . import Launch

VLLM_SOURCE = "vLLM EngineArgs flags as `vllm serve` takes them (vllm/engine/arg_utils.py)"
LLAMACPP_SOURCE = "llama.cpp tools/server/README.md (llama-server options)"
SPEC_METHODS = {"eagle": "eagle", "mtp": "deepseek_mtp", "medusa": "medusa", "draft": "draft_model"}


def vllm_serve(d, *, replicas: int = 1, max_seqs: int = 256, max_model_len: int = 4096, prefix: bool = False) -> Launch:
    """`vllm serve` for `replicas` data-parallel replicas of deployment `d` (one instance)."""
    neuron = d.system.chip.family in ("trainium", "inferentia")
    tp = d.shards if neuron else d.tp
    missing = []
    if d.expert_parallel:  # attention data-parallel over the replica's chips, experts split over them
        args = [f"vllm serve {d.model.label}", f"--tensor-parallel-size {tp // d.tp}",
                f"--data-parallel-size {d.ep}", "--enable-expert-parallel"]
        if replicas > 1:
            missing.append(f"replicas: {replicas} expert-parallel replicas, each its own server on its own chips")
        if neuron:
            missing.append("expert parallelism: the vLLM Neuron plugin's MoE support decides whether it runs "
                           "--enable-expert-parallel; NxD Inference configures MoE experts in its own config")
    else:
        args = [f"vllm serve {d.model.label}", f"--tensor-parallel-size {tp}"]
        if d.pp > 1:
            args.append(f"--pipeline-parallel-size {d.pp}")
        if replicas > 1:
            args.append(f"--data-parallel-size {replicas}")
    args += [f"--max-num-seqs {max_seqs}", f"--max-model-len {max_model_len}"]
    if d.weights.name == "fp8":
        args.append("--quantization fp8")
    if d.kv_bytes == 1.0:
        args.append("--kv-cache-dtype fp8")
    if prefix:
        args.append("--enable-prefix-caching")
    assumed = [f"model {d.model.label}: the catalog name; give the checkpoint's path or Hugging Face id"]
    spec = d.speculation
    if spec is not None:
        conf = {"method": SPEC_METHODS[spec.method.value], "num_speculative_tokens": spec.k}
        if spec.method.value in ("eagle", "draft", "medusa"):
            conf["model"] = "DRAFT_OR_HEADS_CHECKPOINT"
            assumed.append("the speculator checkpoint path is a placeholder: "
                           "name the EAGLE/Medusa heads or draft model")
        args.append(f"--speculative-config '{json.dumps(conf)}'")
    if d.weights.name not in ("bf16", "fp16", "fp8"):
        missing.append(f"weights {d.weights.name}: serve a checkpoint quantized so (vLLM reads its format from it)")
    if neuron:
        assumed.append("Neuron: the vLLM Neuron plugin (vllm-neuron) compiles the model for these shapes "
                       "on first start")
    title = "vLLM (Neuron plugin)" if neuron else "vLLM"
    return Launch("vllm", title, " \\\n    ".join(args), tuple(missing), tuple(assumed), VLLM_SOURCE)


def llama_server(d, *, replicas: int = 1, max_seqs: int = 1, max_model_len: int = 4096, prefix: bool = False) -> Launch:
    """llama.cpp's llama-server for a CPU deployment: threads, context and parallel slots."""
    slots = max(1, max_seqs)
    kv = {2.0: "f16", 1.0: "q8_0"}.get(d.kv_bytes, "f16")
    args = [f"llama-server --model {d.model.label}-{d.weights.name}.gguf", f"--threads {d.threads}",
            f"--ctx-size {max_model_len * slots}", f"--parallel {slots}",
            f"--cache-type-k {kv}", f"--cache-type-v {kv}"]
    missing = ["replicas: llama-server runs one model per process; start one per replica"] if replicas > 1 else []
    return Launch("llama.cpp", "llama.cpp llama-server", " \\\n    ".join(args), tuple(missing),
                  ("--ctx-size is shared by the slots: max model length x parallel slots",), LLAMACPP_SOURCE)


def launch_for(d, **kw) -> Launch:
    """The engine a deployment's system runs: llama.cpp on CPUs, vLLM elsewhere."""
    return llama_server(d, **kw) if d.is_cpu else vllm_serve(d, **kw)


# vLLM's disaggregated prefill: each instance (prefill or decode) starts with a KV connector; NIXL moves the blocks
# (vLLM docs, "Disaggregated Prefilling"; examples/online_serving/disaggregated_serving)
KV_TRANSFER = '--kv-transfer-config \'{"kv_connector":"NixlConnector","kv_role":"kv_both"}\''


def disaggregated_serve(pd, *, units: int = 1, max_seqs: int = 256, max_model_len: int = 4096) -> Launch:
    """`vllm serve` for the prefill and the decode replicas of a Disaggregated deployment (simulate/serving/disagg),
    one server per replica (data parallel within a pool), each with the NIXL KV connector; a proxy in front routes
    each request to a prefill server, then to a decode server."""
    parts = []
    for role, d, n in (("prefill", pd.prefill, pd.prefill_replicas * units), ("decode", pd.decode,
                                                                             pd.decode_replicas * units)):
        one = vllm_serve(d, replicas=n, max_seqs=max_seqs, max_model_len=max_model_len)
        parts.append((role, one))
    text = "\n".join(f"# {role} pool\n{one.text} \\\n    --port {port} \\\n    {KV_TRANSFER}"
                     for (role, one), port in zip(parts, (8100, 8200)))
    assumed = parts[0][1].assumed + (
        "each pool's server is started on its own chips (CUDA_VISIBLE_DEVICES, or NEURON_RT_VISIBLE_CORES on Neuron)",
        "a router in front (vLLM's disaggregated-serving proxy, NVIDIA Dynamo or llm-d) sends each request to a "
        "prefill server, then to a decode server",)
    return Launch("vllm", "vLLM disaggregated prefill/decode", text, parts[0][1].no_equivalent, assumed, VLLM_SOURCE)
