package lsp

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
)

// callAll sends a batch at once and matches the answers by id, in
// whatever order they come, answering the server's own requests and
// skipping its notifications and answers to requests nobody waits for.
func TestCallAll(t *testing.T) {
	toServer, fromClient := io.Pipe()
	fromServer, toClient := io.Pipe()
	c := &conn{in: fromClient, msgs: make(chan *message, 64), stderr: &tail{}, done: make(chan struct{})}
	c.onRequest = func(method string, _ json.RawMessage) (any, error) { return method + " answered", nil }
	go c.read(bufio.NewReader(fromServer))
	defer toClient.Close()

	served := make(chan string, 1)
	go func() {
		r := bufio.NewReader(toServer)
		var ids []json.RawMessage
		read := func() *message {
			var n int
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return nil
				}
				if line == "\r\n" {
					break
				}
				fmt.Sscanf(line, "Content-Length: %d", &n)
			}
			body := make([]byte, n)
			io.ReadFull(r, body)
			m := new(message)
			json.Unmarshal(body, m)
			return m
		}
		send := func(m map[string]any) {
			m["jsonrpc"] = "2.0"
			b, _ := json.Marshal(m)
			fmt.Fprintf(toClient, "Content-Length: %d\r\n\r\n%s", len(b), b)
		}
		for len(ids) < 3 { // every request arrives before any answer
			ids = append(ids, *read().ID)
		}
		send(map[string]any{"id": 999, "result": "a stale answer"})
		send(map[string]any{"method": "window/logMessage", "params": map[string]any{"message": "hi"}})
		send(map[string]any{"id": "s1", "method": "workspace/configuration", "params": map[string]any{}})
		reply := read() // the client answers the server's request
		served <- string(reply.Result)
		send(map[string]any{"id": ids[2], "result": 3})
		send(map[string]any{"id": ids[1], "error": map[string]any{"code": -32601, "message": "no such method"}})
		send(map[string]any{"id": ids[0], "result": 1})
	}()

	var one, three int
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs, err := c.callAll(ctx, []request{{"a", nil, &one}, {"b", nil, nil}, {"c", nil, &three}})
	if err != nil {
		t.Fatal(err)
	}
	if one != 1 || three != 3 || errs[0] != nil || errs[2] != nil {
		t.Fatalf("results %d %d, errors %v", one, three, errs)
	}
	var rpc *RPCError
	if !errors.As(errs[1], &rpc) || rpc.Code != -32601 {
		t.Fatalf("request b: %v, want its error response", errs[1])
	}
	if got := <-served; got != `"workspace/configuration answered"` {
		t.Fatalf("the server's request was answered %s", got)
	}
}

// The fingerprint is the state the server checks: the same documents
// (whatever order they were opened in, whatever versions) give the same
// one; a changed, added or dropped document, an announced disk change or a
// changed project file gives another.
func TestFingerprint(t *testing.T) {
	state := func(docs map[string]string, diskChanges int, config core.Files) [sha256.Size]byte {
		s := &session{srv: Gopls, docs: map[string]doc{}, diskChanges: diskChanges}
		v := 1
		for rel, text := range docs {
			s.docs[rel] = doc{v, []byte(text), sha256.Sum256([]byte(text))}
			v += 3
		}
		s.noteConfig(config)
		return s.fingerprint()
	}
	files := core.Files{"go.mod": []byte("module a\n"), "a.go": []byte("package a\n"), "README.md": []byte("hi")}
	base := state(map[string]string{"a.go": "package a", "b.go": "package a"}, 0, files)
	same := []struct {
		name        string
		docs        map[string]string
		diskChanges int
		config      core.Files
	}{
		{"the same", map[string]string{"a.go": "package a", "b.go": "package a"}, 0, files},
		{"a file no server reads differs", map[string]string{"a.go": "package a", "b.go": "package a"}, 0, core.Files{"go.mod": []byte("module a\n"), "README.md": []byte("bye")}},
	}
	for _, c := range same {
		if state(c.docs, c.diskChanges, c.config) != base {
			t.Errorf("%s: another fingerprint", c.name)
		}
	}
	other := []struct {
		name        string
		docs        map[string]string
		diskChanges int
		config      core.Files
	}{
		{"a document changed", map[string]string{"a.go": "package a ", "b.go": "package a"}, 0, files},
		{"a document dropped", map[string]string{"a.go": "package a"}, 0, files},
		{"a document added", map[string]string{"a.go": "package a", "b.go": "package a", "c.go": ""}, 0, files},
		{"contents swapped between paths", map[string]string{"a.go": "package a", "b.go": "package b"}, 0, files},
		{"a disk change announced", map[string]string{"a.go": "package a", "b.go": "package a"}, 1, files},
		{"go.mod changed", map[string]string{"a.go": "package a", "b.go": "package a"}, 0, core.Files{"go.mod": []byte("module b\n")}},
		{"a tsconfig appeared", map[string]string{"a.go": "package a", "b.go": "package a"}, 0, core.Files{"go.mod": []byte("module a\n"), "web/tsconfig.base.json": []byte("{}")}},
		{"a path boundary moved", map[string]string{"a.g": "o" + "package a", "b.go": "package a"}, 0, files},
	}
	for _, c := range other {
		if state(c.docs, c.diskChanges, c.config) == base {
			t.Errorf("%s: the same fingerprint", c.name)
		}
	}
}

// The cache answers only for a state it saw, merges what is learnt of a
// state, and forgets the oldest state beyond diagStates.
func TestDiagCache(t *testing.T) {
	var c diagCache
	st := func(i int) [sha256.Size]byte { return sha256.Sum256([]byte{byte(i)}) }
	if c.get(st(0)) != nil {
		t.Fatal("an empty cache knows a state")
	}
	c.put(st(0), map[string][]string{"a.go": {}})
	c.put(st(0), map[string][]string{"b.go": {"b.go: x declared and not used"}})
	if got := c.get(st(0)); !reflect.DeepEqual(got, map[string][]string{"a.go": {}, "b.go": {"b.go: x declared and not used"}}) {
		t.Fatalf("state 0: %v", got)
	}
	for i := 1; i <= diagStates; i++ {
		c.put(st(i), map[string][]string{"a.go": {strings.Repeat("e", i)}})
	}
	if c.get(st(0)) != nil {
		t.Error("the oldest state is still known")
	}
	for i := 1; i <= diagStates; i++ {
		if got := c.get(st(i)); !reflect.DeepEqual(got["a.go"], []string{strings.Repeat("e", i)}) {
			t.Errorf("state %d: %v", i, got)
		}
	}
	// a state asked about again becomes the most recent
	c.put(st(1), map[string][]string{"c.go": {}})
	c.put(st(diagStates+1), map[string][]string{})
	if c.get(st(1)) == nil || c.get(st(2)) != nil {
		t.Error("the state refreshed was forgotten, or the oldest kept")
	}
	// and so does one only read: the prior of a series of requests, whose
	// successors each add a state
	c.get(st(3))
	c.put(st(diagStates+2), map[string][]string{})
	if c.get(st(3)) == nil || c.get(st(4)) != nil {
		t.Error("the state read was forgotten, or the oldest kept")
	}
}
