package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/message"
)

// park refuses every destination unpark would drop, before it proposes
// anything (so this runs without a raft group).
func TestParkRefusesWhatUnparkDrops(t *testing.T) {
	b := &Broker{cfg: Config{DelayLevels: []time.Duration{time.Second}}}
	for _, tt := range []struct {
		topic string
		queue int32
	}{
		{strings.Repeat("t", message.MaxTopicLength+1), 0},
		{"%RETRY%" + strings.Repeat("g", 121), 0},
		{"bad topic", 0},
		{"", 0},
		{scheduleTopic, 0},
		{"T", -1},
	} {
		props := map[string]string{}
		if _, _, err := b.park(t.Context(), 1, tt.topic, tt.queue, props); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("park(%.20q… %d bytes, queue %d) = %v", tt.topic, len(tt.topic), tt.queue, err)
		}
		if len(props) != 0 {
			t.Errorf("a refused park set %v", props)
		}
	}
}
