package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/store"
)

func TestResponseFor(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("context: %w", err) }
	cases := []struct {
		err  error
		code int16
	}{
		{nil, remoting.Success},
		{wrap(dledger.ErrNotLeader), remoting.ServiceNotAvailable},
		{wrap(dledger.ErrNotReady), remoting.ServiceNotAvailable},
		{wrap(dledger.ErrClosed), remoting.ServiceNotAvailable},
		{wrap(ErrNoLeader), remoting.ServiceNotAvailable},
		{wrap(store.ErrDiskFull), remoting.ServiceNotAvailable},
		{wrap(store.ErrWriteFailed), remoting.ServiceNotAvailable},
		{wrap(dledger.ErrBusy), remoting.SystemBusy},
		{wrap(remoting.ErrBusy), remoting.SystemBusy},
		{wrap(dledger.ErrOutcomeUnknown), remoting.SystemError},
		{wrap(context.DeadlineExceeded), remoting.SystemError},
		{wrap(store.ErrBadMessage), remoting.MessageIllegal},
		{wrap(dledger.ErrTooLarge), remoting.MessageIllegal},
		{wrap(message.ErrBadProperties), remoting.MessageIllegal},
		{wrap(ErrMessageIllegal), remoting.MessageIllegal},
		{wrap(ErrTopicNotExist), remoting.TopicNotExist},
		{wrap(ErrNoPermission), remoting.NoPermission},
		{wrap(ErrInvalidParameter), remoting.InvalidParameter},
		{wrap(metadata.ErrBadOp), remoting.InvalidParameter},
		{wrap(protocol.ErrBadName), remoting.InvalidParameter},
		{wrap(ErrNotFound), remoting.QueryNotFound},
		{wrap(ErrBadRequest), remoting.SystemError},
		{errors.New("anything else"), remoting.SystemError},
	}
	for _, c := range cases {
		code, remark := responseFor(c.err)
		if code != c.code {
			t.Errorf("%v: code %d, want %d", c.err, code, c.code)
		}
		if c.err != nil && !strings.Contains(remark, c.err.Error()) {
			t.Errorf("%v: remark %q lacks the error", c.err, remark)
		}
	}
	if _, remark := responseFor(dledger.ErrBusy); !strings.HasPrefix(remark, "[TOO_MANY_REQUESTS]") {
		t.Errorf("busy remark %q", remark)
	}
	if _, remark := responseFor(store.ErrDiskFull); !strings.Contains(remark, "disk is full") {
		t.Errorf("disk-full remark %q", remark)
	}
}

func TestParseSendHeader(t *testing.T) {
	long := sendRequest("T", 2, map[string]string{"TAGS": "a"}, "").ExtFields
	h, err := parseSendHeader(remoting.SendMessage, long)
	if err != nil || h.Topic != "T" || h.QueueID != 2 || h.DefaultTopicQueueNums != 4 || h.ProducerGroup != "pg1" || h.Batch {
		t.Fatalf("%+v %v", h, err)
	}
	short := batchRequest("T", 1, nil).ExtFields
	h, err = parseSendHeader(remoting.SendBatchMessage, short)
	if err != nil || h.Topic != "T" || h.QueueID != 1 || !h.Batch || h.BrokerName != "broker-a" {
		t.Fatalf("%+v %v", h, err)
	}
	if _, err := parseSendHeader(remoting.SendMessage, short); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("short names read as long: %v", err)
	}
}

func FuzzParseSendHeader(f *testing.F) {
	f.Add("T", "0", "0", "123", "TAGS\x01a\x02", true)
	f.Add("", "x", "-1", "", "", false)
	f.Fuzz(func(t *testing.T, topic, queueID, sysFlag, born, props string, short bool) {
		names := []string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp", "flag", "properties"}
		if short {
			names = []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
		}
		vals := []string{"g", topic, "TBW102", "4", queueID, sysFlag, born, "0", props}
		ext := map[string]string{}
		for i, n := range names {
			ext[n] = vals[i]
		}
		code := remoting.SendMessage
		if short {
			code = remoting.SendMessageV2
		}
		h, err := parseSendHeader(code, ext)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("error %v does not wrap ErrBadRequest", err)
			}
			return
		}
		if h.Topic != topic || h.Properties != props {
			t.Fatalf("header %+v", h)
		}
	})
}
