package consumequeue

import (
	"errors"
	"os"
	"testing"
)

func TestPutGetAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, 10, 0)
	q := mustQueue(t, s, "TopicA", 3)
	checkQueue(t, q, 0, 0)
	putRange(t, q, 0, 35)
	checkQueue(t, q, 0, 35)
	equalFiles(t, queueFiles(t, dir, "TopicA", 3), 0, 10, 20, 30)

	tests := []struct {
		from int64
		max  int
		want []int64 // [first, end) of the offsets returned
	}{
		{0, 1, []int64{0, 1}},
		{0, 10, []int64{0, 10}},
		{5, 10, []int64{5, 15}},    // spans one boundary
		{9, 2, []int64{9, 11}},     // last of one file, first of the next
		{3, 30, []int64{3, 33}},    // spans three boundaries
		{28, 100, []int64{28, 35}}, // clamped at max
		{34, 32, []int64{34, 35}},
		{35, 32, nil}, // at max
		{90, 32, nil}, // beyond max
		{10, 0, nil},  // max 0
		{10, -3, nil},
	}
	for _, tt := range tests {
		units, err := q.Get(tt.from, tt.max)
		if err != nil {
			t.Fatalf("Get(%d, %d): %v", tt.from, tt.max, err)
		}
		var first, end int64
		if tt.want != nil {
			first, end = tt.want[0], tt.want[1]
		}
		if int64(len(units)) != end-first {
			t.Fatalf("Get(%d, %d) returned %d units, want %d", tt.from, tt.max, len(units), end-first)
		}
		for i, u := range units {
			if u != unitAt(first+int64(i)) {
				t.Fatalf("Get(%d, %d)[%d] = %+v", tt.from, tt.max, i, u)
			}
		}
	}
	for o := int64(0); o < 35; o++ {
		if u, err := q.GetUnit(o); err != nil || u != unitAt(o) {
			t.Fatalf("GetUnit(%d) = %+v, %v", o, u, err)
		}
	}
	if _, err := q.GetUnit(35); !errors.Is(err, ErrOffsetTooLarge) {
		t.Fatalf("GetUnit(max) err = %v, want ErrOffsetTooLarge", err)
	}
	if _, err := q.GetUnit(-1); !errors.Is(err, ErrOffsetTooSmall) {
		t.Fatalf("GetUnit(-1) err = %v, want ErrOffsetTooSmall", err)
	}
	if u, ok, err := q.LastUnit(); err != nil || !ok || u != unitAt(34) {
		t.Fatalf("LastUnit = %+v %v %v", u, ok, err)
	}

	// Reopen: the offsets and units come back exactly.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, 10, 0)
	q = mustQueue(t, s, "TopicA", 3)
	checkQueue(t, q, 0, 35)
	putRange(t, q, 35, 41)
	checkQueue(t, q, 0, 41)
}

