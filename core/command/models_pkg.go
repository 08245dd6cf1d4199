package command

import (
	"strings"
)

// The package managers' and test runners' models: npm, npx, pnpm, yarn
// (npm-config(7), npm help COMMAND, pnpm and yarn CLI references), cargo
// (cargo help COMMAND) and pytest (pytest --help, with the options of
// pytest-cov, pytest-xdist, pytest-timeout and pytest-asyncio).

// npmConfig are npm's configuration keys a command line may set
// (npm-config(7)), by what their value is. Keys that name a program npm
// runs, a file it loads settings from or a place outside the workspace
// it installs into are in npmRefused.
var npmConfig = map[string]effect{
	"access": noFile, "all": noFile, "audit": noFile, "audit-level": noFile, "before": noFile, "bin-links": noFile,
	"cafile": readsFile, "cidr": noFile, "color": noFile, "commit-hooks": noFile, "cpu": noFile, "depth": noFile,
	"description": noFile, "diff": noFile, "diff-dst-prefix": noFile, "diff-ignore-all-space": noFile,
	"diff-name-only": noFile, "diff-no-prefix": noFile, "diff-src-prefix": noFile, "diff-text": noFile,
	"diff-unified": noFile, "dry-run": noFile, "engine-strict": noFile, "expect-result-count": noFile,
	"expect-results": noFile, "fetch-retries": noFile, "fetch-retry-factor": noFile, "fetch-retry-maxtimeout": noFile,
	"fetch-retry-mintimeout": noFile, "fetch-timeout": noFile, "force": noFile, "foreground-scripts": noFile,
	"format-package-lock": noFile, "fund": noFile, "git-tag-version": noFile, "heading": noFile, "https-proxy": noFile,
	"if-present": noFile, "ignore-scripts": noFile, "include": noFile, "include-staged": noFile,
	"include-workspace-root": noFile, "init-author-name": noFile, "init-author-email": noFile,
	"init-author-url": noFile, "init-license": noFile, "init-private": noFile, "init-type": noFile,
	"init-version": noFile, "install-links": noFile, "install-strategy": noFile, "json": noFile,
	"legacy-peer-deps": noFile, "libc": noFile, "link": noFile, "local-address": noFile, "lockfile-version": noFile,
	"loglevel": noFile, "logs-dir": writesDir, "logs-max": noFile, "long": noFile, "maxsockets": noFile,
	"message": noFile, "noproxy": noFile, "offline": noFile, "omit": noFile, "omit-lockfile-registry-resolved": noFile,
	"os": noFile, "otp": noFile, "pack-destination": writesDir, "package-lock": noFile, "package-lock-only": noFile,
	"parseable": noFile, "prefer-dedupe": noFile, "prefer-offline": noFile, "prefer-online": noFile, "preid": noFile,
	"progress": noFile, "provenance": noFile, "provenance-file": readsFile, "proxy": noFile, "read-only": noFile,
	"rebuild-bundle": noFile, "registry": noFile, "replace-registry-host": noFile, "save": noFile,
	"save-bundle": noFile, "save-dev": noFile, "save-exact": noFile, "save-optional": noFile, "save-peer": noFile,
	"save-prefix": noFile, "save-prod": noFile, "sbom-format": noFile, "sbom-type": noFile, "scope": noFile,
	"searchexclude": noFile, "searchlimit": noFile, "searchopts": noFile, "searchstaleness": noFile,
	"sign-git-commit": noFile, "sign-git-tag": noFile, "strict-peer-deps": noFile, "strict-ssl": noFile, "tag": noFile,
	"tag-version-prefix": noFile, "timing": noFile, "umask": noFile, "unicode": noFile, "update-notifier": noFile,
	"usage": noFile, "version": noFile, "versions": noFile, "which": noFile, "workspace": noFile,
	"workspaces": noFile, "workspaces-update": noFile, "yes": noFile, "silent": noFile, "quiet": noFile,
	"verbose": noFile, "production": noFile, "dev": noFile, "optional": noFile, "help": noFile, "no": noFile,
	"global-style": noFile, "legacy-bundling": noFile, "only": noFile, "shrinkwrap": noFile, "audit-file": readsFile,
}

