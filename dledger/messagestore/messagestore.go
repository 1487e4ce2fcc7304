package messagestore

import (
	"github.com/ledgermq/ledgermq/dledger"
	"github.com/ledgermq/ledgermq/store"
)

// Opener opens the message store (package store) for a group: set it as
// dledger.Config.Stores.
type Opener struct{}

var _ dledger.StoreOpener = Opener{}

// OpenStore opens and recovers the store cfg describes.
func (Opener) OpenStore(cfg store.Config) (dledger.Storage, error) {
	s, err := store.Open(cfg)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// HasOneLog reports whether the store in dir is marked one-log.
func (Opener) HasOneLog(dir string) (bool, error) { return store.HasOneLog(dir) }

// HasCommitLog reports whether the store in dir holds CommitLog segments.
func (Opener) HasCommitLog(dir string) (bool, error) { return store.HasCommitLog(dir) }

// ConvertToOneLog marks the two-log store in dir one-log.
func (Opener) ConvertToOneLog(dir string) error { return store.ConvertToOneLog(dir) }

// Of is the store g replicates into, when g was opened with Opener; nil
// otherwise.
func Of(g *dledger.Group) *store.Store {
	s, _ := g.Storage().(*store.Store)
	return s
}
