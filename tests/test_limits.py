"""The one table of bounds for the numbers a user types (flopcast.limits) and the parsers under it."""

import pytest

from flopcast import limits
from flopcast.errors import FlopcastError
from flopcast.plan.search import _divisors
from flopcast.units import parse_count, parse_duration


@pytest.mark.parametrize("name, value, expected", [
    ("tp", 8, 8), ("tp", 8.0, 8), ("tokens", "1.5T", 1.5e12), ("tokens", 6e12, 6e12), ("chips", "1,024", 1024),
    ("seed", 2**63 - 1, 2**63 - 1), ("duration_s", "2h", 7200.0), ("slo_tpot_s", "100ms", 0.1), ("cv", 0, 0),
])
def test_valid_values_pass_converted(name, value, expected):
    assert limits.check(name, value) == expected


@pytest.mark.parametrize("name, value, problem", [
    ("tp", 0, "out of range"), ("seed", -1, "out of range"), ("requests", 9223372036854775808, "out of range"),
    ("input_tokens", 1e30, "out of range"), ("input_tokens", float("inf"), "not a number"),
    ("slo_ttft_s", float("nan"), "not a number"), ("slo_ttft_s", "nan", "not a number"),
    ("tokens", "inf", "not a number"), ("tokens", 0, "out of range"), ("top", 1e20, "out of range"),
    ("global_batch", 10**26, "out of range"), ("tp", 2.5, "not a number"), ("tp", True, "not a number"),
    ("seq_len", 2**63, "out of range"), ("duration_s", "1e30", "out of range"), ("qps", 0, "out of range"),
])
def test_hostile_values_are_one_sentence_naming_the_argument(name, value, problem):
    with pytest.raises(FlopcastError) as exc:
        limits.check(name, value)
    msg = str(exc.value)
    assert msg.startswith(f"`{name}=") and problem in msg and "valid:" in msg and "\n" not in msg
    with pytest.raises(FlopcastError, match=f"^--{name.replace('_', '-')} "):
        limits.check(name, value, label=f"--{name.replace('_', '-')}")


def test_every_bound_is_finite_and_ordered():
    for name, b in limits.LIMITS.items():
        assert 0 <= b.low < b.high < 1e20, name


@pytest.mark.parametrize("text", ["inf", "nan", "-inf", "1e400", "infT"])
def test_parsers_refuse_non_finite_text(text):
    with pytest.raises(ValueError):
        parse_count(text)
    with pytest.raises(ValueError):
        parse_duration(text)


def test_divisors_from_the_factorisation():
    for n in (1, 2, 12, 97, 360, 1024, 999_983, 2**30, 3**19):
        assert _divisors(n) == [d for d in range(1, n + 1) if n % d == 0] if n < 5000 else _divisors(n)
    assert _divisors(2**30) == [2**i for i in range(31)] and _divisors(999_983) == [1, 999_983]
    assert len(_divisors(735134400)) == 1344  # a highly composite number
