package protocol

import (
	"errors"
	"fmt"

	"github.com/ledgermq/ledgermq/message"
)

// Topic and consumer-group names.
//
// A topic name is RocketMQ's TopicValidator rule: 1 to 127 bytes of
// [%|a-zA-Z0-9_-]. 127 is the stored record's one-byte topic length (magic
// v1), the only layout rocketmq-client-go decodes; Java switches to a
// two-byte length for longer topics, which we never write.
//
// A consumer group derives two topics, %RETRY%<group> and %DLQ%<group>,
// which must be valid topics too, or a retry could never be stored: so a
// group name is the topic charset and at most MaxGroupLength = 127 − 7 =
// 120 bytes (the %RETRY% name is the longer one). Java clients allow
// groups of up to 255 characters; a group of 121 to 255 is refused here
// wherever it enters (heartbeat, subscription-group admin, send-back,
// pull, offset commits) rather than accepted and its retries lost later.
const (
	// MaxTopicLength is the longest topic name, in bytes.
	MaxTopicLength = message.MaxTopicLength
	// RetryTopicPrefix names a group's retry topic (Java
	// MixAll.RETRY_GROUP_TOPIC_PREFIX).
	RetryTopicPrefix = "%RETRY%"
	// DLQTopicPrefix names a group's dead-letter topic (Java
	// MixAll.DLQ_GROUP_TOPIC_PREFIX).
	DLQTopicPrefix = "%DLQ%"
	// MaxGroupLength is the longest consumer group name, in bytes: the
	// longest whose %RETRY% topic is still a valid topic.
	MaxGroupLength = MaxTopicLength - len(RetryTopicPrefix)
)

// ErrBadName: a topic or group name that is empty, too long or has a
// character outside [%|a-zA-Z0-9_-].
var ErrBadName = errors.New("protocol: illegal name")

// ValidateTopic checks a topic name. Errors wrap ErrBadName.
func ValidateTopic(name string) error {
	return validateName("topic", name, MaxTopicLength)
}

// ValidateGroup checks a consumer group name, so that RetryTopic(name)
// and DLQTopic(name) are valid topics. Errors wrap ErrBadName.
func ValidateGroup(name string) error {
	return validateName("group", name, MaxGroupLength)
}

// RetryTopic is a consumer group's retry topic, %RETRY%<group>.
func RetryTopic(group string) string { return RetryTopicPrefix + group }

// DLQTopic is a consumer group's dead-letter topic, %DLQ%<group>.
func DLQTopic(group string) string { return DLQTopicPrefix + group }

func validateName(kind, name string, limit int) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty %s name", ErrBadName, kind)
	case len(name) > limit:
		return fmt.Errorf("%w: %s name of %d bytes is longer than %d", ErrBadName, kind, len(name), limit)
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return fmt.Errorf("%w: %s name %q has %q at byte %d, outside [%%|a-zA-Z0-9_-]", ErrBadName, kind, name, name[i], i)
		}
	}
	return nil
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '%' || c == '|'
}
