package cli

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// TestSummarizeByHand checks the statistics against values worked out by
// hand: the textbook sample 2 4 4 4 5 5 7 9 (mean 5, Σ(x-5)² = 32, so the
// sample σ is sqrt(32/7)).
func TestSummarizeByHand(t *testing.T) {
	s := summarize([]float64{9, 2, 4, 5, 4, 7, 4, 5})
	want := summary{n: 8, mean: 5, stddev: math.Sqrt(32.0 / 7), median: 4.5, min: 2, max: 9}
	if s.n != want.n || !near(s.mean, want.mean) || !near(s.stddev, want.stddev) || !near(s.median, want.median) ||
		s.min != want.min || s.max != want.max {
		t.Errorf("summarize = %+v, want %+v", s, want)
	}
	if one := summarize([]float64{3}); one.stddev != 0 || one.mean != 3 || one.median != 3 {
		t.Errorf("one run: %+v, want mean and median 3, σ 0", one)
	}
	if odd := summarize([]float64{3, 1, 2}); odd.median != 2 {
		t.Errorf("median of 3 1 2 = %v, want 2", odd.median)
	}
	if !near(summarize([]float64{9, 10, 11}).cv(), 0.1) {
		t.Errorf("cv of 9 10 11 = %v, want 0.1", summarize([]float64{9, 10, 11}).cv())
	}
}

// TestOutliersByHand: in 10 10.1 9.9 10 10.2 9.8 10 30 the median is 10,
// the absolute deviations' median (MAD) 0.1, so 30 scores 0.6745·20/0.1 =
// 135 and 10.2 scores 1.35: one outlier.
func TestOutliersByHand(t *testing.T) {
	if n := outliers([]float64{10, 10.1, 9.9, 10, 10.2, 9.8, 10, 30}); n != 1 {
		t.Errorf("outliers = %d, want 1", n)
	}
	if n := outliers([]float64{10, 10.1, 9.9, 10, 10.2, 9.8, 10, 10.3}); n != 0 {
		t.Errorf("outliers of a tight sample = %d, want 0", n)
	}
	if n := outliers([]float64{5, 5, 5, 5, 6}); n != 1 {
		t.Errorf("outliers with MAD 0 = %d, want 1 (the run off the median)", n)
	}
}

// TestRatioByHand works the ratio's spread and Fieller interval by hand.
//
// a = 1 2 3 (mean 2, σ 1), b = 4 4 4 (mean 4, σ 0): r = 0.5, σ = 0.5·(1/2)
// = 0.25; b's mean is exact, so the interval is r ± t·sqrt(σa²/3)/4 with
// t(2 df) = 4.303: ± 0.6210846.
//
// a = b = 9 10 11: r = 1, σ = sqrt(0.1² + 0.1²); each mean's variance 1/3,
// Welch-Satterthwaite's df = 4 (t = 2.776), g = t²(1/3)/100, and the limits
// (1 ∓ (t/10)·sqrt((1/3)(1-g) + 1/3)) / (1-g).
func TestRatioByHand(t *testing.T) {
	r := ratioOf(summarize([]float64{1, 2, 3}), summarize([]float64{4, 4, 4}))
	if !near(r.r, 0.5) || !near(r.sigma, 0.25) || !r.ok || !near(r.lo, 0.5-0.6210846) || !near(r.hi, 0.5+0.6210846) {
		t.Errorf("ratio of 1 2 3 to 4 4 4 = %+v, want 0.5 ± 0.25, 95%% CI %.7f..%.7f", r, 0.5-0.6210846, 0.5+0.6210846)
	}
	s := summarize([]float64{9, 10, 11})
	r = ratioOf(s, s)
	g := 2.776 * 2.776 / 3 / 100
	half := 0.2776 * math.Sqrt((1-g)/3+1.0/3)
	if !near(r.r, 1) || !near(r.sigma, math.Sqrt(0.02)) || !r.ok || !near(r.lo, (1-half)/(1-g)) || !near(r.hi, (1+half)/(1-g)) {
		t.Errorf("ratio of 9 10 11 to itself = %+v, want 1 ± %.6f, 95%% CI %.6f..%.6f", r, math.Sqrt(0.02), (1-half)/(1-g), (1+half)/(1-g))
	}
	// A denominator whose mean is within its own noise of 0: no interval.
	if r := ratioOf(s, summarize([]float64{-1, 0, 1.5})); r.ok {
		t.Errorf("ratio over a mean not told from 0 has an interval: %+v", r)
	}
	// Exact samples: the interval is the ratio itself.
	if r := ratioOf(summarize([]float64{6, 6}), summarize([]float64{3, 3})); !r.ok || r.r != 2 || r.lo != 2 || r.hi != 2 || r.sigma != 0 {
		t.Errorf("ratio of exact 6 to exact 3 = %+v, want exactly 2", r)
	}
}

func TestTQuantile975(t *testing.T) {
	for _, c := range []struct{ df, want float64 }{
		{1, 12.706}, {2, 4.303}, {10.5, 2.228}, {30, 2.042}, {35, 2.042}, {40, 2.021}, {59.9, 2.021}, {1000, 1.980}, {math.Inf(1), 1.960}, {0.5, 12.706},
	} {
		if got := tQuantile975(c.df); got != c.want {
			t.Errorf("t(%v df) = %v, want %v", c.df, got, c.want)
		}
	}
}

// One run has no spread to give an interval from.
func TestRatioOneRun(t *testing.T) {
	if r := ratioOf(summarize([]float64{6}), summarize([]float64{2.9, 3.1})); r.ok || r.r != 2 {
		t.Errorf("ratio of one run: %+v, want 2 and no interval", r)
	}
}
