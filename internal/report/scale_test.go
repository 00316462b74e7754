package report

import (
	"slices"
	"testing"
)

func TestNiceDomain(t *testing.T) {
	tests := []struct {
		name       string
		lo, hi     float64
		wantDomain [2]float64
		wantTicks  []float64
	}{
		{"TPS", 0, 7575.6, [2]float64{0, 8000}, []float64{0, 2000, 4000, 6000, 8000}},
		{"negative and positive", -52.2, 36.7, [2]float64{-60, 40}, []float64{-60, -40, -20, 0, 20, 40}},
		{"fractions", 0, 0.3, [2]float64{0, 0.3}, []float64{0, 0.1, 0.2, 0.3}},
		{"all zero", 0, 0, [2]float64{0, 1}, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{"inverted", 5, 1, [2]float64{5, 6}, []float64{5, 5.2, 5.4, 5.6, 5.8, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			domain, ticks := niceDomain(tt.lo, tt.hi, 5)
			if trimmedFloat(domain[0]) != trimmedFloat(tt.wantDomain[0]) ||
				trimmedFloat(domain[1]) != trimmedFloat(tt.wantDomain[1]) {
				t.Errorf("domain = %v, want %v", domain, tt.wantDomain)
			}
			rounded := make([]string, len(ticks))
			want := make([]string, len(tt.wantTicks))
			for i := range ticks {
				rounded[i] = trimmedFloat(ticks[i])
			}
			for i := range tt.wantTicks {
				want[i] = trimmedFloat(tt.wantTicks[i])
			}
			if !slices.Equal(rounded, want) {
				t.Errorf("ticks = %v, want %v", rounded, want)
			}
		})
	}
}

func TestLinearScaleWithoutExtent(t *testing.T) {
	s := linearScale{lo: 3, hi: 3, from: 100, to: 300}
	if got := s.at(3); got != 200 {
		t.Errorf("at = %v, want the middle 200", got)
	}
}

func TestNumberFormats(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{shortNumber(0), "0"},
		{shortNumber(0.30000000000000004), "0.3"},
		{shortNumber(1500), "1.5k"},
		{shortNumber(-20000), "-20k"},
		{shortNumber(2e6), "2M"},
		{shortNumber(3.25e9), "3.25G"},
		{trimmedFloat(-0.0001), "0"},
		{groupedInt(0), "0"},
		{groupedInt(999), "999"},
		{groupedInt(1000), "1,000"},
		{groupedInt(-1234567), "-1,234,567"},
		{px(12.345).String(), "12.3"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
