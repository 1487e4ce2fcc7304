package metadata

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// Sentinel errors.
var (
	// ErrBadOp is returned for an op that cannot be decoded or applied.
	ErrBadOp = errors.New("metadata: bad op")
	// ErrBadFile is returned by Load for a damaged state file.
	ErrBadFile = errors.New("metadata: bad state file")
)

// Permission bits of a topic, as RocketMQ's PermName.
const (
	PermPriority = 8
	PermRead     = 4
	PermWrite    = 2
	PermInherit  = 1
)

// TopicConfig is RocketMQ's TopicConfig.
type TopicConfig struct {
	TopicName       string            `json:"topicName"`
	ReadQueueNums   int32             `json:"readQueueNums"`
	WriteQueueNums  int32             `json:"writeQueueNums"`
	Perm            int32             `json:"perm"`
	TopicFilterType string            `json:"topicFilterType"`
	TopicSysFlag    int32             `json:"topicSysFlag"`
	Order           bool              `json:"order"`
	Attributes      map[string]string `json:"attributes,omitempty"`
}

// SubscriptionGroup is RocketMQ's SubscriptionGroupConfig (the fields the
// broker uses).
type SubscriptionGroup struct {
	GroupName                      string `json:"groupName"`
	ConsumeEnable                  bool   `json:"consumeEnable"`
	ConsumeFromMinEnable           bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool   `json:"consumeBroadcastEnable"`
	RetryQueueNums                 int32  `json:"retryQueueNums"`
	RetryMaxTimes                  int32  `json:"retryMaxTimes"`
	BrokerID                       int64  `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64  `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool   `json:"notifyConsumerIdsChangedEnable"`
	// ConsumeMessageOrderly makes the group a FIFO group: POP hands out a
	// queue's messages in order, the next only once those before it are
	// acknowledged (broker/pop_receive.go). Format version 5: a putGroup
	// op that sets it travels in an entry of version 5 (dledger).
	ConsumeMessageOrderly bool `json:"consumeMessageOrderly,omitempty"`
}

// OffsetCommit is one consumer offset in a coalesced commit.
type OffsetCommit struct {
	Group   string `json:"group"`
	Topic   string `json:"topic"`
	QueueID int32  `json:"queueId"`
	Offset  int64  `json:"offset"`
}

// Op kinds.
const (
	OpPutTopic      = "putTopic"
	OpDeleteTopic   = "deleteTopic"
	OpPutGroup      = "putGroup"
	OpDeleteGroup   = "deleteGroup"
	OpCommitOffsets = "commitOffsets"
)

// Op is one replicated metadata change.
type Op struct {
	Kind    string             `json:"kind"`
	Topic   *TopicConfig       `json:"topic,omitempty"`
	Group   *SubscriptionGroup `json:"group,omitempty"`
	Name    string             `json:"name,omitempty"`
	Offsets []OffsetCommit     `json:"offsets,omitempty"`
	// Settings and Bootstrap: OpSettings. Version: OpFormatVersion.
	Settings  *Settings `json:"settings,omitempty"`
	Bootstrap bool      `json:"bootstrap,omitempty"`
	Version   uint32    `json:"version,omitempty"`
	// ACL: OpACL (acl.go).
	ACL *ACLChange `json:"acl,omitempty"`
	// Pop: OpPop (pop.go).
	Pop []PopChange `json:"pop,omitempty"`
}

// EncodeOp returns the wire form of an op (what a raft entry carries).
func EncodeOp(op Op) ([]byte, error) {
	if err := op.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(op)
}

// DecodeOp parses and validates an op.
func DecodeOp(b []byte) (Op, error) {
	var op Op
	if err := json.Unmarshal(b, &op); err != nil {
		return Op{}, fmt.Errorf("%w: %v", ErrBadOp, err)
	}
	return op, op.validate()
}

func (op Op) validate() error {
	switch op.Kind {
	case OpPutTopic:
		if op.Topic == nil || op.Topic.TopicName == "" || op.Topic.ReadQueueNums < 0 || op.Topic.WriteQueueNums < 0 {
			return fmt.Errorf("%w: putTopic needs a named topic with queue counts >= 0", ErrBadOp)
		}
	case OpPutGroup:
		if op.Group == nil || op.Group.GroupName == "" {
			return fmt.Errorf("%w: putGroup needs a named group", ErrBadOp)
		}
	case OpDeleteTopic, OpDeleteGroup:
		if op.Name == "" {
			return fmt.Errorf("%w: %s needs a name", ErrBadOp, op.Kind)
		}
	case OpCommitOffsets:
		for _, o := range op.Offsets {
			if o.Group == "" || o.Topic == "" || o.QueueID < 0 || o.Offset < 0 {
				return fmt.Errorf("%w: offset commit %+v", ErrBadOp, o)
			}
		}
	case OpSettings:
		if op.Settings == nil {
			return fmt.Errorf("%w: settings op without settings", ErrBadOp)
		}
		return op.Settings.Validate()
	case OpFormatVersion:
		if op.Version < 1 {
			return fmt.Errorf("%w: format version %d", ErrBadOp, op.Version)
		}
	case OpRaftLog:
	case OpACL:
		return op.ACL.validate()
	case OpPop:
		return validatePop(op.Pop)
	default:
		return fmt.Errorf("%w: unknown kind %q", ErrBadOp, op.Kind)
	}
	return nil
}

