package metadata

import (
	"errors"
	"strings"
	"testing"
)

func TestACLOps(t *testing.T) {
	s := New()
	if _, ok := s.ACL(); ok || s.ACLIndex() != 0 {
		t.Fatal("a new state has rules")
	}
	a, b, c := []byte("accounts: [a]\n"), []byte("accounts: [b]\n"), []byte("accounts: [c]\n")
	for i, tc := range []struct {
		change  ACLChange
		want    []byte
		changed bool
	}{
		{ACLChange{Content: a, Modified: 10, IfNewer: true, Node: "n0"}, a, true},  // none in force: taken
		{ACLChange{Content: b, Modified: 5, IfNewer: true, Node: "n1"}, a, false},  // an older file at start
		{ACLChange{Content: b, Modified: 10, IfNewer: true, Node: "n1"}, a, false}, // as old: not newer
		{ACLChange{Content: b, Modified: 3, Node: "n1"}, b, true},                  // an edit: taken whatever its time
		{ACLChange{Content: b, Modified: 99, Node: "n2"}, b, false},                // the same content
		{ACLChange{Content: c, Modified: 4, IfNewer: true, Node: "n2"}, c, true},   // newer than b's file
	} {
		changed, err := s.Apply(uint64(i+1), Op{Kind: OpACL, ACL: &tc.change})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := s.ACL()
		if changed != tc.changed || string(r.Content) != string(tc.want) || r.Hash != ACLHash(tc.want) {
			t.Fatalf("op %d: changed %v, rules %q; want %v, %q", i, changed, r.Content, tc.changed, tc.want)
		}
	}
	if r, _ := s.ACL(); r.Index != 6 || s.ACLIndex() != 6 || r.Node != "n2" || r.Modified != 4 {
		t.Fatalf("rules %+v, index %d", r, s.ACLIndex())
	}
	raw, _ := s.Marshal()
	again := New()
	if err := again.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	if r, _ := again.ACL(); string(r.Content) != string(c) || again.ACLIndex() != 6 {
		t.Fatalf("after a round trip: %+v, index %d", r, again.ACLIndex())
	}
	tampered := strings.Replace(string(raw), ACLHash(c), ACLHash(a), 1)
	if err := New().Unmarshal([]byte(tampered)); !errors.Is(err, ErrBadFile) {
		t.Fatalf("rules that do not match their hash: %v", err)
	}
	for _, bad := range []Op{
		{Kind: OpACL},
		{Kind: OpACL, ACL: &ACLChange{}},
		{Kind: OpACL, ACL: &ACLChange{Content: make([]byte, MaxACLSize+1)}},
	} {
		if _, err := EncodeOp(bad); !errors.Is(err, ErrBadOp) {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
}
