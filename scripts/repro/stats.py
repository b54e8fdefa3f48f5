"""Statistics of the reproduction: Wilson and normal intervals, the exact
binomial test of "error rate ≤ δ" and its power, the two-proportion z-test,
a distribution-free interval for a median, Spearman's ρ, and the lower bound
of Garivier & Kaufmann (2016): T*(μ), w*(μ), kl(δ, 1 − δ), and where a GLR
statistic growing like t / T_w meets a threshold. Standard library only."""

import math


Z95 = 1.959963984540054
ALPHA = 0.01  # level of the one-sided exact binomial test of "error rate ≤ δ" (as tests/stat)


def wilson(k, n, z=Z95):
    """95% Wilson score interval for k successes in n."""
    if n == 0:
        return (0.0, 1.0)
    ph = k / n
    z2 = z * z
    centre = (ph + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(ph * (1 - ph) / n + z2 / (4 * n * n))
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return (lo, hi)


def binom_sf(k, n, p):
    """P(X ≥ k), X ~ Binomial(n, p), exact (sum of pmf terms in log space)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq
             for i in range(k, n + 1)]
    mx = max(terms)
    return min(1.0, math.exp(mx) * sum(math.exp(t - mx) for t in terms))


def binom_critical(n, p0, alpha=ALPHA):
    """Smallest k with P(X ≥ k | n, p0) ≤ alpha (n + 1 if none)."""
    for k in range(0, n + 2):
        if binom_sf(k, n, p0) <= alpha:
            return k
    return n + 1


def detectable_rate(n, p0, alpha=ALPHA, power=0.8):
    """The true error rate that the level-alpha test of "rate ≤ p0" with n
    runs rejects with probability `power` (bisection on p)."""
    k = binom_critical(n, p0, alpha)
    if k > n:
        return 1.0
    lo, hi = p0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if binom_sf(k, n, mid) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def mean_ci(mean, se):
    return (mean - Z95 * se, mean + Z95 * se)


def kl_bern(p, q):
    eps = 1e-15
    p = min(max(p, eps), 1 - eps)
    q = min(max(q, eps), 1 - eps)
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


def bisect(f, lo, hi, iters=200):
    """Root of an increasing f on [lo, hi] (f(lo) ≤ 0 ≤ f(hi))."""
    for _ in range(iters):
        mid = (lo + hi) / 2
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def t_star(mu):
    """Garivier & Kaufmann (2016), Theorem 5: the optimal weights w*(μ) and
    T*(μ) for Bernoulli arms (unique best arm). Returns (T*, w) with w in
    the order of mu. Bisection throughout, as in their OptimalWeights."""
    order = sorted(range(len(mu)), key=lambda i: -mu[i])
    m1 = mu[order[0]]
    others = [mu[i] for i in order[1:]]

    def mid(x, ma):
        return (m1 + x * ma) / (1 + x)

    def g(x, ma):
        m = mid(x, ma)
        return kl_bern(m1, m) + x * kl_bern(ma, m)

    def x_of_y(y, ma):
        hi = 1.0
        while g(hi, ma) < y:
            hi *= 2
            if hi > 1e12:
                break
        return bisect(lambda x: g(x, ma) - y, 0.0, hi)

    def F(y):
        s = 0.0
        for ma in others:
            x = x_of_y(y, ma)
            m = mid(x, ma)
            s += kl_bern(m1, m) / kl_bern(ma, m)
        return s - 1.0

    ymax = kl_bern(m1, max(others))
    y = bisect(F, 1e-12, ymax * (1 - 1e-12))
    xs = [x_of_y(y, ma) for ma in others]
    w1 = 1.0 / (1.0 + sum(xs))
    w = [0.0] * len(mu)
    w[order[0]] = w1
    for i, x in zip(order[1:], xs):
        w[i] = x * w1
    return (1.0 + sum(xs)) / y, w


def inv_t_star_at(mu, w):
    """min over challengers a of w1 kl(μ1, m) + w_a kl(μ_a, m) (the rate a
    weight vector w achieves): 1/T*(μ) at w = w*(μ), less elsewhere."""
    b = max(range(len(mu)), key=lambda i: mu[i])
    best = float("inf")
    for a in range(len(mu)):
        if a == b:
            continue
        s = w[b] + w[a]
        m = (w[b] * mu[b] + w[a] * mu[a]) / s
        best = min(best, w[b] * kl_bern(mu[b], m) + w[a] * kl_bern(mu[a], m))
    return best


def heuristic_threshold(t, delta):
    """The heuristic GLR threshold ln((ln t + 1)/δ) (Garivier & Kaufmann's
    code; policies/stats.c's glr-heuristic), at t rewarded pulls. The proven
    rule has no closed form in t: fixed_confidence reads its effective
    threshold off the measured stop times instead."""
    return math.log(((math.log(t) if t > 1 else 0.0) + 1) / delta)


def solve_stop_time(t_w, beta):
    """τ with τ = T_w β(τ): where Z(t) ≈ t / T_w meets the threshold."""
    t = t_w * 5
    for _ in range(200):
        t = t_w * beta(t)
    return t


def kl_delta(d):
    """kl(δ, 1 − δ) for Bernoulli: the δ-dependent factor of the lower bound."""
    return (1 - 2 * d) * math.log((1 - d) / d)


def prop_less_p(ka, na, kb, nb):
    """One-sided p-value of "rate a < rate b" (two-proportion z, pooled)."""
    pa, pb = ka / na, kb / nb
    p = (ka + kb) / (na + nb)
    se = math.sqrt(p * (1 - p) * (1 / na + 1 / nb))
    if se == 0:
        return 0.5
    z = (pb - pa) / se
    return 0.5 * math.erfc(z / math.sqrt(2))


def median_inf(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        return float("nan")
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def median_ci_idx(n):
    """Order-statistic indices (0-based) of a distribution-free 95% interval
    for the median (binomial(n, 1/2) quantiles)."""
    lo = 0
    while binom_sf(lo + 1, n, 0.5) > 0.975:
        lo += 1
    hi = n - 1 - lo
    return lo, hi


def spearman(x, y):
    def ranks(v):
        o = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(o):
            j = i
            while j + 1 < len(o) and v[o[j + 1]] == v[o[i]]:
                j += 1
            for k in range(i, j + 1):
                r[o[k]] = (i + j) / 2
            i = j + 1
        return r
    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy)
