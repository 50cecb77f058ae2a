"""The statistics and the rounds' order, on recorded numbers: the paired estimator (point and interval
from the same log ratios), the one rule, the variance split, the A/B agreement, the order (a Williams square)."""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter

import pytest

from flowerbench.analysis import rounds, stats as S
from flowerbench.core.results import Result
from tests.helpers.fakes import fake_result

# Four rounds shaped like this host's (single_fit 15-18 s, the host drifting between rounds, which both
# variants of a round share), one process each per round: single_fit and mirrored_fit seconds.
SINGLE = [16.91, 18.09, 15.40, 17.62]
MIRRORED = [11.08, 12.55, 10.21, 11.90]


def test_t_quantiles_match_the_tables():
    for df, t in ((1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (10, 2.228), (30, 2.042), (120, 1.980)):
        assert S.t975(df) == pytest.approx(t, abs=1e-3), df
    assert S.t_quantile(0.99, 5) == pytest.approx(3.365, abs=1e-3)
    assert S.t_quantile(0.975, 1e6) == pytest.approx(1.960, abs=1e-3)
    with pytest.raises(ValueError):
        S.t_quantile(0.4, 3)


def test_mean_interval_and_no_interval_from_one_value():
    iv = S.mean_interval([10.0, 12.0, 14.0])
    assert (iv["n"], iv["median"], iv["mean"]) == (3, 12.0, 12.0)
    assert iv["low"] == pytest.approx(12 - 4.3027 * 2 / 3 ** 0.5, abs=1e-3)
    assert S.mean_interval([5.0])["low"] is None  # one value: no interval, never a fake one


def test_the_paired_estimator_on_recorded_rounds():
    """Point = geometric mean of the per-round ratios; interval = exp(mean log +- t * sd / sqrt(n)):
    both from the same log ratios, so the point is the interval's centre on the log scale."""
    est = S.paired(SINGLE, MIRRORED)
    logs = [math.log(a / b) for a, b in zip(SINGLE, MIRRORED)]
    m, sd = statistics.fmean(logs), statistics.stdev(logs)
    assert est.point == pytest.approx(math.exp(m)) and est.log_sd == pytest.approx(sd)
    half = S.t975(3) * sd / 2
    assert (est.low, est.high) == (pytest.approx(math.exp(m - half)), pytest.approx(math.exp(m + half)))
    assert est.low * est.high == pytest.approx(est.point ** 2)
    assert est.half_width_pct == pytest.approx((math.exp(half) - 1) * 100)
    # paired beats unpaired: the drift the rounds share cancels in the ratio
    unpaired = S.from_logs([math.log(a) for a in SINGLE]).log_sd
    assert est.log_sd < unpaired
    one = S.paired([10.0], [8.0])
    assert (one.point, one.low, one.high, one.n) == (1.25, None, None, 1)
    with pytest.raises(ValueError):
        S.paired([1.0, 2.0], [1.0])


def test_the_one_rule():
    assert S.direction(S.paired(SINGLE, MIRRORED)) == S.FASTER
    assert S.direction(S.paired(MIRRORED, SINGLE)) == S.SLOWER
    assert S.direction(S.paired([10.0, 11.0, 12.0], [9.5, 11.5, 12.2])) == S.UNDECIDED
    assert S.direction(S.paired([10.0], [5.0])) == S.UNDECIDED   # no interval: never a claim


def test_efficiency_is_the_speedup_scaled_with_its_interval():
    est = S.paired(SINGLE, MIRRORED)
    eff = est.scaled(2.0)
    assert (eff.point, eff.low, eff.high) == (pytest.approx(est.point / 2), pytest.approx(est.low / 2),
                                              pytest.approx(est.high / 2))


def test_rounds_needed_for_a_target_half_width():
    # sd 0.10 of log ratios: t(n-1) * 0.10 / sqrt(n) <= log(1.10) first at n = 7
    assert S.rounds_needed(0.10, 10.0) == 7
    assert S.t975(6) * 0.10 / 7 ** 0.5 <= math.log(1.1) < S.t975(5) * 0.10 / 6 ** 0.5
    assert S.rounds_needed(0.001, 10.0) == 2 and S.rounds_needed(5.0, 1.0, most=50) is None


def test_variance_components_find_where_the_variance_was_put():
    """Simulated nested data with known components: between rounds sd 0.08, repeats 0.02, epochs 0.03
    (of log seconds): the method of moments recovers them within sampling error."""
    rng = random.Random(7)
    data = []
    for _ in range(60):
        r = rng.gauss(0, 0.08)
        data.append([[math.exp(2 + r + p + rng.gauss(0, 0.03)) for _ in range(4)]
                     for p in [rng.gauss(0, 0.02) for _ in range(3)]])
    c = S.components(data)
    assert (c["rounds"], c["repeats_per_round"], c["epochs_per_repeat"]) == (60, 3, 4)
    assert math.sqrt(c["epoch"]) == pytest.approx(0.03, rel=0.15)
    assert math.sqrt(c["repeat"]) == pytest.approx(0.02, rel=0.5)
    assert math.sqrt(c["round"]) == pytest.approx(0.08, rel=0.25)
    one_repeat = S.components([[rep[0]] for rep in data])      # one repeat per process: not separable
    assert one_repeat["repeat"] is None and one_repeat["round"] > 0


def test_repetitions_per_level_follow_cost_and_variance():
    # an expensive upper level with little variance of its own: many repetitions below it
    assert S.per_level(40.0, 2.0, 0.01, 0.0025) == math.ceil(math.sqrt(20 * 4))
    assert S.per_level(40.0, 2.0, 0.01, 0.0) == 20      # no upper variance: all repetitions below
    assert S.per_level(40.0, 2.0, 0.0, 0.01) == 1       # no lower variance: one is enough


def test_welch_combines_two_independent_means():
    """The difference's standard error is the root of the two variances' sum; its degrees of freedom
    follow Welch-Satterthwaite: the sum of both when they are equal, near the smaller side's when one
    side dominates, and the plain sum where neither varies."""
    se, df = S.welch(0.01, 4, 0.01, 4)
    assert se == pytest.approx(math.sqrt(0.02)) and df == pytest.approx(8)
    se, df = S.welch(0.04, 2, 0.0001, 20)
    assert se == pytest.approx(math.sqrt(0.0401)) and 2 < df < 2.1
    assert S.welch(0.0, 3, 0.0, 5) == (0.0, 8)


def neighbours(rows):
    return Counter((a, b) for row in rows for a, b in zip(row, row[1:]))


@pytest.mark.parametrize("n", [2, 5, 8])
def test_the_order_balances_places_and_neighbours(n):
    names = ["single_fit", "mirrored_fit", "single_custom", "mirrored_custom", "multiworker_custom",
             "single_fit_tensors", "single_custom_tensors", "single_fit_threads"][:n]
    cycle = n if n % 2 == 0 else 2 * n          # the Williams square's rows (and its mirror, n odd)
    order = rounds.order(names, 2 * cycle, seed=123)
    assert all(sorted(o) == sorted(names) for o in order)
    assert order == rounds.order(names, 2 * cycle, seed=123)
    assert order != rounds.order(names, 2 * cycle, seed=124) or n == 2
    for v in names:   # over n rounds, each variant sits once at every position
        assert sorted(o.index(v) for o in order[:n]) == list(range(n))
    pairs = neighbours(order[:cycle])          # every variant follows every other equally often
    assert set(pairs) == {(a, b) for a in names for b in names if a != b}
    assert set(pairs.values()) == {cycle // n}
    assert order[cycle:] == order[:cycle]       # past the square, its rows again
    assert rounds.order(names, 3, 123) == order[:3]               # more rounds extend, never reshuffle


def test_no_variant_follows_the_same_one_in_every_round():
    # the old order (one shuffle rotated one place per round) put single_custom after
    # multiworker_custom in every round; in the square's first three rows no follower repeats
    names = ["a", "b", "c", "d", "e", "f", "g", "h"]
    order = rounds.order(names, 3, seed=123)
    for v in names:
        followers = [row[row.index(v) + 1] for row in order if row.index(v) < len(row) - 1]
        assert len(followers) == len(set(followers))
    assert [rounds.first_core(k, 2) for k in range(4)] == [0, 1, 0, 1]


def test_a_first_epoch_still_warming_up_is_left_out_by_rule():
    r = fake_result("single_fit", "fit", 1, 40.0, "cpu", True)
    r.update(epoch_seconds=[14.0, 10.0, 10.2, 9.8])
    warm = Result.model_validate({**r, "timed_seconds": 40.0})
    assert rounds.settled_epochs(warm) == ([10.0, 10.2, 9.8], 1)
    assert rounds.process_seconds(warm, "median_settled") == pytest.approx(10.0 * 4)
    r.update(epoch_seconds=[10.9, 10.0, 10.2, 9.8])   # within 10 %: kept
    assert rounds.settled_epochs(Result.model_validate(r))[1] == 0


def test_tost_with_the_held_out_band_and_the_ab_band():
    """One function, two bands: +-10 % around a prediction, +-15 % for B over A; symmetric on the log
    scale, so a ratio and its inverse get the same verdict."""
    se, df = 0.02, 8
    for band in (10.0, 15.0):
        edge = math.log1p(band / 100)
        inside = S.tost(edge / 3, se, df, band)
        assert inside["verdict"] == S.EQUIVALENT and inside["band_pct"] == band
        assert S.tost(-edge / 3, se, df, band)["verdict"] == S.EQUIVALENT
        far = edge + S.t_quantile(0.975, df) * se * 1.01
        assert S.tost(far, se, df, band)["verdict"] == S.DIFFERENT
        assert S.tost(-far, se, df, band)["verdict"] == S.DIFFERENT
        assert S.tost(edge, se, df, band)["verdict"] == S.UNDETERMINED
    # 12 % off: outside the held-out band (missed when measured tightly), inside the A/B band
    assert S.tost(math.log(1.12), 0.005, df, 10.0)["verdict"] == S.DIFFERENT
    assert S.tost(math.log(1.12), 0.005, df, 15.0)["verdict"] == S.EQUIVALENT


def test_a_committed_95_percent_interval_gives_back_its_standard_error():
    point, se = math.log(20.0), 0.05
    half = S.t975(1) * se
    lp, got = S.se_from_interval(math.exp(point - half), math.exp(point + half), 1)
    assert lp == pytest.approx(point) and got == pytest.approx(se)
    # the 90 % half-width follows from the 95 % one: scaled by t(0.95, 1) / t(0.975, 1) = 6.314 / 12.706
    assert S.t_quantile(0.95, 1) / S.t975(1) == pytest.approx(6.314 / 12.706, rel=1e-3)


@pytest.mark.parametrize("between,within", [(0.0, 0.1), (0.06, 0.1), (0.1, 0.05)])
def test_the_random_effects_pool_recovers_known_components(between, within):
    """Simulated runs with a known between-run sd and within-run sd: the pooled within-run sd and the
    between-run component come back within sampling error (200 runs of 4 rounds), and df is summed."""
    import random

    rng = random.Random(17)
    groups = []
    for _ in range(200):
        b = rng.gauss(0.0, between)
        groups.append([b + rng.gauss(0.0, within) for _ in range(4)])
    re = S.random_effects(groups)
    assert re["df_within"] == 200 * 3 and re["runs"] == 200
    assert re["within_sd"] == pytest.approx(within, rel=0.08)
    assert re["between_sd"] == pytest.approx(between, abs=0.02)
    assert (re["p"] < 0.01) == (between > 0)
    one = S.random_effects(groups[:1])
    assert one["between"] is None and one["df_within"] == 3


def test_a_pooled_spread_sets_the_interval_and_its_df():
    logs = [0.10, 0.12, 0.08]
    own = S.from_logs(logs)
    pooled = S.from_logs(logs, (0.05, 40))
    assert pooled.point == pytest.approx(own.point) and pooled.df == 40 and own.dof == 2
    half = S.t975(40) * 0.05 / math.sqrt(3)
    assert pooled.high == pytest.approx(math.exp(0.10 + half))
