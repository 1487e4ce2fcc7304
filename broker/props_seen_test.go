package broker

import (
	"testing"

	"github.com/ledgermq/ledgermq/message"
)

// readProperties marks exactly the properties its map holds, so a check
// it lets prepareSend skip would have found nothing.
func FuzzReadPropertiesSeen(f *testing.F) {
	for _, s := range []string{
		"",
		"DELAY\x013\x02UNIQ_KEY\x01U\x02",
		"TIMER_DELAY_SEC\x0110\x02",
		"TIMER_DELAY_MS\x011\x02TIMER_DELIVER_MS\x012\x02",
		"CORRELATION_ID\x01c\x02REPLY_TO_CLIENT\x01r\x02",
		"REPLY_TO_CLIENT\x01\x02",
		"A\x011",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := readProperties(s, message.PropertyCluster)
		if err != nil {
			return
		}
		var want propsSeen
		for k := range p.m {
			want |= seenOf(k)
		}
		if p.seen&want != want {
			t.Fatalf("%q: seen %b, the map %v holds %b", s, p.seen, p.m, want)
		}
	})
}

// A send's statistics are the same whether its topic's and cluster's
// items were looked up or cached.
func TestStatsBookStoredCached(t *testing.T) {
	s := newStatsBook((&fakeClock{}).Now)
	for range 3 {
		s.stored("C", "A", 2, 100)
		s.stored("C", "B", 1, 10)
	}
	s.stored("D", "A", 1, 1)
	for _, c := range []struct {
		name, key    string
		value, times int64
	}{
		{statsTopicPutNums, "A", 7, 4}, {statsTopicPutSize, "A", 301, 4},
		{statsTopicPutNums, "B", 3, 3}, {statsTopicPutSize, "B", 30, 3},
		{statsBrokerPutNums, "C", 9, 0}, {statsBrokerPutNums, "D", 1, 0},
	} {
		it := s.item(c.name, c.key)
		if it.value.Load() != c.value || it.times.Load() != c.times {
			t.Errorf("%s %s: %d in %d, want %d in %d", c.name, c.key, it.value.Load(), it.times.Load(), c.value, c.times)
		}
	}
}
