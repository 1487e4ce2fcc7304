package broker

import (
	"testing"
	"time"
)

// BenchmarkStatsBookStored is the statistics of one stored send.
func BenchmarkStatsBookStored(b *testing.B) {
	s := newStatsBook(time.Now)
	b.ReportAllocs()
	for b.Loop() {
		s.stored("DefaultCluster", "BenchTopic", 1, 1024)
	}
}
