package protocol

import "github.com/ledgermq/ledgermq/remoting"

// The message look-ups, admin → broker; the answer body is the stored
// records (package message), not JSON.
//
//	code  request             header                       answer header
//	----  ------------------  ---------------------------  ---------------------------
//	12    QUERY_MESSAGE       QueryMessageRequestHeader    QueryMessageResponseHeader (or 22)
//	33    VIEW_MESSAGE_BY_ID  ViewMessageRequestHeader     none

// QueryMessageRequestHeader is the header of QUERY_MESSAGE (12): up to
// MaxNum messages of Topic whose KEYS (or, with UniqueKeyQuery, UNIQ_KEY)
// hold Key, stored within [BeginTimestamp, EndTimestamp] (ms).
//
//	field           ext name           required
//	--------------  -----------------  --------
//	Topic           topic              yes
//	Key             key                yes
//	MaxNum          maxNum             yes  (the broker caps it)
//	BeginTimestamp  beginTimestamp     yes
//	EndTimestamp    endTimestamp       yes
//	UniqueKeyQuery  _UNIQUE_KEY_QUERY       (written only when true)
type QueryMessageRequestHeader struct {
	Topic          string
	Key            string
	MaxNum         int32
	BeginTimestamp int64
	EndTimestamp   int64
	UniqueKeyQuery bool
}

// Encode returns the ext fields; _UNIQUE_KEY_QUERY only when true, as
// Java adds it.
func (h *QueryMessageRequestHeader) Encode() map[string]string {
	ext := map[string]string{
		"topic":          h.Topic,
		"key":            h.Key,
		"maxNum":         itoa32(h.MaxNum),
		"beginTimestamp": itoa64(h.BeginTimestamp),
		"endTimestamp":   itoa64(h.EndTimestamp),
	}
	if h.UniqueKeyQuery {
		ext["_UNIQUE_KEY_QUERY"] = "true"
	}
	return ext
}

// Decode reads the ext fields. A missing required field wraps
// remoting.ErrMissingField, a malformed number remoting.ErrBadHeader.
func (h *QueryMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "QUERY_MESSAGE request header", ext: ext}
	out := QueryMessageRequestHeader{
		Topic:          r.str("topic", true),
		Key:            r.str("key", true),
		MaxNum:         r.int32("maxNum", true),
		BeginTimestamp: r.int64("beginTimestamp", true),
		EndTimestamp:   r.int64("endTimestamp", true),
		UniqueKeyQuery: r.bool("_UNIQUE_KEY_QUERY"),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the QUERY_MESSAGE request.
func (h *QueryMessageRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.QueryMessage, h.Encode(), nil)
}

// QueryMessageResponseHeader is the header of a QUERY_MESSAGE answer: the
// newest store time (ms) and the largest commit-log offset among the
// records of the body.
//
//	field                     ext name                  required
//	------------------------  ------------------------  --------
//	IndexLastUpdateTimestamp  indexLastUpdateTimestamp  yes
//	IndexLastUpdatePhyoffset  indexLastUpdatePhyoffset  yes
type QueryMessageResponseHeader struct {
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyoffset int64
}

// Encode returns the ext fields.
func (h *QueryMessageResponseHeader) Encode() map[string]string {
	return map[string]string{
		"indexLastUpdateTimestamp": itoa64(h.IndexLastUpdateTimestamp),
		"indexLastUpdatePhyoffset": itoa64(h.IndexLastUpdatePhyoffset),
	}
}

// Decode reads the ext fields; both are required.
func (h *QueryMessageResponseHeader) Decode(ext map[string]string) error {
	r := extReader{header: "QUERY_MESSAGE response header", ext: ext}
	out := QueryMessageResponseHeader{
		IndexLastUpdateTimestamp: r.int64("indexLastUpdateTimestamp", true),
		IndexLastUpdatePhyoffset: r.int64("indexLastUpdatePhyoffset", true),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// ViewMessageRequestHeader is the header of VIEW_MESSAGE_BY_ID (33): ext
// offset (required), the commit-log offset an offset msgId carries. Any
// replica answers.
type ViewMessageRequestHeader struct {
	Offset int64
}

// Encode returns the ext fields.
func (h *ViewMessageRequestHeader) Encode() map[string]string {
	return map[string]string{"offset": itoa64(h.Offset)}
}

// Decode reads the ext fields; offset is required.
func (h *ViewMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "VIEW_MESSAGE_BY_ID request header", ext: ext}
	out := ViewMessageRequestHeader{Offset: r.int64("offset", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the VIEW_MESSAGE_BY_ID request.
func (h *ViewMessageRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.ViewMessageByID, h.Encode(), nil)
}
