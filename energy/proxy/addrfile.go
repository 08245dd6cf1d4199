package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// DefaultListen is where joule proxy listens unless told otherwise (the
// resident gate, joule serve, has a port of its own: 7412).
const DefaultListen = "127.0.0.1:7411"

// AddrFile is the file in $JOULE_HOME where a running proxy announces its
// address, so local tiers can route their model calls through it.
const AddrFile = "proxy.json"

// Announcement is AddrFile's content.
type Announcement struct {
	Addr      string            `json:"addr"` // host:port it listens on
	PID       int               `json:"pid"`
	Upstreams map[string]string `json:"upstreams"` // "anthropic", "openai", "ollama", "gemini" → base URL
}

// Announce writes a into home's AddrFile and returns the function that
// removes it again (only while the file is still this process's).
func Announce(home string, a Announcement) (remove func(), err error) {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(home, AddrFile)
	tmp, err := os.CreateTemp(home, ".proxy-*.json")
	if err != nil {
		return nil, err
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	return func() {
		if cur, err := readAnnouncement(path); err == nil && cur.PID == a.PID {
			os.Remove(path)
		}
	}, nil
}

// Discover returns the running proxy's announcement in home, or nil when
// none is announced or the process that announced it is gone.
func Discover(home string) (*Announcement, error) {
	a, err := readAnnouncement(filepath.Join(home, AddrFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !alive(a.PID) {
		return nil, nil
	}
	return a, nil
}

func readAnnouncement(path string) (*Announcement, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var a Announcement
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if a.Addr == "" || a.PID <= 0 {
		return nil, fmt.Errorf("%s: no addr or pid", path)
	}
	return &a, nil
}

func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
