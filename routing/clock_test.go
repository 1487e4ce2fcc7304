package routing

import (
	"testing"
	"time"
)

func TestManualClock(t *testing.T) {
	c := NewManualClock(t0)
	tk := c.NewTicker(10 * time.Second)
	never := c.NewTicker(0)
	if c.Tickers() != 2 {
		t.Fatalf("tickers %d", c.Tickers())
	}
	tick := func() (time.Time, bool) {
		select {
		case v := <-tk.C():
			return v, true
		default:
			return time.Time{}, false
		}
	}
	tests := []struct {
		advance time.Duration
		drain   bool
		tick    time.Duration // -1: none expected
	}{
		{9 * time.Second, true, -1},
		{time.Second, true, 10 * time.Second},
		{-time.Hour, true, -1},                     // time never goes back
		{35 * time.Second, false, -1},              // missed periods collapse into one tick, left queued
		{10 * time.Second, true, 45 * time.Second}, // the queued tick; the new one was dropped
		{5 * time.Second, true, 60 * time.Second},  // back on the original schedule
	}
	for i, tc := range tests {
		c.Advance(tc.advance)
		if !tc.drain {
			continue
		}
		v, ok := tick()
		if tc.tick < 0 {
			if ok {
				t.Fatalf("step %d: unexpected tick at %v", i, v.Sub(t0))
			}
			continue
		}
		if !ok || v.Sub(t0) != tc.tick {
			t.Fatalf("step %d: tick %v %v, want at %v", i, v.Sub(t0), ok, tc.tick)
		}
	}
	select {
	case <-never.C():
		t.Fatal("a zero-period ticker fired")
	default:
	}
	tk.Stop()
	never.Stop()
	if c.Tickers() != 0 {
		t.Fatalf("tickers after Stop %d", c.Tickers())
	}
	c.Advance(time.Hour)
	if _, ok := tick(); ok {
		t.Fatal("a stopped ticker fired")
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero value", Config{}, true},
		{"defaults", DefaultConfig(), true},
		{"short expiry takes a short scan", Config{BrokerExpiry: time.Second}, true},
		{"expiry below 1ms", Config{BrokerExpiry: time.Microsecond}, false},
		{"expiry above a day", Config{BrokerExpiry: 25 * time.Hour}, false},
		{"negative scan", Config{ScanInterval: -time.Second}, false},
		{"scan above expiry", Config{BrokerExpiry: time.Second, ScanInterval: 2 * time.Second}, false},
	}
	for _, tc := range tests {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v", tc.name, err)
		}
	}
	if got, want := (Config{}).String(), `routing{addr=":9876" brokerExpiry=2m0s scanInterval=10s clusterSecret=none signWindow=5m0s confirmTimeout=1s topicGrace=1m0s}`; got != want {
		t.Fatalf("String() = %s, want %s", got, want)
	}
}
