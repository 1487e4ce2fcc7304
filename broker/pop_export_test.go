package broker

// Test-only access to the POP remoting requests' state (pop_notify.go),
// for the external tests.

// HeldNotificationsForTest is how many NOTIFICATION requests wait on b.
func (b *Broker) HeldNotificationsForTest() int64 { return b.pop.notifying.n.Load() }

// SetMaxHeldNotificationsForTest makes b hold at most n NOTIFICATION
// requests at once (0: the default).
func (b *Broker) SetMaxHeldNotificationsForTest(n int64) { b.pop.notifying.max.Store(n) }
