//go:build unix

package home

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFile: a regular file (or a link to one) is read; a FIFO, a
// directory, a file past the limit or a missing one is an error, and the
// FIFO's at once, not when someone writes it.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	os.WriteFile(regular, []byte("key"), 0o600)
	os.Symlink(regular, filepath.Join(dir, "link"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "dir"), 0o700)
	os.WriteFile(filepath.Join(dir, "large"), []byte(strings.Repeat("x", 9)), 0o600)
	tests := []struct {
		name    string
		want    string
		wantErr error
	}{
		{"regular", "key", nil},
		{"link", "key", nil},
		{"fifo", "", ErrNotRegular},
		{"dir", "", ErrNotRegular},
		{"large", "", errors.New("larger than 8 bytes")},
		{"missing", "", os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			b, err := ReadFile(filepath.Join(dir, tt.name), 8)
			if time.Since(start) > 5*time.Second {
				t.Fatalf("waited %v", time.Since(start))
			}
			switch {
			case tt.wantErr == nil && (err != nil || string(b) != tt.want):
				t.Errorf("got %q, %v; want %q", b, err, tt.want)
			case tt.wantErr != nil && (err == nil || !errors.Is(err, tt.wantErr) && !strings.Contains(err.Error(), tt.wantErr.Error())):
				t.Errorf("got %q, %v; want the error %v", b, err, tt.wantErr)
			}
		})
	}
}
