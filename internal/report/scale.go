package report

import (
	"math"
	"strconv"
	"strings"
)

// px is an SVG coordinate; it prints with one decimal, which is finer than a screen
// pixel and keeps the page small.
type px float64

func (p px) String() string { return strconv.FormatFloat(float64(p), 'f', 1, 64) }

// linearScale maps values in [lo, hi] onto [from, to]. An empty domain maps everything
// to the middle rather than dividing by zero.
type linearScale struct {
	lo, hi, from, to float64
}

func (s linearScale) at(v float64) px {
	if s.hi == s.lo {
		return px((s.from + s.to) / 2)
	}
	return px(s.from + (v-s.lo)/(s.hi-s.lo)*(s.to-s.from))
}

// niceDomain widens [lo, hi] to multiples of a step of 1, 2 or 5 times a power of ten
// and returns the ticks at every step, about target of them. A domain without extent
// (every value zero, or no values) becomes [lo, lo+1] so that axes can still be drawn.
func niceDomain(lo, hi float64, target int) (domain [2]float64, ticks []float64) {
	if !(hi > lo) {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / float64(target))
	start := math.Floor(lo/step) * step
	end := math.Ceil(hi/step) * step
	// Whole steps counted once, so that floating-point error cannot add or lose a tick.
	count := int(math.Round((end - start) / step))
	for i := 0; i <= count; i++ {
		ticks = append(ticks, start+float64(i)*step)
	}
	return [2]float64{start, end}, ticks
}

func niceStep(rough float64) float64 {
	magnitude := math.Pow(10, math.Floor(math.Log10(rough)))
	for _, factor := range []float64{1, 2, 5} {
		if rough <= factor*magnitude {
			return factor * magnitude
		}
	}
	return 10 * magnitude
}

// shortNumber writes axis labels compactly: 1500 as 1.5k, 2000000 as 2M.
func shortNumber(v float64) string {
	for _, unit := range []struct {
		size   float64
		suffix string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= unit.size {
			return trimmedFloat(v/unit.size) + unit.suffix
		}
	}
	return trimmedFloat(v)
}

// trimmedFloat keeps three decimals at most and drops trailing zeros; it also hides the
// floating-point noise of tick arithmetic (0.30000000000000004).
func trimmedFloat(v float64) string {
	s := strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
	if s == "-0" {
		return "0"
	}
	return s
}

// groupedInt writes record counts with thousands separators, as they are read digit by
// digit when compared.
func groupedInt(n int64) string {
	digits := strconv.FormatInt(n, 10)
	sign := ""
	if strings.HasPrefix(digits, "-") {
		sign, digits = "-", digits[1:]
	}
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return sign + b.String()
}
