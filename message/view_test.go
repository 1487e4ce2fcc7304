package message

import (
	"net/netip"
	"testing"
)

func TestRecordViewAccessors(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		e := sampleExt()
		e.SysFlag = SysFlagMultiTags
		if v6 {
			e.BornHost = netip.MustParseAddrPort("[2001:db8::7]:1234")
			e.StoreHost = netip.MustParseAddrPort("[fe80::1]:10911")
		}
		b := mustAppend(t, e)
		v, err := ParseView(append(b, "trailing bytes of the next record"...))
		if err != nil {
			t.Fatal(err)
		}
		checks := []struct {
			name      string
			got, want any
		}{
			{"Size", v.Size(), len(b)},
			{"Bytes", string(v.Bytes()), string(b)},
			{"BodyCRC", v.BodyCRC(), e.BodyCRC},
			{"QueueID", v.QueueID(), e.QueueID},
			{"Flag", v.Flag(), e.Flag},
			{"QueueOffset", v.QueueOffset(), e.QueueOffset},
			{"PhysicalOffset", v.PhysicalOffset(), e.PhysicalOffset},
			{"SysFlag", v.SysFlag(), e.SysFlag},
			{"BornTimestamp", v.BornTimestamp(), e.BornTimestamp},
			{"BornHost", v.BornHost(), e.BornHost},
			{"StoreTimestamp", v.StoreTimestamp(), e.StoreTimestamp},
			{"StoreHost", v.StoreHost(), e.StoreHost},
			{"ReconsumeTimes", v.ReconsumeTimes(), e.ReconsumeTimes},
			{"PreparedTransactionOffset", v.PreparedTransactionOffset(), e.PreparedTransactionOffset},
			{"Body", string(v.Body()), string(e.Body)},
			{"Topic", v.Topic(), e.Topic},
			{"TopicBytes", string(v.TopicBytes()), e.Topic},
			{"PropertiesBytes", string(v.PropertiesBytes()), string(EncodeProperties(e.Properties))},
			{"TagsHashCode", v.TagsHashCode(), TagsHashCode("TagA")},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("v6=%v %s = %v, want %v", v6, c.name, c.got, c.want)
			}
		}
		if k, ok := v.Property(PropertyKeys); !ok || string(k) != "k1 k2" {
			t.Errorf("Property(KEYS) = %q %v", k, ok)
		}
		if err := v.VerifyBodyCRC(); err != nil {
			t.Error(err)
		}
		d, err := v.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if diff := extDiff(d, e); diff != "" {
			t.Errorf("Decode differs in %s", diff)
		}
	}
}

func TestRecordViewNoTags(t *testing.T) {
	e := sampleExt()
	e.ClearProperty(PropertyTags)
	v, err := ParseView(mustAppend(t, e))
	if err != nil {
		t.Fatal(err)
	}
	if v.TagsHashCode() != 0 {
		t.Fatalf("TagsHashCode without tags = %d", v.TagsHashCode())
	}
}

func TestParseViewDoesNotAllocate(t *testing.T) {
	b := mustAppend(t, sampleExt())
	var sink int64
	allocs := testing.AllocsPerRun(100, func() {
		v, err := ParseView(b)
		if err != nil {
			t.Fatal(err)
		}
		sink += v.QueueOffset() + v.TagsHashCode() + int64(len(v.TopicBytes())) + int64(v.StoreHost().Port())
		if _, ok := v.Property(PropertyUniqKey); !ok {
			t.Fatal("no UNIQ_KEY")
		}
	})
	if allocs != 0 {
		t.Fatalf("ParseView and accessors allocate %.1f times per record", allocs)
	}
	_ = sink
}
