package broker

import (
	"slices"
	"testing"

	"github.com/ledgermq/ledgermq/protocol"
)

// TestServedCodesMatchTable: the broker's handler table serves exactly the
// codes protocol.RequestCodes says a broker serves.
func TestServedCodesMatchTable(t *testing.T) {
	var got []int32
	for _, r := range (&Broker{}).handlers() {
		got = append(got, r.code)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(protocol.ServedCodes(protocol.Broker)))
	if !slices.Equal(got, want) {
		t.Fatalf("the broker serves %v; protocol.RequestCodes says %v", got, want)
	}
}
