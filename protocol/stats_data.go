package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/ledgermq/ledgermq/remoting"
)

// ViewBrokerStatsDataRequestHeader is the header of VIEW_BROKER_STATS_DATA
// (315): ext statsName (TOPIC_PUT_NUMS, GROUP_GET_NUMS, …) and statsKey
// (a topic, topic@group or the cluster name, as the name says), both
// required.
type ViewBrokerStatsDataRequestHeader struct {
	StatsName string
	StatsKey  string
}

// Encode returns the ext fields.
func (h *ViewBrokerStatsDataRequestHeader) Encode() map[string]string {
	return map[string]string{"statsName": h.StatsName, "statsKey": h.StatsKey}
}

// Decode reads the ext fields; a missing one wraps remoting.ErrMissingField.
func (h *ViewBrokerStatsDataRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "VIEW_BROKER_STATS_DATA request header", ext: ext}
	out := ViewBrokerStatsDataRequestHeader{StatsName: r.str("statsName", true), StatsKey: r.str("statsKey", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the VIEW_BROKER_STATS_DATA request.
func (h *ViewBrokerStatsDataRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.ViewBrokerStatsData, h.Encode(), nil)
}

// BrokerStatsItem is one window of a statistic: the sum of its increments
// in the window, that sum per second, and the sum per increment (0 when
// the statistic counts no increments, as BROKER_PUT_NUMS).
type BrokerStatsItem struct {
	Avgpt float64 `json:"avgpt"`
	Sum   int64   `json:"sum"`
	Tps   float64 `json:"tps"`
}

// BrokerStatsData is the body of a VIEW_BROKER_STATS_DATA answer: the last
// minute, hour and day of one statistic (Java's BrokerStatsData, its
// fields in fastjson's order).
type BrokerStatsData struct {
	StatsDay    BrokerStatsItem `json:"statsDay"`
	StatsHour   BrokerStatsItem `json:"statsHour"`
	StatsMinute BrokerStatsItem `json:"statsMinute"`
}

// Encode returns the JSON body.
func (d *BrokerStatsData) Encode() []byte {
	b, _ := json.Marshal(d) // plain numbers: cannot fail
	return b
}

// DecodeBrokerStatsData reads a VIEW_BROKER_STATS_DATA body.
func DecodeBrokerStatsData(body []byte) (BrokerStatsData, error) {
	var d BrokerStatsData
	if err := json.Unmarshal(body, &d); err != nil {
		return d, fmt.Errorf("%w: broker stats data: %w", ErrBadBody, err)
	}
	return d, nil
}
