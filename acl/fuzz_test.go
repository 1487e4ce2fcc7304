package acl

import "testing"

// FuzzACLParse: hostile files never panic; a parsed ACL decides.
func FuzzACLParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("globalWhiteRemoteAddresses: ['1.2.*.{1,2}', '3-1.*.*.*']\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Parse(data)
		if err != nil {
			return
		}
		_ = a.Check(Request{RemoteAddr: "127.0.0.1:1", Ext: map[string]string{"AccessKey": "RocketMQ", "Signature": "x"},
			Resources: []Resource{{Topic, "t", Pub}, {Group, "g", Sub}}})
		// What Parse accepts, Describe shows: one account for each.
		d, err := Describe(data)
		if err != nil || len(d.Accounts) != a.Accounts() {
			t.Fatalf("Describe of a file Parse accepts: %d accounts, %v; Parse has %d", len(d.Accounts), err, a.Accounts())
		}
	})
}
