package devcluster

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestReadFile(t *testing.T) {
	good := `{"namesrv":"127.0.0.1:9876","nodes":[{"id":"n0","pid":12,"addr":"127.0.0.1:10911","raft":"127.0.0.1:10912","dir":"/d/n0"},` +
		`{"id":"n1","pid":0,"addr":"127.0.0.1:10921","raft":"127.0.0.1:10922","dir":"/d/n1"}]}`
	tests := []struct {
		name, content string
		want          error
	}{
		{"good", good, nil},
		{"not json", "{", ErrBadFile},
		{"no nodes", `{"namesrv":"127.0.0.1:9876","nodes":[]}`, ErrBadFile},
		{"no namesrv", `{"nodes":[{"id":"n0"}]}`, ErrBadFile},
		{"wrong type", `{"namesrv":"x","nodes":[{"pid":"12"}]}`, ErrBadFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, FileName), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := ReadFile(dir)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if tt.want != nil {
				return
			}
			n, ok := f.NodeByAddr("127.0.0.1:10921")
			if !ok || n.ID != "n1" || n.PID != 0 || n.Dir != "/d/n1" {
				t.Fatalf("NodeByAddr: %+v %v", n, ok)
			}
			if _, ok := f.NodeByAddr("127.0.0.1:1"); ok {
				t.Fatal("NodeByAddr found an unknown address")
			}
		})
	}
	if _, err := ReadFile(t.TempDir()); !errors.Is(err, ErrNoFile) {
		t.Fatalf("missing file: %v", err)
	}
}

func FuzzReadFile(f *testing.F) {
	f.Add([]byte(`{"namesrv":"127.0.0.1:9876","nodes":[{"id":"n0","pid":1,"addr":"a","raft":"r","dir":"d"}]}`))
	f.Add([]byte(`{"nodes":null}`))
	f.Add([]byte{0xff, 0x00})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, FileName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		file, err := ReadFile(dir)
		if err == nil && (file.Namesrv == "" || len(file.Nodes) == 0) {
			t.Fatalf("accepted an incomplete file: %+v", file)
		}
		if err != nil && !errors.Is(err, ErrBadFile) {
			t.Fatalf("error %v is not ErrBadFile", err)
		}
	})
}