// State is the replicated metadata.
type State struct {
	mu      sync.RWMutex
	applied uint64
	topics  map[string]TopicConfig
	groups  map[string]SubscriptionGroup
	offsets map[string]map[int32]int64 // "group@topic" -> queue -> offset
	// settings are the group-wide settings (nil until recorded);
	// formatVersion the group's format version (0 reads as 1).
	settings      *Settings
	formatVersion uint32
	// oneLogSince: see OneLogSince.
	oneLogSince uint64
	// acl are the access-control rules in force (nil until recorded),
	// aclIndex their raft index for lock-free readers (acl.go).
	acl      *ACLRules
	aclIndex atomic.Uint64
	// pop is the POP consumption state (pop.go).
	pop map[popKey]*popQueue
}

// New returns an empty state.
func New() *State {
	return &State{
		topics:  map[string]TopicConfig{},
		groups:  map[string]SubscriptionGroup{},
		offsets: map[string]map[int32]int64{},
		pop:     map[popKey]*popQueue{},
	}
}

func offsetKey(group, topic string) string { return group + "@" + topic }

// AppliedIndex is the raft index of the last op applied.
func (s *State) AppliedIndex() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.applied
}

// Apply applies op carried by the raft entry at index. It returns false
// when the entry was applied before and skipped.
func (s *State) Apply(index uint64, op Op) (bool, error) {
	if err := op.validate(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if index <= s.applied {
		return false, nil
	}
	s.applied = index
	switch op.Kind {
	case OpPutTopic:
		t := *op.Topic
		t.Attributes = cloneMap(t.Attributes)
		s.topics[t.TopicName] = t
	case OpDeleteTopic:
		delete(s.topics, op.Name)
		for k := range s.offsets {
			if topicOf(k) == op.Name {
				delete(s.offsets, k)
			}
		}
		s.dropPop(func(k popKey) bool { return k.topic == op.Name })
	case OpPutGroup:
		s.groups[op.Group.GroupName] = *op.Group
	case OpDeleteGroup:
		delete(s.groups, op.Name)
		for k := range s.offsets {
			if groupOf(k) == op.Name {
				delete(s.offsets, k)
			}
		}
		s.dropPop(func(k popKey) bool { return k.group == op.Name })
	case OpCommitOffsets:
		for _, o := range op.Offsets {
			k := offsetKey(o.Group, o.Topic)
			m := s.offsets[k]
			if m == nil {
				m = map[int32]int64{}
				s.offsets[k] = m
			}
			m[o.QueueID] = o.Offset
		}
	case OpSettings:
		if op.Bootstrap && s.settings != nil {
			return false, nil
		}
		v := *op.Settings
		s.settings = &v
	case OpFormatVersion:
		if op.Version <= max(1, s.formatVersion) {
			return false, nil
		}
		s.formatVersion = op.Version
	case OpRaftLog:
		if s.oneLogSince != 0 {
			return false, nil
		}
		s.oneLogSince = index
	case OpACL:
		return s.applyACL(index, op.ACL), nil
	case OpPop:
		s.applyPop(op.Pop)
	}
	return true, nil
}

// Skip records that the entry at index carried no metadata op (so the
// applied index keeps up with the log).
func (s *State) Skip(index uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if index > s.applied {
		s.applied = index
	}
}

func groupOf(k string) string {
	for i := 0; i < len(k); i++ {
		if k[i] == '@' {
			return k[:i]
		}
	}
	return k
}

func topicOf(k string) string {
	for i := 0; i < len(k); i++ {
		if k[i] == '@' {
			return k[i+1:]
		}
	}
	return ""
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Topic returns a topic's config.
func (s *State) Topic(name string) (TopicConfig, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.topics[name]
	t.Attributes = cloneMap(t.Attributes)
	return t, ok
}

// Topics returns every topic config, sorted by name.
func (s *State) Topics() []TopicConfig {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]TopicConfig, 0, len(s.topics))
	for _, t := range s.topics {
		t.Attributes = cloneMap(t.Attributes)
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TopicName < out[j].TopicName })
	return out
}

// Group returns a subscription group's config.
func (s *State) Group(name string) (SubscriptionGroup, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g, ok := s.groups[name]
	return g, ok
}

// Groups returns every subscription group, sorted by name.
func (s *State) Groups() []SubscriptionGroup {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]SubscriptionGroup, 0, len(s.groups))
	for _, g := range s.groups {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupName < out[j].GroupName })
	return out
}

// Offset returns a group's committed offset of a queue.
func (s *State) Offset(group, topic string, queueID int32) (int64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.offsets[offsetKey(group, topic)][queueID]
	return o, ok
}