// npmRefused are npm's configuration keys that run a program, load
// settings or install outside the workspace.
var npmRefused = map[string]string{
	"script-shell": "names the shell that runs package scripts", "node-options": "passes options (--require) to every node it starts",
	"shell": "names the shell npm exec and explore run", "editor": "names the editor npm runs",
	"git": "names the git program npm runs", "browser": "names the browser npm opens", "viewer": "names the program that shows help",
	"userconfig": "loads settings from another file", "globalconfig": "loads settings from another file",
	"prefix": "installs into another directory, whose bin is on PATH", "global": "installs outside the workspace, into a directory on PATH",
	"location": "can install outside the workspace", "init-module": "runs a module to create package.json",
	"onload-script": "runs a module when npm starts", "call": "runs a command string", "package": "installs and runs a package of its choosing",
	"node-gyp": "names the program that builds native modules", "cache": "moves npm's cache, which it trusts",
	"ca": "replaces the registry's certificate authorities", "cert": "sets a client certificate", "key": "sets a client key",
}

// npmShort are npm's short options and the keys they set.
var npmShort = map[byte]string{'g': "global", 'S': "save", 'D': "save-dev", 'E': "save-exact", 'O': "save-optional",
	'P': "save-prod", 'B': "save-bundle", 'f': "force", 'l': "long", 'p': "parseable", 'a': "all", 'd': "loglevel",
	's': "silent", 'q': "quiet", 'y': "yes", 'w': "workspace", 'c': "call", 'h': "help", 'v': "version",
	'C': "prefix", '?': "help", 'H': "usage"}

// npmSubcommands are the npm commands the model knows (npm help
// commands), with their aliases, mapped to their kind: "" plain, "script"
// (runs package scripts), "refuse:why", "write:why" (writes outside the
// workspace), "config".
var npmSubcommands = map[string]string{
	"access": "", "audit": "script", "cache": "", "ci": "script", "clean-install": "script", "ic": "script",
	"install-clean": "script", "isntall-clean": "script", "completion": "", "config": "config", "c": "config",
	"dedupe": "script", "ddp": "script", "deprecate": "", "diff": "", "dist-tag": "", "doctor": "", "exec": "script",
	"x": "script", "explain": "", "why": "", "find-dupes": "", "fund": "", "help": "", "help-search": "",
	"init": "script", "create": "script", "innit": "script", "install": "script", "i": "script", "add": "script",
	"in": "script", "ins": "script", "inst": "script", "insta": "script", "instal": "script", "isnt": "script",
	"isnta": "script", "isntal": "script", "isntall": "script", "install-ci-test": "script", "cit": "script",
	"install-test": "script", "it": "script", "ls": "", "list": "", "la": "", "ll": "", "org": "", "outdated": "",
	"owner": "", "author": "", "pack": "script", "ping": "", "pkg": "pkg", "prefix": "", "profile": "", "prune": "script",
	"publish": "script", "query": "", "rebuild": "script", "rb": "script", "restart": "script", "root": "", "run": "script",
	"run-script": "script", "rum": "script", "urn": "script", "sbom": "", "search": "", "find": "", "s": "", "se": "",
	"shrinkwrap": "", "star": "", "stars": "", "start": "script", "stop": "script", "team": "", "test": "script",
	"t": "script", "tst": "script", "token": "", "uninstall": "script", "un": "script", "unlink": "script",
	"remove": "script", "rm": "script", "r": "script", "unpublish": "", "unstar": "", "update": "script",
	"up": "script", "upgrade": "script", "udpate": "script", "version": "script", "verison": "script", "view": "",
	"info": "", "show": "", "v": "", "whoami": "", "get": "", "logout": "write:removes the registry token from ~/.npmrc",
	"login": "write:writes a registry token into ~/.npmrc", "adduser": "write:writes a registry token into ~/.npmrc",
	"link": "write:links packages into npm's global directory, whose bin is on PATH",
	"ln":   "write:links packages into npm's global directory, whose bin is on PATH",
	"set":  "refuse:changes npm's settings (script-shell, node-options …) for every later npm command",
	"edit": "refuse:opens an editor", "explore": "refuse:opens a shell in a package's directory",
	"bugs": "refuse:opens a web browser", "issues": "refuse:opens a web browser", "docs": "refuse:opens a web browser",
	"home": "refuse:opens a web browser", "repo": "refuse:opens a web browser",
}

// npmModel is npm's, and pnpm's and yarn's by the same shape: options
// are configuration keys (--key, --key=value, --no-key), allowed by
// npmConfig; the words after -- belong to the script.
func npmModel(tool string) *model {
	return &model{handler: func(a *analyzer, name string, words []word, fr frame) []word {
		a.npm(tool, words, fr)
		return nil
	}}
}

