"""Order statistics and Poisson tails the reliability model uses (floats or numpy arrays)."""

from __future__ import annotations

import math

import numpy as np


def norm_ppf(p):
    """Inverse standard normal CDF: Acklam's rational approximation (P. J. Acklam 2003, relative
    error below 1.15e-9 over (0, 1)). Works on arrays."""
    p = np.asarray(p, dtype=float)
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
         -3.066479806614716e01, 2.506628277459239e00)
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
         -1.328068155288572e01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
         4.374664141464968e00, 2.938163982698783e00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    plow = 0.02425
    q = np.sqrt(-2 * np.log(np.where(p < 0.5, p, 1 - p).clip(1e-300)))
    tail = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    tail = np.where(p < 0.5, tail, -tail)
    r = (p - 0.5) ** 2
    mid = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * (p - 0.5) / \
          (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    return np.where((p >= plow) & (p <= 1 - plow), mid, tail)


def expected_max_std_normal(n):
    """E[max of n iid standard normals], Blom 1958: Phi^-1((n - 0.375)/(n + 0.25)); 0 for n = 1.
    Within 0.03 of the exact value for n = 2 .. 1e5 (exact 3.97 at 16,384; ~sqrt(2 ln n) growth)."""
    n = np.asarray(n, dtype=float)
    return np.where(n <= 1, 0.0, norm_ppf((n - 0.375) / (n + 0.25)))


# Past this many terms (k, a count of hot spares) the sum of every term is replaced by the sum over the terms a double
# can hold: --spares 1e7 summed 10^7 terms per cluster size (20 s of CPU for one reliability run, 80 MB a size)
EXACT_TERMS = 10_000
# a term further than this from the mean is below e^-800 of the mass (Chernoff: about e^-(t^2)/2 at t sd), a double's 0
_SDS, _SLACK = 40.0, 40.0


def poisson_cdf(k, mu):
    """P(Poisson(mu) <= k) for an integer k >= -1 (0 when k < 0); mu a float or array."""
    mu = np.asarray(mu, dtype=float)
    if k < 0:
        return np.zeros_like(mu)
    if k > EXACT_TERMS:
        return _poisson_cdf_window(int(k), mu)
    j = np.arange(k + 1, dtype=float)
    lgam = np.array([math.lgamma(v + 1) for v in j])
    with np.errstate(divide="ignore"):
        logterms = -mu[..., None] + j * np.log(np.maximum(mu[..., None], 1e-300)) - lgam
    return np.exp(logterms).sum(axis=-1).clip(0, 1)


def _poisson_cdf_window(k: int, mu: np.ndarray) -> np.ndarray:
    """poisson_cdf for a large k, in work that does not grow with k: per value of mu, only the terms within _SDS
    standard deviations (+ _SLACK) of its mean, where a double's terms are not 0; 1 or 0 when k lies past them. The
    log-terms are a running sum of log(mu / j) from the window's first (by lgamma), ~1e-10 relative at most."""
    out = np.empty(mu.shape)
    for i, m in enumerate(mu.flat):
        m = max(float(m), 0.0)
        w = _SDS * math.sqrt(m) + _SLACK
        if not math.isfinite(m):  # a rate of a run that never finishes: nan, as the sum of every term gives
            out.flat[i] = math.nan
        elif k >= m + w:
            out.flat[i] = 1.0
        elif k < m - w:
            out.flat[i] = 0.0
        else:
            j0 = max(0, math.floor(m - w))
            log_m = math.log(max(m, 1e-300))
            steps = log_m - np.log(np.arange(j0 + 1, k + 1, dtype=float))
            first = -m + j0 * log_m - math.lgamma(j0 + 1)
            out.flat[i] = float(np.exp(first + np.concatenate([[0.0], np.cumsum(steps)])).sum())
    return out.clip(0, 1)
