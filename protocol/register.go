package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Limits applied to REGISTER_BROKER bodies.
const (
	// MaxInflatedBody bounds the inflated size of a compressed body, so a
	// small frame cannot expand into gigabytes.
	MaxInflatedBody = 64 << 20
)

// DecodeRegisterBody decodes a REGISTER_BROKER body: JSON when compressed
// is false, RocketMQ's deflated layout (doc.go) when it is true. An empty
// body is an empty topic table with a zero DataVersion, as Java's name
// server reads a body-less registration. The result is validated: every
// topic has a name equal to its table key (a missing topicName takes the
// key) and queue counts within [0, MaxQueueNums]. Errors wrap ErrBadBody.
// It never panics, whatever the input.
func DecodeRegisterBody(body []byte, compressed bool) (*RegisterBrokerBody, error) {
	return decodeRegisterBody(body, compressed, MaxInflatedBody)
}

// decodeRegisterBody is DecodeRegisterBody with the inflation limit as a
// parameter (tests use a small one).
func decodeRegisterBody(body []byte, compressed bool, maxInflated int) (*RegisterBrokerBody, error) {
	b := &RegisterBrokerBody{}
	if len(body) == 0 {
		b.TopicConfigSerializeWrapper.TopicConfigTable = map[string]TopicConfig{}
		return b, nil
	}
	var err error
	if compressed {
		err = decodeCompressed(body, b, maxInflated)
	} else {
		err = decodeJSONBody(body, b)
	}
	if err != nil {
		return nil, err
	}
	if err := b.normalize(); err != nil {
		return nil, err
	}
	return b, nil
}

// Encode returns the body as JSON, or in the deflated layout when
// compressed is true (which carries only name, queue counts, perm, filter
// type and attributes of each topic, as Java's). Output is deterministic:
// topics sorted by name.
func (b *RegisterBrokerBody) Encode(compressed bool) ([]byte, error) {
	if !compressed {
		out := *b
		if out.TopicConfigSerializeWrapper.TopicConfigTable == nil {
			out.TopicConfigSerializeWrapper.TopicConfigTable = map[string]TopicConfig{}
		}
		if out.FilterServerList == nil {
			out.FilterServerList = []string{}
		}
		return json.Marshal(&out)
	}
	return encodeCompressed(b)
}

// decodeJSONBody parses the JSON form. The top level must be an object:
// "null" would otherwise decode to nothing.
func decodeJSONBody(body []byte, b *RegisterBrokerBody) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("%w: not a JSON object", ErrBadBody)
	}
	if err := json.Unmarshal(body, b); err != nil {
		return fmt.Errorf("%w: %w", ErrBadBody, err)
	}
	return nil
}

// normalize fills missing topic names from their keys and checks every
// topic.
func (b *RegisterBrokerBody) normalize() error {
	w := &b.TopicConfigSerializeWrapper
	if w.TopicConfigTable == nil {
		w.TopicConfigTable = map[string]TopicConfig{}
	}
	for key, tc := range w.TopicConfigTable {
		if tc.TopicName == "" {
			tc.TopicName = key
			w.TopicConfigTable[key] = tc
		}
		if err := CheckTopicConfig(tc); err != nil {
			return err
		}
		if tc.TopicName != key {
			return fmt.Errorf("%w: topic %q listed under key %q", ErrBadBody, tc.TopicName, key)
		}
	}
	return nil
}

// CheckTopicConfig validates what a name server serves of a topic: a
// name and queue counts within [0, MaxQueueNums]. Errors wrap ErrBadBody.
func CheckTopicConfig(tc TopicConfig) error {
	switch {
	case tc.TopicName == "":
		return fmt.Errorf("%w: topic without a name", ErrBadBody)
	case tc.ReadQueueNums < 0 || tc.ReadQueueNums > MaxQueueNums:
		return fmt.Errorf("%w: topic %q: readQueueNums %d outside [0, %d]", ErrBadBody, tc.TopicName, tc.ReadQueueNums, MaxQueueNums)
	case tc.WriteQueueNums < 0 || tc.WriteQueueNums > MaxQueueNums:
		return fmt.Errorf("%w: topic %q: writeQueueNums %d outside [0, %d]", ErrBadBody, tc.TopicName, tc.WriteQueueNums, MaxQueueNums)
	}
	return nil
}

// decodeCompressed inflates body and parses the length-prefixed layout.
func decodeCompressed(body []byte, b *RegisterBrokerBody, maxInflated int) error {
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: inflate: %w", ErrBadBody, err)
	}
	defer zr.Close()
	raw, err := io.ReadAll(io.LimitReader(zr, int64(maxInflated)+1))
	if err != nil {
		return fmt.Errorf("%w: inflate: %w", ErrBadBody, err)
	}
	if len(raw) > maxInflated {
		return fmt.Errorf("%w: inflates past %d bytes", ErrBadBody, maxInflated)
	}
	r := lenReader{buf: raw}

	dv, err := r.chunk("dataVersion")
	if err != nil {
		return err
	}
	w := &b.TopicConfigSerializeWrapper
	if err := json.Unmarshal(dv, &w.DataVersion); err != nil {
		return fmt.Errorf("%w: dataVersion: %w", ErrBadBody, err)
	}
	count, err := r.int32("topic count")
	if err != nil {
		return err
	}
	if count < 0 {
		return fmt.Errorf("%w: negative topic count %d", ErrBadBody, count)
	}
	w.TopicConfigTable = make(map[string]TopicConfig, min(int(count), 1024))
	for i := range int(count) {
		text, err := r.chunk("topic config")
		if err != nil {
			return fmt.Errorf("topic %d: %w", i, err)
		}
		tc, err := parseTopicText(string(text))
		if err != nil {
			return err
		}
		w.TopicConfigTable[tc.TopicName] = tc
	}
	filters, err := r.chunk("filter server list")
	if err != nil {
		return err
	}
	// Java ignores a filter-server list it cannot parse.
	var list []string
	if json.Unmarshal(filters, &list) == nil {
		b.FilterServerList = list
	}
	// Static-topic queue mappings (brokers of version 5 and later); the
	// name server does not serve them, but checks their framing.
	if r.remaining() == 0 {
		return nil
	}
	n, err := r.int32("queue mapping count")
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("%w: negative queue mapping count %d", ErrBadBody, n)
	}
	for range int(n) {
		if _, err := r.chunk("queue mapping"); err != nil {
			return err
		}
	}
	return nil
}