// pnpmSubcommands and yarnSubcommands name the commands of pnpm and
// yarn the model knows, with the same kinds as npm's. yarn runs a
// package script by its name too (yarn build).
var (
	pnpmSubcommands = map[string]string{
		"add": "script", "install": "script", "i": "script", "update": "script", "up": "script", "upgrade": "script",
		"remove": "script", "rm": "script", "uninstall": "script", "un": "script", "import": "script", "rebuild": "script",
		"rb": "script", "prune": "script", "fetch": "script", "install-test": "script", "it": "script", "dedupe": "script",
		"audit": "", "list": "", "ls": "", "ll": "", "la": "", "outdated": "", "why": "", "licenses": "", "run": "script",
		"run-script": "script", "test": "script", "t": "script", "tst": "script", "exec": "script", "dlx": "script",
		"create": "script", "start": "script", "publish": "script", "pack": "script", "recursive": "script", "root": "",
		"bin": "", "init": "", "doctor": "", "config": "config", "c": "config", "store": "", "patch": "script",
		"patch-commit": "script", "patch-remove": "script", "deploy": "script", "help": "",
		"link": "write:links packages into pnpm's global directory", "ln": "write:links packages into pnpm's global directory",
		"unlink": "script", "setup": "refuse:writes the shell's start-up files", "env": "refuse:installs node outside the workspace",
		"self-update": "refuse:replaces pnpm itself", "server": "refuse:starts a store server that outlives the line",
	}
	yarnSubcommands = map[string]string{
		"add": "script", "install": "script", "remove": "script", "run": "script", "test": "script", "start": "script",
		"up": "script", "upgrade": "script", "upgrade-interactive": "script", "dlx": "script", "create": "script",
		"info": "", "why": "", "list": "", "outdated": "", "audit": "", "npm": "", "pack": "script", "publish": "script",
		"init": "script", "link": "script", "unlink": "script", "version": "script", "workspace": "script",
		"workspaces": "script", "constraints": "", "dedupe": "script", "rebuild": "script", "cache": "", "licenses": "",
		"check": "", "explain": "", "help": "", "bin": "", "config": "config", "exec": "refuse:runs a shell command string",
		"node": "refuse:runs node with options the gate does not model", "global": "refuse:installs outside the workspace",
		"set": "refuse:changes yarn's settings or replaces yarn itself", "plugin": "refuse:downloads and loads yarn plugins",
		"policies": "refuse:replaces yarn itself",
	}
)

// npmLikeOptions are the options of pnpm and yarn beyond npm's keys.
var npmLikeOptions = map[string]effect{
	"filter": noFile, "recursive": noFile, "r": noFile, "workspace-root": noFile, "reporter": noFile,
	"frozen-lockfile": noFile, "fix-lockfile": noFile, "lockfile-only": noFile, "use-stderr": noFile,
	"stream": noFile, "parallel": noFile, "workspace-concurrency": noFile, "aggregate-output": noFile,
	"resume-from": noFile, "report-summary": noFile, "reporter-hide-prefix": noFile, "test-pattern": noFile,
	"changed-files-ignore-pattern": noFile, "fail-if-no-match": noFile, "bail": noFile, "sort": noFile,
	"shamefully-hoist": noFile, "prod": noFile, "immutable": noFile, "immutable-cache": noFile, "check-cache": noFile,
	"check-files": noFile, "non-interactive": noFile, "ignore-engines": noFile, "network-timeout": noFile,
	"mutex": noFile, "modules-folder": writesDir, "cache-folder": writesDir, "no-default-rc": noFile, "emoji": noFile,
	"peer": noFile, "exact": noFile, "tilde": noFile, "ignore-workspace-root-check": noFile, "top-level": noFile,
	"inline-builds": noFile, "mode": noFile, "interlaced": noFile, "topological": noFile, "topological-dev": noFile,
	"exclude": noFile, "since": noFile, "dir": noFile, "cwd": noFile, "virtual-store-dir": writesDir,
	"modules-dir": writesDir, "store-dir": writesDir, "lockfile-dir": noFile, "shell-emulator": noFile,
	"deep": noFile, "find-by": noFile, "interactive": noFile, "latest": noFile, "ignore-workspace": noFile,
}

