package grpcapitest

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
)

// ReceiveRequest is a SimpleConsumer's ReceiveMessage of any tag of topic
// for group: up to batch messages, each invisible for invisible, waiting
// up to wait for them.
func ReceiveRequest(group, topic string, batch int32, invisible, wait time.Duration) *v2pb.ReceiveMessageRequest {
	return &v2pb.ReceiveMessageRequest{
		Group:              &v2pb.Resource{Name: group},
		MessageQueue:       &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: topic}},
		FilterExpression:   &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: "*"},
		BatchSize:          batch,
		InvisibleDuration:  durationpb.New(invisible),
		LongPollingTimeout: durationpb.New(wait),
	}
}
