package routing

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"

	"github.com/ledgermq/ledgermq/internal/vfs"
)

// kvConfig is the name server's KV configuration (Java's KVConfigManager):
// namespace → key → value, set by admins (PUT_KV_CONFIG,
// DELETE_KV_CONFIG) and read by clients and tools. The namespace
// ORDER_TOPIC_CONFIG holds ordered topics' broker lists, which route
// answers carry (orderTopicConf).
//
// With a path (Config.KVConfigPath) every change is written to the file
// atomically before it is answered, in Java's format
// ({"configTable":{namespace:{key:value}}}), and the file is read at
// start; a change that cannot be written is undone and refused. Without
// one the table lives in memory and a restart forgets it. Safe for
// concurrent use.
type kvConfig struct {
	path string

	mu    sync.RWMutex
	table map[string]map[string]string
}

// kvFile is the file's content (Java KVConfigSerializeWrapper).
type kvFile struct {
	ConfigTable map[string]map[string]string `json:"configTable"`
}

// loadKVConfig reads path ("": memory only). A missing file is an empty
// table; one that does not parse is an error (the name server does not
// start rather than lose the table at its first write).
func loadKVConfig(path string) (*kvConfig, error) {
	kv := &kvConfig{path: path, table: map[string]map[string]string{}}
	if path == "" {
		return kv, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return kv, nil
	}
	if err != nil {
		return nil, fmt.Errorf("routing: KV config: %w", err)
	}
	var f kvFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("routing: KV config %s: %w", path, err)
	}
	for ns, t := range f.ConfigTable {
		if len(t) > 0 {
			kv.table[ns] = maps.Clone(t)
		}
	}
	return kv, nil
}

// get returns the value of key in namespace.
func (kv *kvConfig) get(namespace, key string) (string, bool) {
	kv.mu.RLock()
	defer kv.mu.RUnlock()
	v, ok := kv.table[namespace][key]
	return v, ok
}

// list returns a copy of namespace's table, or false when it is empty.
func (kv *kvConfig) list(namespace string) (map[string]string, bool) {
	kv.mu.RLock()
	defer kv.mu.RUnlock()
	t := kv.table[namespace]
	if len(t) == 0 {
		return nil, false
	}
	return maps.Clone(t), true
}

// put sets key in namespace and persists the table.
func (kv *kvConfig) put(namespace, key, value string) error {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	t := kv.table[namespace]
	if t == nil {
		t = map[string]string{}
		kv.table[namespace] = t
	}
	old, had := t[key]
	t[key] = value
	if err := kv.persistLocked(); err != nil {
		if had {
			t[key] = old
		} else {
			delete(t, key)
			if len(t) == 0 {
				delete(kv.table, namespace)
			}
		}
		return err
	}
	return nil
}

// delete removes key from namespace (nothing to remove is no error) and
// persists the table.
func (kv *kvConfig) delete(namespace, key string) error {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	t := kv.table[namespace]
	old, had := t[key]
	if !had {
		return nil
	}
	delete(t, key)
	if len(t) == 0 {
		delete(kv.table, namespace)
	}
	if err := kv.persistLocked(); err != nil {
		if kv.table[namespace] == nil {
			kv.table[namespace] = t
		}
		t[key] = old
		return err
	}
	return nil
}

// persistLocked writes the table to the file (none: nothing to do).
func (kv *kvConfig) persistLocked() error {
	if kv.path == "" {
		return nil
	}
	data, err := json.MarshalIndent(kvFile{ConfigTable: kv.table}, "", "\t")
	if err != nil {
		return fmt.Errorf("routing: KV config: %w", err)
	}
	if err := vfs.WriteFileAtomic(vfs.Default, kv.path, data); err != nil {
		return fmt.Errorf("routing: KV config %s: %w", kv.path, err)
	}
	return nil
}
