package auth

import (
	"testing"
	"time"
)

// FuzzVerify: hostile ext fields and bodies never panic Verify or the
// Guard, and only the real signature verifies.
func FuzzVerify(f *testing.F) {
	f.Add("broker-a", "ledgermq-cluster", "sig", "1700000000000", []byte("body"))
	f.Add("", "", "", "", []byte(nil))
	f.Add("x", "ledgermq-cluster", "tAb/54Rwwcq+pbH8Loi7FWX4QSQ=", "-1", []byte{0xff})
	const secret = "0123456789abcdef"
	g := NewGuard(time.Minute)
	now := time.UnixMilli(1700000000000)
	f.Fuzz(func(t *testing.T, name, ak, sig, signTime string, body []byte) {
		ext := map[string]string{"brokerName": name, FieldAccessKey: ak, FieldSignature: sig, FieldSignTime: signTime}
		_, err := Verify(ext, body, func(k string) (string, bool) { return secret, k == ClusterAccessKey })
		if err == nil {
			_ = g.Check(ext, now)
		}
		Sign(ext, body, Cluster(secret))
		if _, err := Verify(ext, body, func(string) (string, bool) { return secret, true }); err != nil {
			t.Fatalf("own signature refused: %v", err)
		}
	})
}
