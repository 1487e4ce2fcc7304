package acl

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Description is a plain_acl.yml as written (Parse reads it first; RocketMQ's
// GET_BROKER_CLUSTER_ACL_CONFIG answers it so): the global white list and
// each account with its settings as text, secret keys included.
type Description struct {
	GlobalWhiteAddrs []string             `yaml:"globalWhiteRemoteAddresses"`
	Accounts         []AccountDescription `yaml:"accounts"`
}

// AccountDescription is one account of a Description.
type AccountDescription struct {
	AccessKey          string   `yaml:"accessKey"`
	SecretKey          string   `yaml:"secretKey"`
	WhiteRemoteAddress string   `yaml:"whiteRemoteAddress"`
	Admin              bool     `yaml:"admin"`
	DefaultTopicPerm   string   `yaml:"defaultTopicPerm"`
	DefaultGroupPerm   string   `yaml:"defaultGroupPerm"`
	TopicPerms         []string `yaml:"topicPerms"`
	GroupPerms         []string `yaml:"groupPerms"`
}

// Describe reads a plain_acl.yml that Parse accepts, as written.
func Describe(data []byte) (Description, error) {
	if _, err := Parse(data); err != nil {
		return Description{}, err
	}
	var d Description
	if err := yaml.Unmarshal(data, &d); err != nil {
		return Description{}, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return d, nil
}

// Parse reads the rules d describes, as Parse reads the file d was read
// from (a front end handed them over the network, e.g. a
// GET_BROKER_CLUSTER_ACL_CONFIG answer): the same checks, the same
// decisions.
func (d Description) Parse() (*ACL, error) {
	data, err := yaml.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return Parse(data)
}
