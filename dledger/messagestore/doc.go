// Package messagestore gives a dledger group the product's message store:
// Opener opens a *store.Store as the group's dledger.Storage, and Of reads
// it back for the parts that read messages (the broker, tests).
//
// It is the one place that knows both sides: dledger sees the store only
// through the interfaces it defines (dledger/storage.go), and store knows
// nothing of raft.
package messagestore
