package broker

// Test-only access to the timer service for the external tests.

const (
	TimerTopic      = timerTopic
	TimerGroup      = timerGroup
	TimerDelivered  = timerDelivered
	TimerEnqueued   = timerEnqueued
	TimerOutMS      = propertyTimerOutMS
	TimerMaxDefault = DefaultTimerMaxDelay
)

// TimerIndexLenForTest is how many parked timer messages this node has
// indexed.
func (b *Broker) TimerIndexLenForTest() int64 { return b.timers.wheel.Len() }

// TimerDirForTest is where this node keeps its timer index.
func (b *Broker) TimerDirForTest() string { return b.timers.cfg.Dir }

// RecallGroupPrefix names the internal groups of recalled timers.
const RecallGroupPrefix = recallGroupPrefix
