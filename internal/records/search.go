package records

import "bytes"

// tagSearch finds a tag in log text. bytes.Index looks for the tag's first byte with
// the vectorised bytes.IndexByte and checks every position once that byte turns out
// frequent, as the 'l' of "lbtag" is in log text ("select", "local", "client"): on
// amd64 that check runs at a byte or two a cycle. Looking for the tag's rarest byte
// in the log instead keeps bytes.IndexByte skipping over long stretches.
type tagSearch struct {
	tag []byte
	// guard is the offset in tag of the byte looked for, -1 until chosen.
	guard int
}

func newTagSearch(tag []byte) tagSearch {
	return tagSearch{tag: tag, guard: -1}
}

// guardSample bounds the log text whose byte frequencies choose the guard byte.
const guardSample = 64 << 10

// index returns the offset of the first tag in p, or -1. The first text it is given
// chooses the guard byte for all later calls.
func (s *tagSearch) index(p []byte) int {
	if len(s.tag) < 2 {
		return bytes.Index(p, s.tag)
	}
	if s.guard < 0 {
		s.guard = rarestByte(s.tag, p[:min(len(p), guardSample)])
	}
	guard, last := s.tag[s.guard], len(p)-len(s.tag)
	for start := 0; start <= last; start++ {
		found := bytes.IndexByte(p[start+s.guard:last+s.guard+1], guard)
		if found < 0 {
			return -1
		}
		start += found
		if bytes.Equal(p[start:start+len(s.tag)], s.tag) {
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