func (a *analyzer) npm(tool string, words []word, fr frame) {
	subs := npmSubcommands
	switch tool {
	case "pnpm":
		subs = pnpmSubcommands
	case "yarn":
		subs = yarnSubcommands
	}
	sub := ""
	var ops []word
	args := words[1:]
	for i := 0; i < len(args) && a.err == nil; i++ {
		w := args[i]
		if !w.Literal {
			if w.mayBeOption() {
				a.refuseOption(tool, "is given %s, which is computed when the line runs and may be an option such as --script-shell", quote(w.Text))
				return
			}
			ops = append(ops, w)
			continue
		}
		t := w.Text
		if t == "--" {
			break // the script's own arguments
		}
		if !strings.HasPrefix(t, "-") || t == "-" {
			if sub == "" {
				sub = t
				kind, ok := subs[sub]
				switch {
				case !ok && tool == "yarn":
					// yarn NAME runs the package script NAME, with the rest
					// as its arguments.
					return
				case !ok:
					a.fail(CodeUnknownOption, "%s %s is not a command the gate models", tool, quote(t))
					return
				case strings.HasPrefix(kind, "refuse:"):
					a.refuseOption(tool, "%s %s", sub, strings.TrimPrefix(kind, "refuse:"))
					return
				case strings.HasPrefix(kind, "write:"):
					a.unknownWrite(tool+" "+sub+" "+strings.TrimPrefix(kind, "write:"), fr)
				}
				if tool == "yarn" && (sub == "run" || sub == "test" || sub == "start" || sub == "dlx" || sub == "create") {
					return // the rest is the script's or the package's
				}
				if (sub == "exec" || sub == "x" || sub == "dlx") && tool != "yarn" {
					// npm exec CMD ARGS: the command's own arguments follow
					if i+1 < len(args) {
						return
					}
				}
				continue
			}
			ops = append(ops, w)
			continue
		}
		var key, value string
		hasValue := false
		if strings.HasPrefix(t, "--") {
			key, value, hasValue = strings.Cut(t[2:], "=")
		} else {
			// -g, -D, -ws, -dd: npm's short options
			if t == "-ws" || t == "-dd" || t == "-ddd" || t == "-desc" || t == "-reg" || t == "-iwr" {
				continue
			}
			for j := 1; j < len(t); j++ {
				k, ok := npmShort[t[j]]
				if !ok && tool != "npm" {
					switch t[j] {
					case 'r', 'w', 'W', 'T', 'A', 'R', 'i', 't', 'C':
						continue
					}
				}
				if !ok {
					a.fail(CodeUnknownOption, "%s is given the option -%c, which the gate does not model", tool, t[j])
					return
				}
				if tool != "npm" && (k == "call" || k == "prefix") {
					continue // pnpm -C DIR, yarn -C: a directory, and a value follows
				}
				if why, bad := npmRefused[k]; bad {
					a.refuseOption(tool, "-%c (%s) %s", t[j], k, why)
					return
				}
			}
			continue
		}
		key = strings.TrimPrefix(key, "no-")
		if strings.HasPrefix(key, "config.") {
			a.refuseOption(tool, "%s sets a configuration key on the command line", quote(t))
			return
		}
		if why, bad := npmRefused[key]; bad {
			a.refuseOption(tool, "--%s %s", key, why)
			return
		}
		e, ok := npmConfig[key]
		if !ok && tool != "npm" {
			e, ok = npmLikeOptions[key]
		}
		if !ok {
			a.fail(CodeUnknownOption, "%s is given the option %s, which the gate does not model", tool, quote(t))
			return
		}
		if e != noFile {
			if !hasValue && i+1 < len(args) {
				i++
				value, hasValue = args[i].Text, true
				if !args[i].Literal {
					a.effect(tool, t, e, args[i], fr)
					continue
				}
			}
			if hasValue {
				a.effect(tool, t, e, literalWord(value), fr)
			}
		}
	}
	a.readPlace(literalWord("."), fr) // the package in the directory it runs in
	switch subs[sub] {
	case "config":
		if len(ops) > 0 && ops[0].Literal {
			switch ops[0].Text {
			case "get", "list", "ls":
				return
			}
		}
		a.refuseOption(tool, "%s changes its settings (script-shell, node-options …) for every later command", sub)
	case "pkg":
		if len(ops) > 0 && ops[0].Literal && ops[0].Text != "get" {
			a.write(literalWord("package.json"), false, fr)
		}
	}
}

