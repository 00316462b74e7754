package records

import "bytes"

// finder finds a pattern in log text. bytes.Index looks for the pattern's first byte
// with the vectorised bytes.IndexByte and checks every position once that byte turns
// out frequent, as the 'l' of "lbtag" is in log text ("select", "local", "client") and
// the quote opening a JSON key is in JSON: on amd64 that check runs at a byte or two a
// cycle. Looking for a rare byte of the pattern instead keeps bytes.IndexByte skipping
// over long stretches.
type finder struct {
	pattern []byte
	// guard is the offset in pattern of the byte looked for, -1 until chosen.
	guard int
}

// newFinder returns a finder whose guard is the byte of pattern rarest in the first
// text it searches.
func newFinder(pattern []byte) finder {
	return finder{pattern: pattern, guard: -1}
}

// finderBy returns a finder looking for the byte at offset guard of pattern.
func finderBy(pattern string, guard int) *finder {
	return &finder{pattern: []byte(pattern), guard: guard}
}

// guardSample bounds the log text whose byte frequencies choose a guard byte.
const guardSample = 64 << 10

// index returns the offset of the first pattern in p, or -1.
func (s *finder) index(p []byte) int {
	if len(s.pattern) < 2 {
		return bytes.Index(p, s.pattern)
	}
	if s.guard < 0 {
		s.guard = rarestByte(s.pattern, p[:min(len(p), guardSample)])
	}
	guard, last := s.pattern[s.guard], len(p)-len(s.pattern)
	for start := 0; start <= last; start++ {
		found := bytes.IndexByte(p[start+s.guard:last+s.guard+1], guard)
		if found < 0 {
			return -1
		}
		start += found
		if bytes.Equal(p[start:start+len(s.pattern)], s.pattern) {
			return start
		}
	}
	return -1
}

// rarestByte returns the offset in tag of its byte that occurs least often in sample.
func rarestByte(tag, sample []byte) int {
	rarest, fewest := 0, len(sample)+1
	for i, b := range tag {
		if n := bytes.Count(sample, []byte{b}); n < fewest {
			rarest, fewest = i, n
		}
	}
	return rarest
}

// lastIndexByte is bytes.LastIndexByte, which is a plain byte loop, made faster on
// long stretches without b by searching blocks from the end with the vectorised
// bytes.IndexByte. The blocks grow from a short one, so that a b close to the end, as
// the start of a line is to a tag near it, costs one or two searches.
func lastIndexByte(p []byte, b byte) int {
	for end, size := len(p), 64; end > 0; end, size = end-size, min(2*size, 4096) {
		start := max(0, end-size)
		found := bytes.IndexByte(p[start:end], b)
		if found < 0 {
			continue
		}
		for {
			next := bytes.IndexByte(p[start+found+1:end], b)
			if next < 0 {
				return start + found
			}
			found += next + 1
		}
	}
	return -1
}
