"""The Python API: every docstring example runs, results carry the CLI's JSON, strings work as the CLI's do,
errors name the Python argument, and `import flopcast` stays light."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
from pathlib import Path

import pytest

import flopcast
from flopcast import api
from flopcast.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", [n for n in api.FUNCTIONS if ">>>" in (getattr(api, n).__doc__ or "")])
def test_docstring_example_runs(name, monkeypatch):
    monkeypatch.chdir(ROOT)  # examples name files of the repository (validation/...)
    fn = getattr(api, name)
    test = doctest.DocTestParser().get_doctest(fn.__doc__, {"flopcast": flopcast}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0 and runner.tries >= 2


def test_every_function_documented_with_an_example_or_a_reason():
    for name in api.FUNCTIONS:
        doc = getattr(api, name).__doc__ or ""
        assert ">>>" in doc or "Example" in doc, name


def test_docs_page_is_in_sync():
    subprocess.run([sys.executable, str(ROOT / "docs" / "api_doc.py"), "--check"], check=True, timeout=120)


def test_import_is_light_and_plan_is_callable():
    # the README's example, llama3-70b on trn2.48xlarge for 15T tokens in 30d, searches ~50 s; a 7B plan is quick
    code = ("import sys, flopcast\n"
            "assert 'numpy' not in sys.modules and 'flopcast.catalog' not in sys.modules\n"
            "d = flopcast.plan('llama2-7b', hardware='p5.48xlarge', tokens='100B', deadline='30d').to_dict()\n"
            "assert d['kind'] == 'deadline' and d['chosen']['time_to_train_days'] <= 30\n"
            "assert callable(flopcast.validate) and flopcast.plan.capacity.__name__ == 'flopcast.plan.capacity'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_strings_and_numbers_agree():
    a = flopcast.train("llama2-7b", hardware="p5.48xlarge", chips=8, tp=8, pp=1, micro_batch=1, global_batch=8,
                       tokens="1.5T")
    b = flopcast.train("llama2-7b", hardware="p5.48xlarge", chips=8, tp=8, pp=1, micro_batch=1, global_batch=8,
                       tokens=1.5e12)
    assert a.tokens == b.tokens == 1.5e12 and a.to_dict() == b.to_dict()
    s = flopcast.serve("llama3-8b", "p5.48xlarge", chips=1, qps=2, requests=20, slo_ttft="1500ms", slo_tpot=0.05)
    assert s.config.slo_ttft_s == 1.5 and s.config.slo_tpot_s == 0.05


@pytest.mark.parametrize("call, message", [
    (lambda: flopcast.train("llama2-7b", hardware="p5.48xlarge", chips=8, tp=3, pp=1), "`tp=3` must divide"),
    (lambda: flopcast.train("llama2-7b", tokens="lots"), "`tokens='lots'` is not a number"),
    (lambda: flopcast.plan("llama2-7b", hardware="p5.48xlarge", deadline="soon"), "`deadline='soon'`"),
    (lambda: flopcast.infer("llama3-8b", "p5.48xlarge", weights="q9"), "`weights='q9'` is not a known format"),
    (lambda: flopcast.serve("llama3-8b", "p5.48xlarge", qps=1, scheduler="fifo"), "`scheduler` 'fifo'"),
])
def test_errors_name_the_python_argument(call, message):
    with pytest.raises(flopcast.FlopcastError) as exc:
        call()
    assert message in str(exc.value) and "--" not in str(exc.value)


def test_cli_json_is_the_api_to_dict(capsys):
    argv = ["search", "llama2-7b", "-H", "p5.48xlarge", "-n", "8", "--top", "3", "--tokens", "100B", "--json"]
    assert main(argv) == 0
    cli = json.loads(capsys.readouterr().out)
    py = json.loads(json.dumps(flopcast.search("llama2-7b", "p5.48xlarge", 8, top=3, tokens="100B").to_dict()))
    for d in (cli, py):
        d.pop("wall_s"), d.pop("candidates_per_s")
    assert cli == py


def test_to_frame_columns_are_the_json_keys():
    pd = pytest.importorskip("pandas")
    s = flopcast.search("llama2-7b", "p5.48xlarge", 8, top=4)
    f = s.to_frame()
    assert isinstance(f, pd.DataFrame) and len(f) == 4
    assert {"rank", "step_time_s", "mfu", "layout/tp", "time_breakdown_s/compute"} <= set(f.columns)
    assert list(f["step_time_s"]) == [r.step_time_s for r in s.top]
    one = s.top[0].to_frame()
    assert len(one) == 1 and one["mfu"][0] == s.top[0].mfu


def test_to_frame_without_pandas_is_one_clear_error():
    code = ("import sys; sys.modules['pandas'] = None\n"
            "import flopcast\n"
            "r = flopcast.train('llama2-7b', hardware='p5.48xlarge', chips=8, tp=8, pp=1, micro_batch=1, global_batch=8)\n"
            "try:\n    r.to_frame()\nexcept flopcast.FlopcastError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.startswith("to_frame() needs pandas: pip install")


def test_results_are_frozen():
    r = flopcast.infer("llama3-8b", "p5.48xlarge", chips=1)
    with pytest.raises(AttributeError):
        r.assumptions = ()


def test_argument_names_translate_both_ways():
    from flopcast.errors import flag_names, python_names

    flags = {"tp": ("--tp", None), "chips": ("--chips", None), "micro_batch": ("--micro-batch", None),
             "sequence_parallel": ("--sequence-parallel", "--no-sequence-parallel")}
    assert python_names("--tp 3 must divide --chips (8)") == "`tp=3` must divide `chips` (8)"
    assert python_names("--weights 'q9' is unknown") == "`weights='q9'` is unknown"
    assert python_names("use --no-sequence-parallel") == "use `sequence_parallel=False`"
    assert flag_names("`tp=3` must divide `chips` (8)", flags) == "--tp 3 must divide --chips (8)"
    assert flag_names("`micro_batch=3`; `sequence_parallel=False`", flags) == "--micro-batch 3; --no-sequence-parallel"
    assert flag_names("`sequence_parallel=True` needs `tp` > 1", flags) == "--sequence-parallel needs --tp > 1"
    assert flag_names("`top=0` and `x`", flags) == "top=0 and x"  # no such flag: the Python spelling stays


def test_one_duration_parser():
    from flopcast.units import parse_duration

    cases = {"30d": 30 * 86400, "12h": 43200, "90 min": 5400, "500ms": 0.5, "50us": 5e-5, "2w": 14 * 86400,
             "1.5days": 1.5 * 86400, "3600": 3600, "1s": 1}
    for text, seconds in cases.items():
        assert parse_duration(text) == pytest.approx(seconds), text
    for bad in ("soon", "ms", "1 fortnight"):
        with pytest.raises(ValueError):
            parse_duration(bad)
