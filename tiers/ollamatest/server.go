package ollamatest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/joulehook/joule/internal/testdeps"
)

// Module is the module the server is built from.
const Module = "github.com/ollama/ollama"

// ToolModule is the directory, in joule's source tree, of the module that
// pins the version of Module the server is built from (so that none of its
// dependencies enter joule's go.mod).
const ToolModule = "tools/ollama"

// BinaryEnv names an ollama binary to use instead of the one make deps
// builds.
const BinaryEnv = "JOULE_OLLAMA"

// SourceRoot is the root of joule's source tree: the nearest directory at
// or above the working directory (a test's package directory) whose go.mod
// is joule's.
func SourceRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modfile.ModulePath(b) == "github.com/joulehook/joule" {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("not inside joule's source tree")
		}
		dir = up
	}
}

// RequiredVersion is the version of Module that the go.mod in dir (under
// the source root) requires.
func RequiredVersion(dir string) (string, error) {
	root, err := SourceRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, dir, "go.mod")
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(path, b, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == Module {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", path, Module)
}

// Version is the version of Module the server is built from, as
// tools/ollama pins it.
func Version() (string, error) { return RequiredVersion(ToolModule) }

// CacheDir is where make deps puts test tools (internal/testdeps, the one
// rule: $JOULE_TEST_CACHE, else $XDG_CACHE_HOME/joule-test, else
// ~/.cache/joule-test).
func CacheDir() (string, error) {
	if d := testdeps.Cache(); d != "" {
		return d, nil
	}
	return "", errors.New("no cache directory for make deps' tools: set $" + testdeps.CacheEnv + " or $HOME")
}

// Binary is the path of the ollama binary: $JOULE_OLLAMA, or the one
// .ci/setup.d/35-ollama.sh built for this version.
func Binary() (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$%s: %w", BinaryEnv, err)
		}
		return p, nil
	}
	v, err := Version()
	if err != nil {
		return "", err
	}
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "ollama-"+v, "ollama")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no ollama %s at %s: %w", v, p, err)
	}
	return p, nil
}

// Need returns the ollama binary, or skips the test when it was not built
// (and fails it under CI, where make deps builds it).
func Need(t testing.TB) string {
	t.Helper()
	p, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the ollama binary is missing (%v): run .ci/setup.d/35-ollama.sh (make deps)", err)
		}
		t.Skipf("a real Ollama is not built here (%v): run .ci/setup.d/35-ollama.sh (make deps builds it: about 12 CPU-minutes cold)", err)
	}
	return p
}

// Server is an ollama serve process of the test's own, on 127.0.0.1, with
// its models and home in a temporary directory.
type Server struct {
	URL string // http://127.0.0.1:PORT
	Dir string // HOME and OLLAMA_MODELS live under it

	bin  string
	env  []string
	cmd  *exec.Cmd
	log  *logBuffer
	done chan struct{}
}

// Options are the server's settings beyond the defaults.
type Options struct {
	// Env is added to the server's environment (e.g. OLLAMA_KEEP_ALIVE).
	Env []string
}

var listening = regexp.MustCompile(`Listening on (127\.0\.0\.1:\d+)`)

// Start runs ollama serve for the test on a free port of 127.0.0.1, and
// stops it (and its runners) when the test ends. It skips the test when
// the binary was not built (Need).
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := Need(t)
	dir, err := os.MkdirTemp("", "joule-ollama-")
	if err != nil {
		t.Fatal(err)
	}
	s, err := start(bin, dir, opts)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			t.Logf("ollama serve log:\n%s", s.Log())
		}
		os.RemoveAll(dir)
	})
	return s
}

func start(bin, dir string, opts Options) (*Server, error) {
	home := filepath.Join(dir, "home")
	models := filepath.Join(dir, "models")
	for _, d := range []string{home, models} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	// A clean environment: nothing of the user's Ollama set-up (models,
	// host, GPU selection) reaches it.
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"TMPDIR=" + dir,
		"OLLAMA_MODELS=" + models,
		"OLLAMA_HOST=127.0.0.1:0",
		"OLLAMA_NUM_PARALLEL=1",
		"OLLAMA_NOPRUNE=1",
		"OLLAMA_NOHISTORY=1",
		"CUDA_VISIBLE_DEVICES=",
		"HIP_VISIBLE_DEVICES=",
		"ROCR_VISIBLE_DEVICES=",
		"GGML_VK_VISIBLE_DEVICES=",
	}
	env = append(env, opts.Env...)
	s := &Server{Dir: dir, bin: bin, env: env, log: &logBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = env
	s.cmd.Dir = dir
	// Its own process group: Kill takes the runners it starts too.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("ollama serve: %w", err)
	}
	go func() { s.cmd.Wait(); pw.Close(); close(s.done) }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.log.add(line)
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case a := <-addr:
		s.URL = "http://" + a
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("ollama serve exited before it listened:\n%s", s.Log())
	case <-time.After(60 * time.Second):
		s.Kill()
		return nil, fmt.Errorf("ollama serve did not listen within 60s:\n%s", s.Log())
	}
}

// Host is the server's host:port, for OLLAMA_HOST.
func (s *Server) Host() string { return strings.TrimPrefix(s.URL, "http://") }

// Log is what the server (and its runners) printed so far.
func (s *Server) Log() string { return s.log.String() }

// Kill kills the server and its runners at once (SIGKILL to the process
// group), as a crash would, and waits for it.
func (s *Server) Kill() {
	if s.cmd.Process != nil {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-s.done
}

// Create writes the model spec describes and makes it available as name,
// with ollama create and a Modelfile: the chat Template, one thread,
// temperature 0, a seed, and params (Modelfile PARAMETER lines, "num_ctx
// 2048" say) after them.
func (s *Server) Create(ctx context.Context, name string, spec Spec, params ...string) error {
	dir, err := os.MkdirTemp(s.Dir, "create-")
	if err != nil {
		return err
	}
	gguf := filepath.Join(dir, "model.gguf")
	if err := WriteModel(gguf, spec); err != nil {
		return err
	}
	var mf strings.Builder
	fmt.Fprintf(&mf, "FROM %s\n", gguf)
	if !spec.Embedding {
		fmt.Fprintf(&mf, "TEMPLATE \"\"\"%s\"\"\"\n", Template)
		mf.WriteString("PARAMETER temperature 0\nPARAMETER seed 42\nPARAMETER num_predict 64\n")
	}
	mf.WriteString("PARAMETER num_thread 1\n")
	for _, p := range params {
		fmt.Fprintf(&mf, "PARAMETER %s\n", p)
	}
	modelfile := filepath.Join(dir, "Modelfile")
	if err := os.WriteFile(modelfile, []byte(mf.String()), 0o600); err != nil {
		return err
	}
	out, err := s.Command(ctx, "create", name, "-f", modelfile).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ollama create %s: %v\n%s", name, err, out)
	}
	return nil
}

// Command is an ollama CLI command against this server.
func (s *Server) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = append(append([]string(nil), s.env...), "OLLAMA_HOST="+s.Host())
	cmd.Dir = s.Dir
	return cmd
}

// logBuffer keeps the server's output, bounded.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 4<<20 {
		l.b.Reset()
		l.b.WriteString("[earlier output dropped]\n")
	}
	l.b.WriteString(line)
	l.b.WriteByte('\n')
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
