package broker

import (
	"bytes"
	"errors"
	"maps"
	"testing"
)

func encodeBatch(items []batchItem) []byte {
	var out []byte
	for _, it := range items {
		out = append(out, encodeBatchItem(it.Flag, it.Body, it.Properties)...)
	}
	return out
}

func TestDecodeBatch(t *testing.T) {
	good := capturedBatch()
	if len(good) != 78 {
		t.Fatalf("captured batch is %d bytes, want 2 × 39", len(good))
	}
	items, err := decodeBatch(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || string(items[0].Body) != "batch-1" || items[1].Properties["TAGS"] != "TagC" {
		t.Fatalf("decoded %+v", items)
	}

	bad := func(mut func(b []byte) []byte) []byte { return mut(bytes.Clone(good)) }
	cases := []struct {
		name string
		body []byte
	}{
		{"empty", nil},
		{"short", good[:10]},
		{"truncated second item", good[:len(good)-1]},
		{"size too big", bad(func(b []byte) []byte { b[3]++; return b })},
		{"size too small", bad(func(b []byte) []byte { b[3]--; return b })},
		{"negative body length", bad(func(b []byte) []byte { b[16] = 0xff; return b })},
		{"body length past end", bad(func(b []byte) []byte { b[18] = 0x7f; return b })},
		{"negative properties length", bad(func(b []byte) []byte { b[27] = 0xff; return b })},
		{"bad properties", bad(func(b []byte) []byte { b[29+4] = 0x02; return b })},
		{"trailing garbage", append(bytes.Clone(good), 0, 0, 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := decodeBatch(c.body); !errors.Is(err, ErrMessageIllegal) {
				t.Fatalf("err = %v, want ErrMessageIllegal", err)
			}
		})
	}
}

func FuzzDecodeBatch(f *testing.F) {
	f.Add(capturedBatch())
	f.Add(encodeBatchItem(7, nil, nil))
	f.Add(encodeBatchItem(-1, []byte{0, 1, 2}, map[string]string{"KEYS": "a b", "UNIQ_KEY": "x"}))
	f.Add([]byte{})
	f.Add(make([]byte, batchItemMin))
	f.Fuzz(func(t *testing.T, b []byte) {
		items, err := decodeBatch(b)
		if err != nil {
			if !errors.Is(err, ErrMessageIllegal) {
				t.Fatalf("error %v does not wrap ErrMessageIllegal", err)
			}
			return
		}
		again, err := decodeBatch(encodeBatch(items))
		if err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		if len(again) != len(items) {
			t.Fatalf("%d items, then %d", len(items), len(again))
		}
		for i := range items {
			if again[i].Flag != items[i].Flag || !bytes.Equal(again[i].Body, items[i].Body) ||
				!maps.Equal(again[i].Properties, items[i].Properties) {
				t.Fatalf("item %d: %+v, then %+v", i, items[i], again[i])
			}
		}
	})
}

func BenchmarkDecodeBatch(b *testing.B) {
	var body []byte
	for i := 0; i < 32; i++ {
		body = append(body, encodeBatchItem(0, bytes.Repeat([]byte{'x'}, 1024), map[string]string{"TAGS": "TagA", "KEYS": "k1"})...)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeBatch(body); err != nil {
			b.Fatal(err)
		}
	}
}