// OffsetGroups returns, sorted, the groups that have committed an offset
// of a queue of topic.
func (s *State) OffsetGroups(topic string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for k := range s.offsets {
		// Topic names hold no '@' (ValidateTopic), so the last one splits.
		if i := strings.LastIndexByte(k, '@'); i >= 0 && k[i+1:] == topic {
			out = append(out, k[:i])
		}
	}
	sort.Strings(out)
	return out
}

// OffsetGroupsWithPrefix returns, sorted and without repeats, the groups
// whose name starts with prefix that have committed an offset (the
// broker's internal groups: the timer's recalled messages).
func (s *State) OffsetGroupsWithPrefix(prefix string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := map[string]bool{}
	var out []string
	for k := range s.offsets {
		if i := strings.LastIndexByte(k, '@'); i >= 0 && strings.HasPrefix(k[:i], prefix) && !seen[k[:i]] {
			seen[k[:i]] = true
			out = append(out, k[:i])
		}
	}
	sort.Strings(out)
	return out
}

// OffsetTopics returns, sorted, the topics of which group has committed
// an offset.
func (s *State) OffsetTopics(group string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for k := range s.offsets {
		if i := strings.LastIndexByte(k, '@'); i >= 0 && k[:i] == group {
			out = append(out, k[i+1:])
		}
	}
	sort.Strings(out)
	return out
}

// file is the JSON form of a saved state.
type file struct {
	Version      int                          `json:"version"`
	AppliedIndex uint64                       `json:"appliedIndex"`
	Topics       map[string]TopicConfig       `json:"topics"`
	Groups       map[string]SubscriptionGroup `json:"groups"`
	Offsets      map[string]map[string]int64  `json:"offsets"`
	// Settings and FormatVersion are absent in files of groups that never
	// recorded them (version 1 files stay version 1: older readers ignore
	// the fields they do not know).
	Settings      *Settings `json:"settings,omitempty"`
	FormatVersion uint32    `json:"formatVersion,omitempty"`
	// OneLogSince is absent until the group switches to one log.
	OneLogSince uint64 `json:"oneLogSince,omitempty"`
	// ACL is absent until the group records rules.
	ACL *ACLRules `json:"acl,omitempty"`
	// Pop is absent until a group pops (pop.go).
	Pop []popFile `json:"pop,omitempty"`
}

// Marshal returns the state as its JSON document.
func (s *State) Marshal() ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f := file{Version: 1, AppliedIndex: s.applied, Topics: s.topics, Groups: s.groups, Offsets: map[string]map[string]int64{},
		Settings: s.settings, FormatVersion: s.formatVersion, OneLogSince: s.oneLogSince, ACL: s.acl, Pop: s.marshalPop()}
	for k, m := range s.offsets {
		q := make(map[string]int64, len(m))
		for id, o := range m {
			q[strconv.Itoa(int(id))] = o
		}
		f.Offsets[k] = q
	}
	return json.Marshal(f)
}

// Unmarshal replaces the state with a JSON document from Marshal.
func (s *State) Unmarshal(b []byte) error {
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	if f.Version != 1 {
		return fmt.Errorf("%w: version %d", ErrBadFile, f.Version)
	}
	offsets := map[string]map[int32]int64{}
	for k, m := range f.Offsets {
		q := make(map[int32]int64, len(m))
		for id, o := range m {
			n, err := strconv.Atoi(id)
			if err != nil || n < 0 || n > 1<<30 {
				return fmt.Errorf("%w: queue id %q", ErrBadFile, id)
			}
			q[int32(n)] = o
		}
		offsets[k] = q
	}
	if f.Topics == nil {
		f.Topics = map[string]TopicConfig{}
	}
	if f.Groups == nil {
		f.Groups = map[string]SubscriptionGroup{}
	}
	if f.Settings != nil {
		if err := f.Settings.Validate(); err != nil {
			return fmt.Errorf("%w: %v", ErrBadFile, err)
		}
	}
	if err := validateACLFile(f.ACL); err != nil {
		return err
	}
	pop, err := unmarshalPop(f.Pop)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied, s.topics, s.groups, s.offsets = f.AppliedIndex, f.Topics, f.Groups, offsets
	s.settings, s.formatVersion, s.oneLogSince = f.Settings, f.FormatVersion, f.OneLogSince
	s.acl = f.ACL
	s.pop = pop
	idx := uint64(0)
	if f.ACL != nil {
		idx = f.ACL.Index
	}
	s.aclIndex.Store(idx)
	return nil
}

// Save writes the state to path atomically.
func (s *State) Save(path string) error {
	b, err := s.Marshal()
	if err != nil {
		return fmt.Errorf("metadata: save: %w", err)
	}
	return vfs.WriteFileAtomic(vfs.Default, path, b)
}

// Load reads a state saved by Save; a missing file leaves the state empty.
func (s *State) Load(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("metadata: load: %w", err)
	}
	return s.Unmarshal(b)
}
