package routing

import (
	"slices"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
)

// TestServedCodesMatchTable: the name server serves exactly the codes
// protocol.RequestCodes says it serves.
func TestServedCodesMatchTable(t *testing.T) {
	s, err := NewServer(Config{Clock: NewManualClock(time.UnixMilli(1_700_000_000_000))})
	if err != nil {
		t.Fatal(err)
	}
	got, want := s.rs.Codes(), slices.Sorted(slices.Values(protocol.ServedCodes(protocol.Namesrv)))
	if !slices.Equal(got, want) {
		t.Fatalf("the name server serves %v; protocol.RequestCodes says %v", got, want)
	}
}
