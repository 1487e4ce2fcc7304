package client

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// checkSendResponse compares decodeSendResponse on a list of fields with
// protocol's Decode on their map: the same header, or the same error.
func checkSendResponse(t *testing.T, list []remoting.ExtField) {
	t.Helper()
	cmd := &remoting.Command{ExtList: list}
	var got, want protocol.SendMessageResponseHeader
	gotErr := decodeSendResponse(cmd, &got)
	wantErr := want.Decode(cmd.ExtMap())
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%q: error %v, protocol's %v", list, gotErr, wantErr)
	}
	if got != want {
		t.Fatalf("%q: %+v, protocol's %+v", list, got, want)
	}
	var one [1]string
	if ids := offsetMsgIDs(&got, &one); !reflect.DeepEqual(ids, got.MsgIDs()) {
		t.Fatalf("%q: offset ids %q, protocol's %q", list, ids, got.MsgIDs())
	}
}

// TestDecodeSendResponse checks the list decoding of a send response
// against protocol's map decoding: what brokers send, repeated keys,
// missing and malformed fields.
func TestDecodeSendResponse(t *testing.T) {
	f := func(kv ...string) []remoting.ExtField {
		var l []remoting.ExtField
		for i := 0; i < len(kv); i += 2 {
			l = append(l, remoting.ExtField{Key: kv[i], Value: kv[i+1]})
		}
		return l
	}
	for _, l := range [][]remoting.ExtField{
		f("msgId", "0A00000100002A9F0000000000000001", "queueId", "3", "queueOffset", "42", "transactionId", "", "TRACE_ON", "true", "MSG_REGION", "DefaultRegion"),
		f("msgId", "A,B,C", "queueId", "0", "queueOffset", "0", "TRACE_ON", "false"),
		f("msgId", "", "queueId", "1", "queueOffset", "-1"),
		f("msgId", "A", "queueId", "1", "queueOffset", "2", "queueId", "x"),
		f("msgId", "A", "queueId", "x", "queueOffset", "2", "queueId", "5"),
		f("msgId", "A", "queueId", "1"),
		f("queueId", "1", "queueOffset", "2"),
		f("msgId", "A", "queueId", "", "queueOffset", "2"),
		f("msgId", "A", "queueId", "2147483648", "queueOffset", "2"),
		f("msgId", "A", "queueId", "+7", "queueOffset", "9223372036854775807", "TRACE_ON", ""),
		f("msgId", "A", "queueId", "1", "queueOffset", "2", "recallHandle", "djEgdCBiIDEgdQ==", "dedupWindowMs", "120000", "duplicate", "true"),
		f("msgId", "A", "queueId", "1", "queueOffset", "2", "dedupWindowMs", "", "duplicate", "TRUE"),
		f("msgId", "A", "queueId", "1", "queueOffset", "2", "dedupWindowMs", "x"),
		f("msgId", "A", "queueId", "1", "queueOffset", "2", "dedupWindowMs", "5", "dedupWindowMs", "-7", "duplicate", "false"),
		nil,
	} {
		checkSendResponse(t, l)
	}
	// A response decoded into a map (a caller that did not ask for the
	// list) reads the same.
	m := &remoting.Command{ExtFields: map[string]string{"msgId": "A", "queueId": "1", "queueOffset": "2"}}
	var h protocol.SendMessageResponseHeader
	if err := decodeSendResponse(m, &h); err != nil || h.MsgID != "A" || h.QueueID != 1 || h.QueueOffset != 2 {
		t.Fatalf("from a map: %+v %v", h, err)
	}
}

// FuzzDecodeSendResponse: for any fields a broker sends (here "k=v"
// items separated by NUL), the list decoding agrees with protocol's.
func FuzzDecodeSendResponse(f *testing.F) {
	f.Add("msgId=A\x00queueId=1\x00queueOffset=2\x00TRACE_ON=true")
	f.Add("msgId=A,B\x00queueId=1\x00queueOffset=2\x00queueOffset=x")
	f.Add("msgId=\x00queueId= 1\x00queueOffset=2\x00MSG_REGION=r")
	f.Add("msgId=A\x00queueId=1\x00queueOffset=2\x00dedupWindowMs=120000\x00duplicate=true\x00recallHandle=h")
	f.Fuzz(func(t *testing.T, s string) {
		var l []remoting.ExtField
		for _, item := range strings.Split(s, "\x00") {
			k, v, _ := strings.Cut(item, "=")
			l = append(l, remoting.ExtField{Key: k, Value: v})
		}
		checkSendResponse(t, l)
	})
}

// TestSendContext checks the send context without a timer: its deadline
// and errors before and after the deadline with Done never called, the
// caller's cancellation, the call options it gives while unarmed, and
// that Done, once called, closes at the deadline.
func TestSendContext(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx, s := withSendTimeout(parent, time.Now(), time.Hour, nil)
	defer s.stop()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) < 59*time.Minute {
		t.Fatalf("deadline %v %v", dl, ok)
	}
	if ctx.Err() != nil {
		t.Fatal(ctx.Err())
	}
	cctx, o := callContext(ctx)
	if cctx != parent || o.Deadline != s.deadline {
		t.Fatalf("call context %v, options %+v", cctx, o)
	}

	// Past its deadline, with no timer: Err says so at once.
	past, ps := withSendTimeout(parent, time.Now(), -time.Millisecond, nil)
	if !errors.Is(past.Err(), context.DeadlineExceeded) {
		t.Fatalf("past: %v", past.Err())
	}
	ps.stop()

	// Done arms a timer: the channel closes at the deadline.
	short, ss := withSendTimeout(parent, time.Now(), 10*time.Millisecond, nil)
	defer ss.stop()
	select {
	case <-short.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done never closed")
	}
	if !errors.Is(short.Err(), context.DeadlineExceeded) {
		t.Fatalf("after Done: %v", short.Err())
	}
	if cctx, o := callContext(short); cctx != short || !o.Deadline.IsZero() {
		t.Fatal("an armed context still handed its deadline to the call")
	}

	// The caller's cancellation shows through, armed or not.
	cancel()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("cancelled: %v", ctx.Err())
	}
	<-ctx.Done()

	// A caller's earlier deadline is used as it is.
	early, cancelEarly := context.WithTimeout(context.Background(), time.Minute)
	defer cancelEarly()
	if got, s := withSendTimeout(early, time.Now(), time.Hour, nil); got != early || s != nil {
		t.Fatal("the send timeout replaced an earlier deadline")
	}
}