// npxModel is npx's: its options come before the command it runs, whose
// arguments follow; -p installs and runs a package of its choosing and
// -c runs a command string.
func npxModel() *model {
	return &model{handler: func(a *analyzer, name string, words []word, fr frame) []word {
		for _, w := range words[1:] {
			if !w.Literal {
				if w.mayBeOption() {
					a.refuseOption("npx", "is given %s, which is computed when the line runs and may be an option such as -c", quote(w.Text))
				}
				return nil
			}
			t := w.Text
			if !strings.HasPrefix(t, "-") {
				return nil // the command and its own arguments
			}
			switch k, _, _ := strings.Cut(strings.TrimLeft(t, "-"), "="); {
			case t == "--":
				return nil
			case k == "y" || k == "yes" || k == "no" || k == "q" || k == "quiet" || k == "ignore-existing" ||
				k == "prefer-offline" || k == "offline" || k == "registry" || k == "workspace" || k == "workspaces" ||
				k == "include-workspace-root" || k == "ws" || k == "w" || k == "silent" || k == "loglevel":
			case strings.HasPrefix(t, "--") && npmRefused[k] != "" || !strings.HasPrefix(t, "--") && strings.ContainsAny(k, "cpC"):
				a.refuseOption("npx", "%s names a program or a package it runs, or a settings file it loads", quote(t))
				return nil
			default:
				a.fail(CodeUnknownOption, "npx is given the option %s, which the gate does not model", quote(t))
				return nil
			}
		}
		return nil
	}}
}

// cargoCommon are the options every cargo command takes.
const cargoCommon = "verbose quiet color= frozen locked offline help manifest-path= lockfile-path= jobs= keep-going " +
	"release profile= features= all-features no-default-features target= target-dir= artifact-dir= out-dir= " +
	"package= workspace all exclude= lib bin= bins example= examples test= tests bench= benches all-targets " +
	"message-format= timings? unit-graph build-plan future-incompat-report ignore-rust-version no-run " +
	"no-fail-fast doc open no-deps document-private-items dry-run allow-dirty allow-staged allow-no-vcs " +
	"broken-code edition edition-idioms fix vcs= name= registry= index= token= no-verify list path= git= " +
	"branch= tag= rev= root= force no-track debug precise= recursive breaking aggressive depth= edges= invert= " +
	"prefix= charset= format= no-dedupe duplicates format-version= filter-platform= dev build optional rename= " +
	"no-optional default-features no-default-features crate-type= print= examples all-features respect-source-config " +
	"versioned-dirs no-delete sync= config-only no-metadata quiet dry-run check check-only emit= release"

// cargoSubcommands are cargo's commands and aliases the model knows.
var cargoSubcommands = map[string]string{
	"build": "", "b": "", "check": "", "c": "", "clean": "", "doc": "", "d": "", "new": "", "init": "", "add": "",
	"remove": "", "rm": "", "run": "", "r": "", "test": "", "t": "", "bench": "", "update": "", "search": "",
	"publish": "", "tree": "", "metadata": "", "fetch": "", "vendor": "", "package": "", "pkgid": "",
	"locate-project": "", "version": "", "help": "", "generate-lockfile": "", "verify-project": "",
	"read-manifest": "", "report": "", "fmt": "", "clippy": "", "fix": "", "owner": "", "yank": "", "info": "",
	"install":   "write:installs binaries into ~/.cargo/bin, a directory on PATH",
	"uninstall": "write:removes binaries from ~/.cargo/bin, a directory on PATH",
	"login":     "write:writes a registry token into cargo's credentials", "logout": "write:removes a registry token from cargo's credentials",
	"rustc": "refuse:passes flags to rustc, which can name a linker", "rustdoc": "refuse:passes flags to rustdoc, which can name a linker",
	"config": "refuse:is unstable and reads configuration the gate does not model",
}

var cargoSpec = func() *optSpec {
	long := strings.Fields(cargoCommon)
	return spec("vqhrj:p:F:e:Z:C:di:f:V", long...).permuting()
}()

