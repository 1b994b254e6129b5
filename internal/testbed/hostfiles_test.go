package testbed

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestMakeFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "host")
	for _, tc := range []struct {
		name string
		size int64
		text string
	}{
		{"conf", 0, "listen 10.0.0.1:8080;"},
		{"data.bin", 100_000, ""},
	} {
		if err := makeFile(context.Background(), dir, tc.name, tc.size, tc.text); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := os.ReadFile(filepath.Join(dir, tc.name))
		switch {
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.size == 0 && string(got) != tc.text:
			t.Errorf("%s holds %q, want %q", tc.name, got, tc.text)
		case tc.size > 0 && int64(len(got)) != tc.size:
			t.Errorf("%s holds %d bytes, want %d", tc.name, len(got), tc.size)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := makeFile(context.Background(), dir, "link", 0, "x"); err == nil {
		t.Error("wrote through a link")
	}
}

func TestListening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if ok, err := listening(os.Getpid(), port); err != nil || !ok {
		t.Errorf("a listener on port %d: %v, %v", port, ok, err)
	}
	l.Close()
	if ok, err := listening(os.Getpid(), port); err != nil || ok {
		t.Errorf("a closed listener on port %d: %v, %v", port, ok, err)
	}
}