func TestQueueFileBytes(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, 4, 0)
	q := mustQueue(t, s, "t", 0)
	putRange(t, q, 0, 6)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	b0, err := os.ReadFile(queueFilePath(dir, "t", 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	b1, err := os.ReadFile(queueFilePath(dir, "t", 0, 4))
	if err != nil {
		t.Fatal(err)
	}
	if len(b0) != 4*UnitSize || len(b1) != 2*UnitSize {
		t.Fatalf("file sizes %d and %d, want 80 and 40", len(b0), len(b1))
	}
	if fileName(4) != "00000000000000000080" {
		t.Fatalf("fileName(4) = %s", fileName(4))
	}
	for i, b := range [][]byte{b0[40:60], b1[20:40]} {
		o := []int64{2, 5}[i]
		if u, err := DecodeUnit(b); err != nil || u != unitAt(o) {
			t.Fatalf("unit %d on disk = %+v, %v", o, u, err)
		}
	}
}

func TestLastUnitEmpty(t *testing.T) {
	s := openStore(t, t.TempDir(), 10, 0)
	q := mustQueue(t, s, "t", 0)
	if _, ok, err := q.LastUnit(); ok || err != nil {
		t.Fatalf("LastUnit of empty queue: ok=%v err=%v", ok, err)
	}
}

func TestPutOverwriteDropsTail(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, 10, 0)
	q := mustQueue(t, s, "t", 1)
	putRange(t, q, 0, 25)
	repl := Unit{Offset: 999999, Size: 7, TagsCode: 1}
	if err := q.Put(12, repl); err != nil {
		t.Fatal(err)
	}
	if q.MaxOffset() != 13 {
		t.Fatalf("MaxOffset = %d, want 13", q.MaxOffset())
	}
	equalFiles(t, queueFiles(t, dir, "t", 1), 0, 10)
	if u, err := q.GetUnit(12); err != nil || u != repl {
		t.Fatalf("GetUnit(12) = %+v, %v", u, err)
	}
	if u, err := q.GetUnit(11); err != nil || u != unitAt(11) {
		t.Fatalf("GetUnit(11) = %+v, %v", u, err)
	}

	// Overwrite the first unit of a file: later files go.
	putRange(t, q, 13, 13) // no-op
	for o := int64(13); o < 25; o++ {
		if err := q.Put(o, unitAt(o)); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Put(10, unitAt(10)); err != nil {
		t.Fatal(err)
	}
	equalFiles(t, queueFiles(t, dir, "t", 1), 0, 10)
	if q.MaxOffset() != 11 {
		t.Fatalf("MaxOffset = %d, want 11", q.MaxOffset())
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, 10, 0)
	checkQueue(t, mustQueue(t, s, "t", 1), 0, 11)
}

func TestPutErrors(t *testing.T) {
	s := openStore(t, t.TempDir(), 10, 0)
	q := mustQueue(t, s, "t", 0)
	putRange(t, q, 0, 5)
	tests := []struct {
		name string
		o    int64
		u    Unit
		err  error
	}{
		{"gap", 6, unitAt(6), ErrGap},
		{"far gap", 1000, unitAt(6), ErrGap},
		{"negative offset", -1, unitAt(0), ErrOffsetTooSmall},
		{"offset too large", 1 << 62, unitAt(0), ErrOffsetTooLarge},
		{"zero unit", 5, Unit{}, ErrBadUnit},
		{"negative size", 5, Unit{Offset: 1, Size: -4}, ErrBadUnit},
		{"negative commitlog offset", 5, Unit{Offset: -1, Size: 4}, ErrBadUnit},
	}
	for _, tt := range tests {
		if err := q.Put(tt.o, tt.u); !errors.Is(err, tt.err) {
			t.Errorf("%s: Put err = %v, want %v", tt.name, err, tt.err)
		}
	}
	checkQueue(t, q, 0, 5)

	// Below min after retention.
	if err := q.DeleteBefore(unitAt(3).Offset); err != nil {
		t.Fatal(err)
	}
	if err := q.Put(2, unitAt(2)); !errors.Is(err, ErrOffsetTooSmall) {
		t.Fatalf("Put below min err = %v, want ErrOffsetTooSmall", err)
	}
}

func TestPutStartsAtOffset(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, 10, 0)
	q := mustQueue(t, s, "t", 2)
	putRange(t, q, 37, 45)
	checkQueue(t, q, 37, 45)
	// The first file is named after its first unit and ends at the next
	// multiple of UnitsPerFile.
	equalFiles(t, queueFiles(t, dir, "t", 2), 37, 40)
	if _, err := q.Get(36, 1); !errors.Is(err, ErrOffsetTooSmall) {
		t.Fatalf("Get below start err = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, 10, 0)
	q = mustQueue(t, s, "t", 2)
	checkQueue(t, q, 37, 45)
	putRange(t, q, 45, 52)
	checkQueue(t, q, 37, 52)
	equalFiles(t, queueFiles(t, dir, "t", 2), 37, 40, 50)

	// Truncating to nothing lets the queue start again elsewhere.
	if err := q.Truncate(37); err != nil {
		t.Fatal(err)
	}
	equalFiles(t, queueFiles(t, dir, "t", 2))
	putRange(t, q, 5, 8)
	checkQueue(t, q, 5, 8)
	equalFiles(t, queueFiles(t, dir, "t", 2), 5)
}

func TestBadTopicAndQueueID(t *testing.T) {
	s := openStore(t, t.TempDir(), 10, 0)
	long := make([]byte, MaxTopicLen+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, topic := range []string{"", ".", "..", "a/b", "/abs", "a..b", "..", "x\x00y", `a\b`, string(long)} {
		if _, err := s.Queue(topic, 0); !errors.Is(err, ErrBadTopic) {
			t.Errorf("Queue(%q) err = %v, want ErrBadTopic", topic, err)
		}
		if err := s.DeleteTopic(topic); !errors.Is(err, ErrBadTopic) {
			t.Errorf("DeleteTopic(%q) err = %v, want ErrBadTopic", topic, err)
		}
	}
	for _, topic := range []string{"a", "%RETRY%group-1", "RMQ_SYS_TRANS_HALF_TOPIC", "a.b", ".hidden", "a|b", string(long[:MaxTopicLen])} {
		if _, err := s.Queue(topic, 7); err != nil {
			t.Errorf("Queue(%q): %v", topic, err)
		}
	}
	if _, err := s.Queue("a", -1); !errors.Is(err, ErrBadQueueID) {
		t.Errorf("Queue(a, -1) err = %v, want ErrBadQueueID", err)
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, false},
		{Config{Dir: "x", UnitsPerFile: -1}, false},
		{Config{Dir: "x", UnitsPerFile: MaxUnitsPerFile + 1}, false},
		{Config{Dir: "x", MaxOpenFiles: -2}, false},
		{Config{Dir: "x"}, true},
	}
	for _, tt := range tests {
		got, err := tt.cfg.withDefaults()
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadConfig)) {
			t.Errorf("withDefaults(%+v) err = %v", tt.cfg, err)
		}
		if tt.ok && (got.UnitsPerFile != DefaultUnitsPerFile || got.MaxOpenFiles != DefaultMaxOpenFiles || got.Logger == nil) {
			t.Errorf("defaults not applied: %+v", got)
		}
	}
}

func TestClosedStore(t *testing.T) {
	s := openStore(t, t.TempDir(), 10, 0)
	q := mustQueue(t, s, "t", 0)
	putRange(t, q, 0, 3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if s.OpenFiles() != 0 {
		t.Fatalf("OpenFiles after Close = %d", s.OpenFiles())
	}
	checks := map[string]error{}
	_, checks["Queue"] = s.Queue("t", 0)
	_, checks["Queues"] = s.Queues()
	_, checks["Topics"] = s.Topics()
	checks["DeleteTopic"] = s.DeleteTopic("t")
	checks["Flush"] = s.Flush()
	checks["Put"] = q.Put(3, unitAt(3))
	_, checks["Get"] = q.Get(0, 1)
	_, checks["GetUnit"] = q.GetUnit(0)
	_, _, checks["LastUnit"] = q.LastUnit()
	checks["Truncate"] = q.Truncate(1)
	checks["TruncateByPhysical"] = q.TruncateByPhysical(0)
	checks["DeleteBefore"] = q.DeleteBefore(0)
	_, checks["OffsetByTime"] = q.OffsetByTime(0, func(Unit) (int64, error) { return 0, nil })
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: err = %v, want ErrClosed", name, err)
		}
	}
}