// cargoModel: --config sets any configuration key (build.rustc-wrapper,
// target runners), -Z enables unstable options and -C is unstable: all
// refused; --target-dir writes, --manifest-path reads; install writes
// outside the workspace; after --, cargo test passes libtest's options,
// where --logfile writes.
func cargoModel() *model {
	return &model{handler: func(a *analyzer, name string, words []word, fr frame) []word {
		args := words[1:]
		if len(args) > 0 && args[0].Literal && strings.HasPrefix(args[0].Text, "+") {
			args = args[1:] // cargo +nightly: the toolchain rustup runs
		}
		var rest []word
		for i, w := range args {
			if w.Literal && w.Text == "--" {
				args, rest = args[:i], args[i+1:]
				break
			}
		}
		for _, w := range args {
			if w.Literal && (w.Text == "--config" || strings.HasPrefix(w.Text, "--config=")) {
				a.refuseOption("cargo", "--config sets configuration keys, which can name a compiler wrapper or a runner")
				return nil
			}
		}
		p := cargoSpec.parseStrict(append([]word{words[0]}, args...), false, nil)
		switch {
		case p.unknown != "":
			a.fail(CodeUnknownOption, "cargo is given the option %s, which the gate does not model", quote(p.unknown))
			return nil
		case p.computed != "":
			a.refuseOption("cargo", "is given %s, which is computed when the line runs and may be --config", quote(p.computed))
			return nil
		case p.has("-Z"):
			a.refuseOption("cargo", "-Z enables unstable options that can run other programs")
			return nil
		case p.has("-C"):
			a.refuseOption("cargo", "-C is unstable and runs cargo in another directory")
			return nil
		}
		sub := ""
		if len(p.operands) > 0 && p.operands[0].Literal {
			sub = p.operands[0].Text
		}
		kind, ok := cargoSubcommands[sub]
		switch {
		case sub == "" && len(p.operands) > 0:
			a.refuseOption("cargo", "is given the command %s, which is computed when the line runs", quote(p.operands[0].Text))
			return nil
		case sub != "" && !ok:
			a.fail(CodeUnknownOption, "cargo %s is not a command the gate models (an external cargo-%s program runs what it runs)", quote(sub), sub)
			return nil
		case strings.HasPrefix(kind, "refuse:"):
			a.refuseOption("cargo", "%s %s", sub, strings.TrimPrefix(kind, "refuse:"))
			return nil
		case strings.HasPrefix(kind, "write:"):
			a.unknownWrite("cargo "+sub+" "+strings.TrimPrefix(kind, "write:"), fr)
		}
		for _, o := range p.opts {
			switch o.name {
			case "--target-dir", "--artifact-dir", "--out-dir", "--root":
				a.writeTree(o.arg, false, true, fr)
			case "--manifest-path", "--path":
				a.read(o.arg, fr)
			case "--lockfile-path":
				a.write(o.arg, false, fr)
			case "--open":
				a.refuseOption("cargo", "--open opens a web browser")
				return nil
			}
		}
		switch sub {
		case "fmt", "fix", "clippy":
			if sub != "clippy" || p.has("--fix") {
				a.write(literalWord("."), false, fr) // the crate's Rust files
			}
		case "vendor":
			a.writeTree(literalWord("vendor"), false, true, fr)
		case "new", "init":
			if len(p.operands) > 1 {
				a.writeTree(p.operands[1], false, true, fr)
			}
		}
		a.readPlace(literalWord("."), fr)
		if sub == "test" || sub == "t" || sub == "bench" {
			a.libtestArgs(rest, fr)
		}
		return nil
	}}
}

// libtestArgs judges the test harness's options after cargo test --:
// --logfile writes; filters and the rest are no files.
func (a *analyzer) libtestArgs(args []word, fr frame) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Literal {
			if w.mayBeOption() {
				a.unknownWrite("cargo test -- is given "+quote(w.Text)+", which may be --logfile", fr)
			}
			continue
		}
		k, v, hasValue := strings.Cut(w.Text, "=")
		if k == "--logfile" {
			if !hasValue && i+1 < len(args) {
				i++
				a.write(args[i], false, fr)
			} else if hasValue {
				a.write(literalWord(v), false, fr)
			}
		}
	}
}