// parseTopicText parses Java's TopicConfig.encode text:
// "<name> <read> <write> <perm> <filterType>[ <attributesJSON>]".
func parseTopicText(s string) (TopicConfig, error) {
	f := strings.SplitN(s, " ", 6)
	if len(f) < 5 {
		return TopicConfig{}, fmt.Errorf("%w: topic config %q has %d fields, want 5 or 6", ErrBadBody, s, len(f))
	}
	tc := TopicConfig{TopicName: f[0], TopicFilterType: f[4]}
	for i, dst := range []*int32{&tc.ReadQueueNums, &tc.WriteQueueNums, &tc.Perm} {
		n, err := strconv.ParseInt(f[1+i], 10, 32)
		if err != nil {
			return TopicConfig{}, fmt.Errorf("%w: topic config %q: field %d: %w", ErrBadBody, s, 1+i, err)
		}
		*dst = int32(n)
	}
	if tc.TopicFilterType != FilterSingleTag && tc.TopicFilterType != FilterMultiTag {
		return TopicConfig{}, fmt.Errorf("%w: topic config %q: unknown filter type", ErrBadBody, s)
	}
	if len(f) == 6 && f[5] != "" {
		// Java ignores attributes it cannot parse (a value with a space
		// splits the JSON apart).
		var attrs map[string]string
		if json.Unmarshal([]byte(f[5]), &attrs) == nil {
			tc.Attributes = attrs
		}
	}
	if err := CheckTopicConfig(tc); err != nil {
		return TopicConfig{}, err
	}
	return tc, nil
}

// encodeCompressed writes the deflated layout.
func encodeCompressed(b *RegisterBrokerBody) ([]byte, error) {
	var raw bytes.Buffer
	w := b.TopicConfigSerializeWrapper
	dv, err := json.Marshal(w.DataVersion)
	if err != nil {
		return nil, err
	}
	putChunk(&raw, dv)
	names := make([]string, 0, len(w.TopicConfigTable))
	for name := range w.TopicConfigTable {
		names = append(names, name)
	}
	slices.Sort(names)
	putInt32(&raw, int32(len(names)))
	for _, name := range names {
		tc := w.TopicConfigTable[name]
		if tc.TopicName == "" {
			tc.TopicName = name
		}
		if strings.Contains(tc.TopicName, " ") {
			return nil, fmt.Errorf("%w: topic %q: the compressed form cannot carry a space in a name", ErrBadBody, tc.TopicName)
		}
		filter := tc.TopicFilterType
		if filter == "" {
			filter = FilterSingleTag
		}
		text := fmt.Sprintf("%s %d %d %d %s ", tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, filter)
		if tc.Attributes != nil {
			attrs, err := json.Marshal(tc.Attributes)
			if err != nil {
				return nil, err
			}
			text += string(attrs)
		}
		putChunk(&raw, []byte(text))
	}
	filters := b.FilterServerList
	if filters == nil {
		filters = []string{}
	}
	fl, err := json.Marshal(filters)
	if err != nil {
		return nil, err
	}
	putChunk(&raw, fl)
	putInt32(&raw, 0) // no static-topic queue mappings

	var out bytes.Buffer
	zw, err := zlib.NewWriterLevel(&out, zlib.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func putInt32(buf *bytes.Buffer, n int32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(n))
	buf.Write(b[:])
}

func putChunk(buf *bytes.Buffer, p []byte) {
	putInt32(buf, int32(len(p)))
	buf.Write(p)
}

// lenReader reads big-endian int32s and int32-length-prefixed chunks from
// an inflated body, checking every length against what remains.
type lenReader struct {
	buf []byte
	off int
}

var errShort = errors.New("truncated")

func (r *lenReader) remaining() int { return len(r.buf) - r.off }

func (r *lenReader) int32(what string) (int32, error) {
	if r.remaining() < 4 {
		return 0, fmt.Errorf("%w: %s: %w", ErrBadBody, what, errShort)
	}
	n := int32(binary.BigEndian.Uint32(r.buf[r.off:]))
	r.off += 4
	return n, nil
}

func (r *lenReader) chunk(what string) ([]byte, error) {
	n, err := r.int32(what + " length")
	if err != nil {
		return nil, err
	}
	if n < 0 || int(n) > r.remaining() {
		return nil, fmt.Errorf("%w: %s: length %d with %d bytes left", ErrBadBody, what, n, r.remaining())
	}
	p := r.buf[r.off : r.off+int(n)]
	r.off += int(n)
	return p, nil
}
