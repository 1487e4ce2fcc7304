package broker

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/remoting"
)

func propsRecord(t testing.TB, props map[string]string) []byte {
	t.Helper()
	m := &message.Ext{BornHost: netip.MustParseAddrPort("10.0.0.1:1"), StoreHost: netip.MustParseAddrPort("10.0.0.2:2")}
	m.Topic, m.Body, m.Properties = "T", []byte("x"), props
	b, err := message.AppendRecord(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMsgFilter(t *testing.T) {
	for _, tt := range []struct {
		expr, typ string
		enabled   bool
		want      error
	}{
		{"*", "", true, nil},
		{"A || B", "TAG", true, nil},
		{"a > 5 AND TAGS IN ('x')", "SQL92", true, nil},
		{"a >", "SQL92", true, ErrSubscriptionParse},
		{"a > 5", "SQL92", false, ErrFilterNotSupported},
		{"a > 5", "SQL", true, ErrFilterNotSupported},
	} {
		_, err := newMsgFilter(tt.expr, tt.typ, tt.enabled)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%q (%s, enabled %v): %v, want %v", tt.expr, tt.typ, tt.enabled, err, tt.want)
		}
	}
	code, _ := responseFor(fmt.Errorf("x: %w", ErrSubscriptionParse))
	if code != remoting.SubscriptionParseFailed {
		t.Errorf("parse failure answers %d", code)
	}

	sql, err := newMsgFilter("a BETWEEN 0 AND 3 AND TAGS = 'x'", "SQL92", true)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := newMsgFilter("x", "TAG", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		props     map[string]string
		sql, tags bool
	}{
		{map[string]string{"a": "1", message.PropertyTags: "x"}, true, true},
		{map[string]string{"a": "4", message.PropertyTags: "x"}, false, true},
		{map[string]string{"a": "1", message.PropertyTags: "y"}, false, false},
		{map[string]string{"a": "one", message.PropertyTags: "x"}, false, true},
		{map[string]string{message.PropertyTags: "x"}, false, true},
		{map[string]string{"a": "2"}, false, false},
	} {
		rec := propsRecord(t, tt.props)
		if got := sql.match(rec); got != tt.sql {
			t.Errorf("sql on %v: %v", tt.props, got)
		}
		if got := tag.match(rec); got != tt.tags {
			t.Errorf("tag on %v: %v", tt.props, got)
		}
	}
	if sql.match([]byte{1, 2, 3}) {
		t.Error("a record that does not parse matched")
	}
}
