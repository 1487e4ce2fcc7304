package auth

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

// The reference vector of RocketMQ's Go client for HMAC-SHA1 + base64.
func TestSignatureVector(t *testing.T) {
	if got := Signature([]byte("Hello RocketMQ Client ACL Feature"), "adiaushdiaushd"); got != "tAb/54Rwwcq+pbH8Loi7FWX4QSQ=" {
		t.Fatalf("signature %q", got)
	}
}

// TestContentOrder: values in byte order of their keys, Signature left
// out, the body last, no separators.
func TestContentOrder(t *testing.T) {
	ext := map[string]string{"brokerName": "broker-a", "a": "1", FieldAccessKey: "ak", FieldSignature: "zzz"}
	if got := string(Content(ext, []byte("xy"))); got != "ak1broker-axy" {
		t.Fatalf("content %q", got)
	}
	if got := string(Content(map[string]string{}, nil)); got != "" {
		t.Fatalf("empty content %q", got)
	}
}

func TestSignVerify(t *testing.T) {
	creds := Credentials{AccessKey: "rocketmq2", SecretKey: "12345678"}
	ext := map[string]string{"topic": "T", "queueId": "3"}
	body := []byte("payload")
	Sign(ext, body, creds)
	// What any RocketMQ client computes: HMAC over the sorted values.
	// Keys in byte order: AccessKey, queueId, topic.
	want := Signature([]byte("rocketmq2"+"3"+"T"+"payload"), "12345678")
	if ext[FieldSignature] != want || ext[FieldAccessKey] != "rocketmq2" {
		t.Fatalf("signed ext %v, want signature %s", ext, want)
	}
	secrets := func(ak string) (string, bool) { return "12345678", ak == "rocketmq2" }
	if ak, err := Verify(ext, body, secrets); err != nil || ak != "rocketmq2" {
		t.Fatalf("verify: %q %v", ak, err)
	}
	for name, c := range map[string]struct {
		mutate func(map[string]string) []byte
		want   error
	}{
		"body changed":  {func(map[string]string) []byte { return []byte("payloaD") }, ErrBadSignature},
		"field changed": {func(e map[string]string) []byte { e["queueId"] = "4"; return body }, ErrBadSignature},
		"field added":   {func(e map[string]string) []byte { e["x"] = "1"; return body }, ErrBadSignature},
		"no signature":  {func(e map[string]string) []byte { delete(e, FieldSignature); return body }, ErrUnsigned},
		"no access key": {func(e map[string]string) []byte { delete(e, FieldAccessKey); return body }, ErrUnsigned},
		"other key":     {func(e map[string]string) []byte { e[FieldAccessKey] = "other"; return body }, ErrUnknownKey},
		"garbage":       {func(e map[string]string) []byte { e[FieldSignature] = "!!"; return body }, ErrBadSignature},
		"empty sig":     {func(e map[string]string) []byte { e[FieldSignature] = ""; return body }, ErrUnsigned},
		"wrong secret":  {func(e map[string]string) []byte { Sign(e, body, Credentials{"rocketmq2", "x"}); return body }, ErrBadSignature},
	} {
		e := map[string]string{}
		for k, v := range ext {
			e[k] = v
		}
		b := c.mutate(e)
		if _, err := Verify(e, b, secrets); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

func TestGuard(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	g := NewGuard(time.Minute)
	creds := Cluster("0123456789abcdef0123")
	fresh := func(at time.Time) map[string]string {
		ext := map[string]string{"brokerName": "broker-a"}
		if err := SignFresh(ext, nil, creds, at); err != nil {
			t.Fatal(err)
		}
		return ext
	}
	a := fresh(now)
	if err := g.Check(a, now); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(a, now.Add(time.Second)); !errors.Is(err, ErrReplayed) {
		t.Fatalf("replay: %v", err)
	}
	// Same content, another nonce: a different signature, accepted.
	if err := g.Check(fresh(now), now); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(fresh(now.Add(-61*time.Second)), now); !errors.Is(err, ErrStale) {
		t.Fatalf("old: %v", err)
	}
	if err := g.Check(fresh(now.Add(61*time.Second)), now); !errors.Is(err, ErrStale) {
		t.Fatalf("future: %v", err)
	}
	for _, bad := range []string{"", "x", "1e9"} {
		e := fresh(now)
		e[FieldSignTime] = bad
		if err := g.Check(e, now); !errors.Is(err, ErrStale) {
			t.Fatalf("SignTime %q: %v", bad, err)
		}
	}
	noTime := fresh(now)
	delete(noTime, FieldSignTime)
	if err := g.Check(noTime, now); !errors.Is(err, ErrStale) {
		t.Fatalf("no SignTime: %v", err)
	}
	// Entries older than the window are forgotten as time passes.
	later := now.Add(2 * time.Minute)
	if err := g.Check(fresh(later), later); err != nil {
		t.Fatal(err)
	}
	if n := g.Remembered(); n != 1 {
		t.Fatalf("remembered %d after the window passed, want 1", n)
	}
}

// TestGuardBound: the guard never holds more than MaxRemembered.
func TestGuardBound(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	g := NewGuard(time.Hour)
	for i := range MaxRemembered + 10 {
		e := map[string]string{FieldSignTime: strconv.FormatInt(now.UnixMilli(), 10), FieldSignature: strconv.Itoa(i)}
		if err := g.Check(e, now); err != nil {
			t.Fatal(err)
		}
	}
	if n := g.Remembered(); n != MaxRemembered {
		t.Fatalf("remembered %d, want %d", n, MaxRemembered)
	}
}

func TestSecrets(t *testing.T) {
	s, err := NewSecret()
	if err != nil || len(s) != 64 || CheckSecret(s) != nil {
		t.Fatalf("NewSecret %q %v", s, err)
	}
	if CheckSecret("") != nil || CheckSecret("short") == nil {
		t.Fatal("CheckSecret bounds")
	}
}
