package commitlog

// walker runs the entry-by-entry verification shared by Recover and Scan over
// the bytes of one segment. It is pure: it reads a byte slice and reports to
// callbacks, so recovery can be tested and fuzzed without files.
type walker struct {
	visit   func(offset int64, payload []byte) error
	corrupt func(CorruptRange)
}

// CorruptRange is a range of a segment that does not hold valid entries
// although valid data follows it (or, for Scan, although it lies below the
// write position). Err wraps ErrCorrupt and says what was wrong with the
// first bytes of the range.
type CorruptRange struct {
	Offset int64 // offset of the first byte that does not verify
	Length int64 // bytes up to the next valid entry (or the segment end)
	Err    error
}

func (w *walker) report(base int64, pos, end int, why error) {
	if w.corrupt != nil && end > pos {
		w.corrupt(CorruptRange{Offset: base + int64(pos), Length: int64(end - pos), Err: why})
	}
}

// segment walks b, the readable part of a segment of length segLen starting
// at global offset base, from pos. ext says where b may hold data (nil:
// anywhere); the search for valid data skips the rest without reading it. more says that valid data exists beyond
// this segment: an unresolvable bad region is then reported up to the
// segment end instead of being taken as the end of data. tailCorrupt says
// that everything in b is supposed to be valid (Scan): a bad region with no
// valid entry after it is reported rather than taken as the end of data.
//
// It returns the position where the data of this segment ends and whether
// the walk goes on in the next segment. The position is len(b) or segLen
// after an end-of-segment marker, the start of a short tail (kindEnd), or
// the end of written data.
func (w *walker) segment(b []byte, ext extents, segLen int, base int64, pos int, more, tailCorrupt bool) (end int, next bool, err error) {
	search := searcher{b: b, segLen: segLen, ext: ext}
	for {
		if pos >= len(b) {
			return pos, pos >= segLen, nil
		}
		k, size, why := inspect(b, segLen, pos)
		switch k {
		case kindEntry:
			if w.visit != nil {
				if err := w.visit(base+int64(pos), b[pos:pos+size]); err != nil {
					return pos, false, err
				}
			}
			pos += size + TrailerSize
		case kindEnd:
			return pos, true, nil
		case kindBlank:
			// A genuine marker is followed by zeros only: data after it
			// means the marker itself is damage.
			q := search.next(pos + MinEntrySize)
			if q < 0 {
				return segLen, true, nil
			}
			w.report(base, pos, q, errAfterBlank)
			pos = q
		default: // kindZero, kindBad
			q := search.next(pos + 1)
			if q >= 0 && !more && !tailCorrupt && !search.hasEntry(q) {
				// Only a marker follows: a marker is not data by itself
				// (its batch went to the next segment, which holds
				// nothing), so this is the end of the data.
				q = -1
			}
			if q >= 0 {
				w.report(base, pos, q, why)
				pos = q
				continue
			}
			if more {
				w.report(base, pos, segLen, why)
				return segLen, true, nil
			}
			if tailCorrupt {
				w.report(base, pos, len(b), why)
				return len(b), false, nil
			}
			return pos, false, nil
		}
	}
}

// hasEntry reports whether a valid entry starts at or after from.
func (s *searcher) hasEntry(from int) bool {
	for {
		q := s.next(from)
		if q < 0 {
			return false
		}
		if k, _, _ := inspect(s.b, s.segLen, q); k == kindEntry {
			return true
		}
		from = q + MinEntrySize // a marker: look past it
	}
}
