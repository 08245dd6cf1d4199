package lsp

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// Server describes one language server L1 can drive.
type Server struct {
	Name     string   // the executable looked up, e.g. "pyright-langserver"
	Args     []string // arguments that make it speak LSP on stdio
	Language string   // what it serves, for messages and joule doctor
	Exts     []string // file extensions it serves, with the dot
	Checker  string   // the executable that type-checks a project for it
}

// Servers are the language servers L1 knows, in the order doctor lists them.
var Servers = []Server{
	{Name: "typescript-language-server", Args: []string{"--stdio"}, Language: "TypeScript/JavaScript",
		Exts: []string{".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"}, Checker: "tsc"},
	{Name: "pyright-langserver", Args: []string{"--stdio"}, Language: "Python",
		Exts: []string{".py", ".pyi"}, Checker: "pyright"},
}

// Package is the npm package that installs each server and checker.
var Package = map[string]string{
	"typescript-language-server": "typescript-language-server typescript",
	"tsc":                        "typescript",
	"pyright-langserver":         "pyright",
	"pyright":                    "pyright",
}

// PathEnv names the environment variable holding directories searched for
// servers and checkers before PATH (a node_modules/.bin, say), separated as
// PATH is.
const PathEnv = "JOULE_LSP_PATH"

// For returns the server that serves the file rel, by extension.
func For(rel string) (Server, bool) {
	ext := strings.ToLower(path.Ext(rel))
	for _, s := range Servers {
		for _, e := range s.Exts {
			if e == ext {
				return s, true
			}
		}
	}
	return Server{}, false
}

// Look finds an executable in $JOULE_LSP_PATH, then on PATH.
func Look(name string) (string, error) {
	for _, d := range filepath.SplitList(os.Getenv(PathEnv)) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil && name == Gopls.Name {
		// go install puts it in GOBIN or GOPATH/bin, often not on PATH
		for _, d := range []string{os.Getenv("GOBIN"), filepath.Join(os.Getenv("GOPATH"), "bin"), goHomeBin()} {
			if d == "" || d == "bin" {
				continue
			}
			if fi, e := os.Stat(filepath.Join(d, name)); e == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return filepath.Join(d, name), nil
			}
		}
	}
	return p, err
}

func goHomeBin() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(h, "go", "bin")
}

// Found is one server as joule doctor reports it.
type Found struct {
	Server
	Path        string // "" when not found
	CheckerPath string // "" when not found
}

// Discover reports where each known server and its checker are.
func Discover() []Found {
	var out []Found
	for _, s := range Servers {
		f := Found{Server: s}
		f.Path, _ = Look(s.Name)
		f.CheckerPath, _ = Look(s.Checker)
		out = append(out, f)
	}
	return out
}

func languageID(rel string) string {
	switch strings.ToLower(path.Ext(rel)) {
	case ".ts", ".mts", ".cts":
		return "typescript"
	case ".tsx":
		return "typescriptreact"
	case ".jsx":
		return "javascriptreact"
	case ".js", ".mjs", ".cjs":
		return "javascript"
	case ".py", ".pyi":
		return "python"
	}
	return "plaintext"
}

// ignored reports whether a workspace path is outside what a server is
// given and a check copies: installed dependencies, caches, hidden trees.
func ignored(rel string) bool {
	for _, d := range strings.Split(path.Dir(rel), "/") {
		if d == "node_modules" || d == "__pycache__" || d == "venv" || (strings.HasPrefix(d, ".") && d != ".") {
			return true
		}
	}
	return false
}
