"""Problem-file helpers the sections share: Rademacher arms, top-m gaps,
the complexities H and Hσ, an arm's true mean and standard deviation."""

import math


def rademacher(x, y):
    return {"dist": "rademacher", "x": x, "y": y}


def top_m_gaps(mu, m):
    """Top-m gaps (Bubeck et al. 2013): μ_i − μ_(m+1) for the top m, μ_(m) − μ_i
    for the rest."""
    s = sorted(mu, reverse=True)
    hi, lo = s[m - 1], s[m]
    return [(x - lo) if x >= hi else (hi - x) for x in mu]


def complexity_h(mu, m=1):
    """H = Σ 1/Δ_i² with top-m gaps; inf when some gap is 0 (ties at the boundary)."""
    g = top_m_gaps(mu, m)
    if min(g) <= 0:
        return float("inf")
    return sum(1 / (x * x) for x in g)


def complexity_h_sigma(means, sds, m=1):
    """Gabillon et al.'s Hσ = Σ (σ + sqrt(σ² + (16/3)Δ))² / Δ² (b = 1)."""
    g = top_m_gaps(means, m)
    return sum((s + math.sqrt(s * s + 16 / 3 * d)) ** 2 / (d * d) for s, d in zip(sds, g))


def arm_mean_sd(a):
    """True mean and standard deviation of an arm of a problem file."""
    if isinstance(a, (int, float)):
        return a, math.sqrt(a * (1 - a))
    d = a["dist"]
    if d == "bernoulli":
        return a["p"], math.sqrt(a["p"] * (1 - a["p"]))
    if d == "rademacher":
        return (a["x"] + a["y"]) / 2, abs(a["y"] - a["x"]) / 2
    if d == "uniform":
        return (a["low"] + a["high"]) / 2, (a["high"] - a["low"]) / math.sqrt(12)
    raise ValueError(d)
