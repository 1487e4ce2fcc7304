package protocol

import (
	"encoding/json"
	"fmt"
)

// ClusterACLConfig is the body of a GET_BROKER_CLUSTER_ACL_CONFIG (54)
// answer (Java GetBrokerClusterAclConfigResponseBody): the rules the
// broker enforces, as its plain_acl.yml writes them, secret keys included
// (the request needs an admin account).
//
//	{"globalWhiteAddrs":["10.0.0.*"],"plainAccessConfigs":[{"accessKey":"ak",
//	 "secretKey":"sk","whiteRemoteAddress":"","admin":false,
//	 "defaultTopicPerm":"PUB","defaultGroupPerm":"SUB",
//	 "topicPerms":["t=PUB"],"groupPerms":["g=SUB"]}]}
type ClusterACLConfig struct {
	GlobalWhiteAddrs   []string            `json:"globalWhiteAddrs"`
	PlainAccessConfigs []PlainAccessConfig `json:"plainAccessConfigs"`
}

// PlainAccessConfig is one account of a ClusterACLConfig.
type PlainAccessConfig struct {
	AccessKey          string   `json:"accessKey"`
	SecretKey          string   `json:"secretKey"`
	WhiteRemoteAddress string   `json:"whiteRemoteAddress"`
	Admin              bool     `json:"admin"`
	DefaultTopicPerm   string   `json:"defaultTopicPerm"`
	DefaultGroupPerm   string   `json:"defaultGroupPerm"`
	TopicPerms         []string `json:"topicPerms"`
	GroupPerms         []string `json:"groupPerms"`
}

// Encode returns the JSON body.
func (c *ClusterACLConfig) Encode() ([]byte, error) { return json.Marshal(c) }

// DecodeClusterACLConfig reads a GET_BROKER_CLUSTER_ACL_CONFIG body.
func DecodeClusterACLConfig(body []byte) (ClusterACLConfig, error) {
	var c ClusterACLConfig
	if err := json.Unmarshal(body, &c); err != nil {
		return c, fmt.Errorf("%w: cluster acl config: %w", ErrBadBody, err)
	}
	return c, nil
}
