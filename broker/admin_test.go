package broker

import (
	"testing"
	"time"
)

func TestFormatRuntime(t *testing.T) {
	if got := formatRuntime(26*time.Hour + 3*time.Minute + 4*time.Second); got != "[ 1 days, 2 hours, 3 minutes, 4 seconds ]" {
		t.Fatal(got)
	}
}
