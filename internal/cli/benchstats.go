package cli

import (
	"math"
	"slices"
)

// summary is the statistics bench reports of one quantity over the runs
// of a command, in the unit of the samples.
type summary struct {
	n                              int
	mean, stddev, median, min, max float64
}

// summarize is xs's mean, sample standard deviation (n-1: the runs are a
// sample of the command's runs; 0 for one run), median, min and max.
func summarize(xs []float64) summary {
	s := summary{n: len(xs)}
	if len(xs) == 0 {
		return s
	}
	sorted := slices.Sorted(slices.Values(xs))
	s.min, s.max, s.median = sorted[0], sorted[len(sorted)-1], median(sorted)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	s.mean = sum / float64(len(xs))
	if len(xs) > 1 {
		ss := 0.0
		for _, x := range xs {
			ss += (x - s.mean) * (x - s.mean)
		}
		s.stddev = math.Sqrt(ss / float64(len(xs)-1))
	}
	return s
}

// cv is the coefficient of variation, σ over the mean (0 for a mean of 0).
func (s summary) cv() float64 {
	if s.mean == 0 {
		return 0
	}
	return s.stddev / s.mean
}

// median of sorted, which is not empty.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// outlierZ is the modified Z-score beyond which a run is an outlier
// (Iglewicz and Hoaglin's 3.5, which hyperfine warns at too).
const outlierZ = 3.5

// outliers counts the xs whose modified Z-score, 0.6745 (x - median) /
// MAD, is beyond outlierZ: robust to the outliers themselves, as a score
// from the mean and σ is not. With a MAD of 0 (most runs equal), any run
// off the median is one.
func outliers(xs []float64) int {
	if len(xs) < 3 {
		return 0
	}
	m := median(slices.Sorted(slices.Values(xs)))
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - m)
	}
	mad := median(slices.Sorted(slices.Values(dev)))
	n := 0
	for _, d := range dev {
		if (mad == 0 && d > 0) || (mad > 0 && 0.6745*d/mad > outlierZ) {
			n++
		}
	}
	return n
}

// ratio compares the means of two commands: a's over b's.
type ratio struct {
	// r is the ratio of the means; sigma its spread as hyperfine states
	// it, the runs' relative σ's propagated: r·sqrt((σa/a)² + (σb/b)²).
	r, sigma float64
	// lo and hi bound the ratio of the true means at 95 % confidence
	// (Fieller's interval for independent samples, Student's t with
	// Welch-Satterthwaite's degrees of freedom); ok is false where b's
	// mean is not told from 0 at that level and no interval exists, or
	// where one side has a single run, whose spread is unknown.
	lo, hi float64
	ok     bool
}

// ratioOf is a's mean over b's, with its spread and confidence interval.
func ratioOf(a, b summary) ratio {
	if b.mean == 0 || a.n == 0 || b.n == 0 {
		return ratio{}
	}
	r := ratio{r: a.mean / b.mean}
	ra, rb := 0.0, b.stddev/b.mean
	if a.mean != 0 {
		ra = a.stddev / a.mean
	}
	r.sigma = math.Abs(r.r) * math.Hypot(ra, rb)
	// The variances of the two means.
	if a.n < 2 || b.n < 2 {
		return r
	}
	va, vb := a.stddev*a.stddev/float64(a.n), b.stddev*b.stddev/float64(b.n)
	x, y := va, r.r*r.r*vb // the two parts of the ratio's variance (× b²)
	if x+y == 0 {
		r.lo, r.hi, r.ok = r.r, r.r, true
		return r
	}
	den := x*x/float64(a.n-1) + y*y/float64(b.n-1)
	df := math.Inf(1)
	if den > 0 {
		df = (x + y) * (x + y) / den
	}
	t := tQuantile975(df)
	g := t * t * vb / (b.mean * b.mean)
	if g >= 1 {
		return r
	}
	half := t / math.Abs(b.mean) * math.Sqrt(va*(1-g)+r.r*r.r*vb)
	r.lo, r.hi, r.ok = (r.r-half)/(1-g), (r.r+half)/(1-g), true
	return r
}

// tTable is Student's t distribution's 0.975 quantile (two-sided 95 %)
// for 1 to 30 degrees of freedom, then tLarge for a few more.
var tTable = [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

var tLarge = [...]struct{ df, t float64 }{{40, 2.021}, {60, 2.000}, {120, 1.980}}

// tQuantile975 is t's 0.975 quantile for df degrees of freedom, taken at
// the table's next lower entry (a wider interval, never a narrower one).
func tQuantile975(df float64) float64 {
	switch {
	case df < 1 || math.IsNaN(df):
		return tTable[0]
	case df < float64(len(tTable)+1):
		return tTable[int(df)-1]
	}
	t := tTable[len(tTable)-1]
	for _, e := range tLarge {
		if df < e.df {
			return t
		}
		t = e.t
	}
	if math.IsInf(df, 1) {
		return 1.960
	}
	return t
}