// pytestValues are pytest's options (pytest --help, pytest 8, with
// pytest-cov, pytest-xdist, pytest-timeout, pytest-asyncio and
// pytest-randomly) by what their value is.
var pytestSpec = spec("k:m:xc:p:W:qvsrlo:n:f:VhE", "keyword=", "markers", "exitfirst", "fixtures", "funcargs",
	"fixtures-per-test", "pdb", "pdbcls=", "trace", "capture=", "runxfail", "last-failed", "lf", "failed-first", "ff",
	"new-first", "nf", "cache-show?", "cache-clear", "last-failed-no-failures=", "lfnf=", "stepwise", "sw",
	"stepwise-skip", "sw-skip", "durations=", "durations-min=", "verbose", "no-header", "no-summary", "quiet",
	"verbosity=", "disable-warnings", "disable-pytest-warnings", "showlocals", "no-showlocals", "tb=",
	"xfail-tb", "show-capture=", "full-trace", "color=", "code-highlight=", "pythonwarnings=", "maxfail=",
	"strict-config", "strict-markers", "strict", "continue-on-collection-errors", "rootdir=", "collect-only",
	"co", "pyargs", "ignore=", "ignore-glob=", "deselect=", "confcutdir=", "noconftest", "keep-duplicates",
	"collect-in-virtualenv", "import-mode=", "doctest-modules", "doctest-report=", "doctest-glob=",
	"doctest-ignore-import-errors", "doctest-continue-on-failure", "basetemp=", "version", "help", "debug?",
	"override-ini=", "assert=", "setup-only", "setup-show", "setup-plan", "junit-xml=", "junitxml=",
	"junit-prefix=", "log-level=", "log-format=", "log-date-format=", "log-cli-level=", "log-cli-format=",
	"log-cli-date-format=", "log-file=", "log-file-mode=", "log-file-level=", "log-file-format=",
	"log-file-date-format=", "log-auto-indent=", "log-disable=", "config-file=", "cov?", "cov-report=",
	"cov-config=", "no-cov-on-fail", "no-cov", "cov-fail-under=", "cov-append", "cov-branch", "cov-context=",
	"numprocesses=", "maxprocesses=", "max-worker-restart=", "dist=", "loadgroup", "tx=", "rsyncdir=",
	"rsyncignore=", "looponfail", "timeout=", "timeout-method=", "timeout-func-only", "asyncio-mode=",
	"randomly-seed=", "randomly-dont-reset-seed", "reruns=", "reruns-delay=", "only-rerun=", "ds=",
	"reuse-db", "create-db", "migrations", "nomigrations", "runslow", "benchmark-skip", "benchmark-only",
	"benchmark-disable").permuting()

// pytestModel: -p loads a plugin (-p no:NAME, which disables one, is
// fine), -c and --config-file load settings, -o overrides them, --pdbcls
// imports a class, --pyargs imports modules by name, --tx starts Python
// elsewhere: refused. --basetemp (which pytest empties), --junitxml,
// --log-file and --cov-report FORMAT:PATH write; --rootdir and
// --confcutdir read (conftest.py files run). It collects the tests of the
// directory it runs in unless given paths.
func pytestModel() *model {
	m := &model{opts: pytestSpec,
		values: merge(on(writesFile, "--junitxml", "--junit-xml", "--log-file"), on(readsFile, "--rootdir",
			"--confcutdir", "--cov-config")),
		refuse: map[string]string{"-c": "loads settings (addopts, plugins) from another file", "--config-file": "loads settings (addopts, plugins) from another file",
			"-o": "overrides settings such as addopts, which can load plugins", "--override-ini": "overrides settings such as addopts, which can load plugins",
			"--pdbcls": "imports a class the gate does not see", "--pyargs": "imports the modules it names from anywhere on the path",
			"--tx": "starts Python interpreters of its choosing", "--rsyncdir": "copies files to other interpreters"},
		bare:     bareList,
		operands: readsFile,
	}
	m.custom = func(a *analyzer, name string, p *parsedArgs, fr frame) {
		for _, o := range p.opts {
			switch o.name {
			case "-p":
				if !o.arg.Literal || !strings.HasPrefix(o.arg.Text, "no:") {
					a.refuseOption("pytest", "-p %s loads a plugin module the gate cannot see", quote(o.arg.Text))
					return
				}
			case "--basetemp":
				a.writeTree(o.arg, false, true, fr)
			case "--debug":
				if o.hasArg {
					a.write(o.arg, false, fr)
				} else {
					a.write(literalWord("pytestdebug.log"), false, fr)
				}
			case "--cov-report":
				if _, f, ok := strings.Cut(o.arg.Text, ":"); ok && f != "" && !strings.HasPrefix(f, "skip-covered") {
					a.writeTree(literalWord(f), false, true, fr)
				} else if !o.arg.Literal {
					a.unknownWrite("pytest --cov-report "+quote(o.arg.Text), fr)
				}
			}
		}
	}
	return m
}
