package broker

import (
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/remoting"
)

// A POP_MESSAGE's or NOTIFICATION's long poll is its pollTime, capped
// like a pull's hold; a relay of it waits that much longer than other
// relays.
func TestRemotePollTime(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "x": 0, "-5": 0, "0": 0, "1500": 1500 * time.Millisecond,
		"25000": maxPullHold, "9223372036854775807": maxPullHold} {
		for _, code := range []int32{remoting.PopMessage, remoting.Notification} {
			req := remoting.NewRequest(code, map[string]string{"pollTime": v}, nil)
			if got := remotePollTime(req); got != want {
				t.Errorf("%s pollTime %q: %v, want %v", remoting.RequestCodeName(code), v, got, want)
			}
			if got := forwardWait(req); got != want {
				t.Errorf("forward of %s pollTime %q: %v, want %v", remoting.RequestCodeName(code), v, got, want)
			}
		}
	}
	if got := forwardWait(remoting.NewRequest(remoting.PullMessage, map[string]string{"pollTime": "1000"}, nil)); got != 0 {
		t.Errorf("a pull's relay waits %v more", got)
	}
}
