"""transformers-neuronx before Neuron SDK 2.19 scores a context's whole square of query-key pairs (no fused causal
attention kernel: cost/inference/releases.scores_whole_square); later releases and other engines the causal half."""

from flopcast import catalog
from flopcast.cost import inference as inf
from flopcast.cost.inference.releases import scores_whole_square


def _deploy(engine):
    return inf.deployment(catalog.load_model("llama2-13b"), catalog.load_system("inf2.48xlarge"), chips=12, tp=12,
                          engine=engine, efficiency=inf.PRIORS["transformers-neuronx"])


def test_release_decides():
    assert scores_whole_square("transformers-neuronx", "transformers-neuronx (SDK 2.18.0)")
    assert not scores_whole_square("transformers-neuronx", "transformers-neuronx (SDK 2.19)")
    assert not scores_whole_square("transformers-neuronx", "transformers-neuronx")  # no release: today's kernel
    assert not scores_whole_square("neuronx", "optimum-neuron (SDK 2.18)")


def test_sdk_218_context_encoding_scores_the_whole_square():
    old, new = _deploy("transformers-neuronx (SDK 2.18.0)"), _deploy("transformers-neuronx (SDK 2.19.0)")
    assert old.whole_square and not new.whole_square
    t_old, p_old = inf.prefill_time(old, 1, 8192)
    t_new, p_new = inf.prefill_time(new, 1, 8192)
    # the attention core is compute-bound at 8,192 tokens: twice the pairs, twice its time
    assert 1.95 < float(p_old["attention/core"]) / float(p_new["attention/core"]) < 2.05
    assert float(t_old) - float(t_new) > 0.9 * float(p_new["attention/core"])
    for k in p_new:  # nothing else changes
        if k != "attention/core":
            assert float(p_old[k]) == float(p_new[k])
    # the decode pass is untouched
    assert float(inf.decode_time(old, 1, 8192)[0]) == float(inf.decode_time(new, 1, 8192)[0])
